"""The key holder's vault: session private keys sealed at rest, bound to their session and passphrase."""
from __future__ import annotations

import os

import pytest
from phe import paillier

from common.schemes.paillier import SessionKey
from keyholder.vault import KeyVault


def test_key_vault_round_trip_and_binding():
    vault = KeyVault(b"correct horse", os.urandom(16))
    public, private = paillier.generate_paillier_keypair(n_length=1024)
    key = SessionKey(public.n, private.p, private.q)
    blob = vault.wrap("session-a", key.private_bytes())
    assert SessionKey.from_bytes(key.modulus_bytes(), vault.unwrap("session-a", blob)) == key
    assert str(private.p).encode() not in blob and private.p.to_bytes(64, "big") not in blob
    with pytest.raises(Exception):
        vault.unwrap("session-b", blob)                                 # bound to its session
    with pytest.raises(Exception):
        KeyVault(b"wrong", os.urandom(16)).unwrap("session-a", blob)
