"""The one AES-256-GCM recipe (common.aead): round trips, binding to associated data, one-line refusals."""
from __future__ import annotations

import os

import pytest

from common.aead import NONCE_BYTES, TAG_BYTES, Aead, AuthenticationFailed, passphrase_key


def test_seal_round_trips_with_a_fresh_nonce_each_time():
    aead = Aead(os.urandom(32))
    first, second = aead.seal(b"payload", b"session-a"), aead.seal(b"payload", b"session-a")
    assert first[:NONCE_BYTES] != second[:NONCE_BYTES] and len(first) == NONCE_BYTES + 7 + TAG_BYTES
    assert aead.open(first, b"session-a") == aead.open(second, b"session-a") == b"payload"


@pytest.mark.parametrize("damage", ["associated", "key", "bit", "short"])
def test_open_refuses_with_one_line(damage):
    key = os.urandom(32)
    blob = Aead(key).seal(b"payload", b"session-a")
    aead, associated = Aead(key), b"session-a"
    if damage == "associated":
        associated = b"session-b"
    elif damage == "key":
        aead = Aead(os.urandom(32))
    elif damage == "bit":
        blob = blob[:-1] + bytes([blob[-1] ^ 1])
    else:
        blob = blob[:NONCE_BYTES + TAG_BYTES - 1]
    with pytest.raises(AuthenticationFailed) as refused:
        aead.open(blob, associated, what="the test blob")
    assert str(refused.value).startswith("the test blob") and "\n" not in str(refused.value)


def test_caller_nonces_are_not_carried_and_must_match():
    aead = Aead(os.urandom(32))
    sealed = aead.encrypt_at(bytes(12), b"record", b"ctx")
    assert len(sealed) == 6 + TAG_BYTES
    assert aead.decrypt_at(bytes(12), sealed, b"ctx") == b"record"
    with pytest.raises(AuthenticationFailed):
        aead.decrypt_at((1).to_bytes(12, "big"), sealed, b"ctx")


def test_passphrase_key_depends_on_passphrase_and_salt():
    salt = os.urandom(16)
    key = passphrase_key(b"correct horse", salt)
    assert len(key) == 32 and key == passphrase_key(b"correct horse", salt)
    assert key != passphrase_key(b"correct horse", os.urandom(16)) != passphrase_key(b"wrong", salt)
