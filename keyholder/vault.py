"""Session private keys at rest: the key holder's vault.

K keeps each session's private key (the scheme's private key bytes) only sealed
with a key derived from the operator's passphrase; docs/protocol.md ("Session")
says the key is destroyed when the session ends.
"""
from __future__ import annotations

import os

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt


class KeyVault:
    """Encrypts session private keys at rest with a key derived from a passphrase.

    scrypt (n=2^15, r=8, p=1) turns the passphrase into an AES-256-GCM key; each
    private key is sealed with the session id as associated data, so a wrapped
    key cannot be moved to another session row.
    """

    CHECK = b"keyholder-vault-check-v1"

    def __init__(self, passphrase: bytes, salt: bytes) -> None:
        if not passphrase:
            raise ValueError("empty passphrase")
        key = Scrypt(salt=salt, length=32, n=2 ** 15, r=8, p=1).derive(passphrase)
        self._aead = AESGCM(key)

    def wrap(self, session_id: str, private: bytes) -> bytes:
        """Seal a session's private key bytes, bound to its session id."""
        nonce = os.urandom(12)
        return nonce + self._aead.encrypt(nonce, private, session_id.encode())

    def unwrap(self, session_id: str, blob: bytes) -> bytes:
        """The private key bytes sealed by :meth:`wrap` for this session (raises on any other blob)."""
        return self._aead.decrypt(blob[:12], blob[12:], session_id.encode())

    def check_value(self) -> bytes:
        nonce = os.urandom(12)
        return nonce + self._aead.encrypt(nonce, self.CHECK, b"check")

    def verify(self, check: bytes) -> bool:
        try:
            return self._aead.decrypt(check[:12], check[12:], b"check") == self.CHECK
        except Exception:
            return False
