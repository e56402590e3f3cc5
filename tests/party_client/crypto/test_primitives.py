"""The parties' own primitives: normalization, keyed encodings, the padded cuckoo table, sealing, and
the encryption worker process (the scheme's arithmetic is tested in tests/common/schemes/, the vault in
tests/keyholder/, the bucket risk in tests/deid_core/risk/)."""
from __future__ import annotations

import math
import os
import random

import numpy as np
import pandas as pd
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st
from phe import paillier

from common.schemes import get_scheme
from common.schemes.paillier import PublicKey
from deid_core.risk.buckets import hashed_bucket_risk
from party_client.crypto.cuckoo import EMPTY, CuckooFailure, CuckooParams, bin_count, padded_size, place
from party_client.crypto.encoding import (bin_positions, encode, encoding_bytes, lookup_buckets, lookup_hashes,
                                          lookup_words, shared_share)
from party_client.matching.normalize import normalize_identifiers, normalize_names
from party_client.crypto.seal import SealError, SessionCipher, open_records, seal_records


@pytest.fixture(scope="module")
def keypair():
    public, private = paillier.generate_paillier_keypair(n_length=1024)
    return public, private


# -- normalization (docs/protocol.md, "Encoding identifiers") ---------------------------------

def test_identifier_normalization_vectors():
    values = pd.Series([" 1234-567-890 ", "AB 12_cd", "１２３", "", None, "--", "ÉCOLE-9"])
    assert normalize_identifiers(values).tolist() == ["1234567890", "ab12cd", "123", "", "", "", "école9"]


def test_name_normalization_vectors():
    values = pd.Series(["O'Brien-Zoë", "  Müller ", "STRASSE", "Ångström", "José María", "123", None])
    assert normalize_names(values).tolist() == ["obrienzoe", "muller", "strasse", "angstrom", "josemaria", "", ""]


# -- keyed encodings -----------------------------------------------------------

def test_encoding_is_keyed_deterministic_and_below_n(keypair):
    public, _ = keypair
    s1, s2 = os.urandom(32), os.urandom(32)
    x = encode(s1, "id", "1234567890", public.n.bit_length())
    assert len(x) == encoding_bytes(public.n.bit_length())
    assert int.from_bytes(x, "big") < public.n
    assert x == encode(s1, "id", "1234567890", public.n.bit_length())
    assert x != encode(s2, "id", "1234567890", public.n.bit_length())       # keyed
    assert x != encode(s1, "hcn", "1234567890", public.n.bit_length())      # field-separated
    with pytest.raises(ValueError):                                     # keeps (f, v) -> input injective
        encode(s1, "a\x00b", "c", 1024)
    positions = bin_positions(s1, x, 1000, 2)
    assert len(positions) == 2 and all(0 <= p < 1000 for p in positions)
    assert positions == bin_positions(s1, x, 1000, 2)
    assert bin_positions(s2, x, 1000, 2) != positions
    words = lookup_words("id", ["1234567890", "1234567891"])
    assert (lookup_buckets(s1, words, 10 ** 9) == lookup_buckets(s1, words, 10 ** 9)).all()     # deterministic
    assert (lookup_buckets(s2, words, 10 ** 9) != lookup_buckets(s1, words, 10 ** 9)).all()     # keyed
    assert (lookup_words("hcn", ["1234567890"])[:, 0] != words[:, 0]).any()                   # field-separated


COUNTS = st.sampled_from([1, 2, 3, 4, 7, 18, 1000, 1414, 2 ** 31, 2 ** 32 - 1, 2 ** 32])


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=2 ** 32 - 1), st.lists(COUNTS, min_size=0, max_size=4))
def test_the_share_of_the_hash_range_buckets_meet_in_is_their_intervals_intersection(h, counts):
    """A bucket ``h · B >> 32`` is an interval of hashes; under several counts the holder knows their
    intersection (docs/protocol.md, "Lookup"), computed here with Python's integers."""
    low, high = 0, 2 ** 32
    for count in counts:
        bucket = (h * count) >> 32
        low, high = max(low, -(-(bucket << 32) // count)), min(high, -(-((bucket + 1) << 32) // count))
    assert low <= h < high
    grid = np.array([counts + [0] * (4 - len(counts))], dtype=np.uint64)
    assert shared_share(np.array([h], dtype=np.uint32), grid)[0] == (high - low) / 2 ** 32


def test_a_bucket_is_its_hash_scaled_to_the_count():
    words = lookup_words("id", [str(i) for i in range(500)])
    secret = os.urandom(32)
    hashes = lookup_hashes(secret, words).astype(np.uint64)
    for count in (1, 18, 1000, 2 ** 20):
        assert (lookup_buckets(secret, words, count) == (hashes * np.uint64(count)) >> np.uint64(32)).all()


# -- cuckoo table --------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=0, max_value=3000), st.integers(min_value=0, max_value=2 ** 32))
def test_cuckoo_places_every_key_in_one_of_its_bins(count, seed):
    rng = random.Random(seed)
    params = CuckooParams()
    bins = bin_count(count, params)
    positions = [[rng.randrange(bins) for _ in range(params.hash_functions)] for _ in range(count)]
    try:
        table, stash = place(positions, bins, stash=2)
    except CuckooFailure:
        pytest.skip("astronomically unlikely with a stash of 2")
    placed = [k for k in table if k != EMPTY] + stash
    assert sorted(placed) == list(range(count))                       # no lost keys, none twice
    for b, key in enumerate(table):
        if key != EMPTY:
            assert b in positions[key]                                 # each in one of its own bins
    assert len(table) == bins >= 2.4 * padded_size(count) - 1


def test_cuckoo_failure_without_stash_is_reported():
    positions = [[0, 1]] * 3                                           # 3 keys, 2 bins: impossible
    with pytest.raises(CuckooFailure):
        place(positions, 4, stash=0)
    table, stash = place(positions, 4, stash=1)
    assert len(stash) == 1 and sorted(k for k in table if k != EMPTY) + stash != []


def test_padded_sizes_are_public_steps():
    sizes = [padded_size(n) for n in (0, 1, 16, 17, 100, 1000, 10 ** 5)]
    assert sizes[0] == sizes[1] == sizes[2] == 16
    assert all(a <= b for a, b in zip(sizes, sizes[1:]))
    assert padded_size(10 ** 5) < 1.5 * 10 ** 5
    assert padded_size(1000) == padded_size(1001)                      # exact counts are hidden


def test_every_table_slot_holds_a_ciphertext(keypair):
    """All bins filled: empty bins hold E(random), indistinguishable in size and range."""
    from party_client.matching.keys import exact_querier_keys
    from party_client.protocol.engines.interface import QueryOptions
    from party_client.protocol.encryption import encrypt_slots
    from party_client.protocol.engines.key_tables import prepare_tables
    public, private = keypair
    keys = exact_querier_keys(pd.Series([f"{i:09d}" for i in range(50)]), "identifier")
    identity = lambda phase, total: (lambda items: items)  # noqa: E731
    prepared, encodings = prepare_tables(keys, QueryOptions(), encoding_bytes(public.n.bit_length()), identity)
    key = PublicKey(public.n)
    ciphertexts = encrypt_slots(get_scheme("paillier"), key.modulus_bytes(), encodings, identity)
    assert len(ciphertexts) == prepared.header.tables[0].bins == len(prepared.slots)
    assert {len(c) for c in ciphertexts} == {key.width}
    assert sum(slot is not None for slot in prepared.slots) == 50
    for slot, x, blob in zip(prepared.slots, encodings, ciphertexts):
        value = private.raw_decrypt(int.from_bytes(blob, "big"))
        if slot is not None:
            assert value == int.from_bytes(x, "big")


# -- sealing -------------------------------------------------------------------

def _sealed(records, context=b"ctx"):
    sender, recipient = X25519PrivateKey.generate(), X25519PrivateKey.generate()
    stream = b"".join(seal_records(records, sender, recipient.public_key(), context))
    return sender, recipient, stream


def test_seal_round_trip_in_arbitrary_chunks():
    records = [b"header", os.urandom(5000), b"", os.urandom(70000)]
    sender, recipient, stream = _sealed(records)
    chunks = [stream[i:i + 777] for i in range(0, len(stream), 777)]
    assert list(open_records(chunks, recipient, sender.public_key(), b"ctx")) == records
    assert records[1] not in stream


@pytest.mark.parametrize("damage", ["truncate", "flip", "context", "sender", "drop_record"])
def test_seal_detects_damage(damage):
    records = [b"one", b"two", b"three"]
    sender, recipient, stream = _sealed(records)
    context, sender_key = b"ctx", sender.public_key()
    if damage == "truncate":
        stream = stream[:-5]
    elif damage == "flip":
        stream = stream[:50] + bytes([stream[50] ^ 1]) + stream[51:]
    elif damage == "context":
        context = b"other"
    elif damage == "sender":
        sender_key = X25519PrivateKey.generate().public_key()
    elif damage == "drop_record":
        stream = stream[:-(4 + len(b"three") + 16)]
    with pytest.raises(SealError):
        list(open_records([stream], recipient, sender_key, context))


def test_session_cipher_pads_to_one_width():
    cipher = SessionCipher(os.urandom(32), "sid", 1, b"attachment")
    width = SessionCipher.padded_width(100)
    blobs = [cipher.seal(os.urandom(n), width) for n in (0, 10, 100)]
    assert len({len(b) for b in blobs}) == 1
    assert cipher.open(cipher.seal(b"hello", width)) == b"hello"
    other = SessionCipher(os.urandom(32), "sid", 1, b"attachment")
    with pytest.raises(SealError):
        other.open(blobs[0])


def test_keyed_lookup_buckets_carry_the_modelled_risk():
    """The keyed multiply-shift buckets of real identifiers spread people as the risk model assumes
    (a person's expected company in their bucket), for every session secret tried."""
    population, buckets = 200_000, 20_000
    words = lookup_words("id", [str(10 ** 9 + 7919 * i) for i in range(population)])
    for _ in range(3):
        sizes = np.bincount(lookup_buckets(os.urandom(32), words, buckets), minlength=buckets)
        assert len(sizes) == buckets
        per_person = float(np.sum(sizes > 0)) / population        # mean over people of 1/|their bucket|
        assert math.isclose(hashed_bucket_risk(population, buckets), per_person, rel_tol=0.02)


def test_encryption_worker_process_speaks_raw_bytes(keypair):
    """The second encryption process gets fixed-width bytes (no pickle) and returns valid ciphertexts."""
    from party_client.crypto.encrypt_worker import encrypt_in_worker
    public, private = keypair
    key = PublicKey(public.n)
    width = encoding_bytes(key.bits)
    items = [os.urandom(width) if i % 4 else None for i in range(40)]
    ciphertexts = encrypt_in_worker(get_scheme("paillier"), key.modulus_bytes(), items, width).result()
    assert len(ciphertexts) == 40 and {len(c) for c in ciphertexts} == {key.width}
    for x, blob in zip(items, ciphertexts):
        value = private.raw_decrypt(int.from_bytes(blob, "big"))
        if x is not None:
            assert value == int.from_bytes(x, "big")
