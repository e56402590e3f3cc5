"""Keyed encodings of normalized values (docs/protocol.md, "Encoding identifiers").

For field ``f`` and normalized value ``v`` the encoding is
``X = PRF_s("enc" || f || 0x00 || v)``: HKDF-Expand (SHA-256) keyed with the
256-bit session secret ``s``, expanded to the comparison scheme's encoding
length (:meth:`common.schemes.Scheme.encoding_bytes`; Paillier: ``|n| - 64``
bits, so ``X < n`` read as an integer).  Cuckoo bin positions are ``PRF_s("bin" || i || X) mod B``
(HMAC-SHA256, 128 bits reduced mod the table size: bias below 2^-100); keyed
blocking buckets are ``PRF_s("block" || pass || key) mod B`` (64 bits).  Lookup
buckets are a strongly universal hash keyed by ``s`` of a 64-bit digest of the
value (:func:`lookup_buckets`), so that a holder computes the buckets of all its
rows for a new session in one vectorized pass.  Because every bucket and
position is keyed with ``s``, which the key holder never sees, K cannot
dictionary-attack the values it zero-tests nor the positions it sees.
"""
from __future__ import annotations

import hashlib
import os
from typing import Sequence

import numpy as np
from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

SECRET_BYTES = 32


def new_session_secret() -> bytes:
    """A fresh uniform 256-bit session secret ``s`` (the querier draws one per query, blocking plan or
    lookup session; only the querier and the holder ever hold it)."""
    return os.urandom(SECRET_BYTES)


def encoding_bytes(modulus_bits: int) -> int:
    """Length of an encoding in bytes: ``|n| - 64`` bits."""
    return (modulus_bits - 64) // 8


def encode_to(secret: bytes, field: str, value: str, length: int) -> bytes:
    """``PRF_s("enc" || f || 0x00 || v)``, ``length`` bytes.

    The field name may not contain NUL, so that (f, v) -> input is injective.
    """
    if "\x00" in field:
        raise ValueError("a field name may not contain NUL")
    info = b"enc" + field.encode() + b"\x00" + value.encode("utf-8")
    return HKDFExpand(hashes.SHA256(), length, info).derive(secret)


def encode(secret: bytes, field: str, value: str, modulus_bits: int) -> bytes:
    """The encoding for a Paillier modulus of ``modulus_bits`` bits (big-endian, read as an integer < n)."""
    return encode_to(secret, field, value, encoding_bytes(modulus_bits))


def _prf_mod(secret: bytes, message: bytes, modulus: int) -> int:
    mac = hmac.HMAC(secret, hashes.SHA256())
    mac.update(message)
    return int.from_bytes(mac.finalize()[:16], "big") % modulus


def bin_positions(secret: bytes, encoding: bytes, bins: int, hash_functions: int) -> list[int]:
    """The ``h`` cuckoo positions ``PRF_s("bin" || i || X) mod B``, i = 0..h-1."""
    return [_prf_mod(secret, b"bin" + bytes([i]) + encoding, bins) for i in range(hash_functions)]


MAX_LOOKUP_BUCKETS = 1 << 32
_LOW_WORD = np.uint64(0xFFFFFFFF)
_WORD = np.uint64(32)
_BUCKET_PIECE = 1 << 16           # digests hashed per numpy pass in :func:`lookup_buckets`


def lookup_words(field: str, values: Sequence[str]) -> np.ndarray:
    """The unkeyed digest ``D = SHA-256("bucket" || f || 0x00 || v)``, first 64 bits, per value, as its
    low and high 32-bit words (a ``(2, n)`` uint64 array).

    Computed once per table (the one per-value hash of a lookup); it never leaves the party: what
    travels is the keyed bucket of :func:`lookup_buckets`.
    """
    if "\x00" in field:
        raise ValueError("a field name may not contain NUL")
    prefix = b"bucket" + field.encode() + b"\x00"
    sha256 = hashlib.sha256
    digests = np.frombuffer(b"".join([sha256(prefix + v.encode("utf-8")).digest()[:8] for v in values]),
                            dtype=">u8").astype(np.uint64)
    return np.stack((digests & _LOW_WORD, digests >> _WORD))


def lookup_buckets(secret: bytes, words: np.ndarray, buckets: int) -> np.ndarray:
    """The lookup bucket of each digest (:func:`lookup_words`) in this session: ``h(D) · B_L >> 32``.

    ``h(D) = ((a0 · D_lo + a1 · D_hi + c) mod 2^64) >> 32`` is Thorup's vector multiply-shift
    (Thorup, "High Speed Hashing for Integers and Strings", 2015, §3: strongly universal for
    32-bit words into 32 bits with 64-bit multipliers), keyed by ``(a0, a1, c) = PRF_s("bucket")``.
    Strong universality gives a person's bucket the same expected company as a random function
    (docs/protocol.md, "Lookup"), and the whole table hashes in a few numpy passes.  The
    reduction to ``B_L < 2^32`` buckets is biased by at most ``B_L / 2^32`` (relative).
    """
    if not 1 <= buckets <= MAX_LOOKUP_BUCKETS:
        raise ValueError(f"lookup buckets must be from 1 to {MAX_LOOKUP_BUCKETS}")
    key = HKDFExpand(hashes.SHA256(), 24, b"bucket").derive(secret)
    a0, a1, c = (np.uint64(int.from_bytes(key[i:i + 8], "big")) for i in (0, 8, 16))
    count = words.shape[1]
    out = np.empty(count, dtype=np.uint32)
    # In cache-sized pieces through two reused buffers: whole-table temporaries (three 8-byte arrays
    # per row, fresh pages each session) cost a holder twice the arithmetic over a million rows.
    size = min(count, _BUCKET_PIECE)
    hashed, scratch = np.empty(size, dtype=np.uint64), np.empty(size, dtype=np.uint64)
    scale = np.uint64(buckets)
    for start in range(0, count, _BUCKET_PIECE):
        end = min(start + _BUCKET_PIECE, count)
        h, s = hashed[:end - start], scratch[:end - start]
        np.multiply(words[0, start:end], a0, out=h)      # uint64 arithmetic wraps: mod 2^64
        np.multiply(words[1, start:end], a1, out=s)
        h += s
        h += c
        h >>= _WORD
        h *= scale
        h >>= _WORD
        out[start:end] = h
    return out


def lookup_hashes(secret: bytes, words: np.ndarray) -> np.ndarray:
    """``h(D)`` itself, the 32-bit keyed hash of each digest that :func:`lookup_buckets` scales to its
    bucket count (a querier's own, to tell where its buckets under several counts meet)."""
    return lookup_buckets(secret, words, MAX_LOOKUP_BUCKETS)


def shared_share(hashes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per hash ``h``, the share of the 32-bit hash range whose bucket is ``h``'s under every count of
    ``counts`` at once: what a holder that saw ``h``'s bucket under each count knows of ``h``.

    The bucket ``b = h · B >> 32`` is the hashes ``x`` in ``[⌈b · 2^32 / B⌉, ⌈(b + 1) · 2^32 / B⌉)``;
    the share is the length of the intersection of those intervals over the counts, over ``2^32``
    (``1 / B`` for one count; for counts that are powers of two, ``1 / max``).  ``hashes``: uint32,
    one per identifier; ``counts``: one row of counts per identifier, 0 where it has none (a row of
    zeros: the whole range, share 1)."""
    h = np.asarray(hashes, dtype=np.uint64)[:, None]
    b_count = np.asarray(counts, dtype=np.uint64).reshape(len(h), -1)
    used = b_count > 0
    scale = np.where(used, b_count, np.uint64(1))
    bucket = (h * scale) >> np.uint64(32)
    top = np.uint64(MAX_LOOKUP_BUCKETS)
    low = ((bucket << np.uint64(32)) + scale - np.uint64(1)) // scale
    # (b + 1) · 2^32 overflows 64 bits only for b + 1 = B = 2^32, whose interval ends at 2^32
    finest = scale == top
    following = np.where(finest, np.uint64(0), bucket + np.uint64(1))
    high = np.where(finest, bucket + np.uint64(1),
                    ((following << np.uint64(32)) + scale - np.uint64(1)) // scale)
    low = np.where(used, low, np.uint64(0)).max(axis=1, initial=0)
    high = np.where(used, np.minimum(high, top), top).min(axis=1, initial=MAX_LOOKUP_BUCKETS)
    return (high.astype(np.float64) - low.astype(np.float64)) / float(MAX_LOOKUP_BUCKETS)


def block_prf(secret: bytes, blocking_pass: int, key: str) -> tuple[int, int]:
    """``PRF_s("block" || pass || key)`` as two 64-bit integers: the two bins a blocking key may use
    (docs/protocol.md, "Blocking passes as padded bins").

    64 bits each keep the bin arithmetic vectorized (numpy ``uint64``); the bias mod ``B < 2^32`` is
    below 2^-32, irrelevant for placement.
    """
    mac = hmac.HMAC(secret, hashes.SHA256())
    mac.update(b"block" + blocking_pass.to_bytes(2, "big") + key.encode("utf-8"))
    digest = mac.finalize()
    return int.from_bytes(digest[:8], "big"), int.from_bytes(digest[8:16], "big")
