"""Session private keys at rest: the key holder's vault.

K keeps each session's private key (the scheme's private key bytes) only sealed
with a key derived from the operator's passphrase; docs/protocol.md ("Session")
says the key is destroyed when the session ends.
"""
from __future__ import annotations

from common.aead import Aead, AuthenticationFailed, passphrase_key


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
        self._aead = Aead(passphrase_key(passphrase, salt))

    def wrap(self, session_id: str, private: bytes) -> bytes:
        """Seal a session's private key bytes, bound to its session id."""
        return self._aead.seal(private, session_id.encode())

    def unwrap(self, session_id: str, blob: bytes) -> bytes:
        """The private key bytes sealed by :meth:`wrap` for this session
        (:class:`common.aead.AuthenticationFailed` on any other blob)."""
        return self._aead.open(blob, session_id.encode(), f"the private key of session {session_id}")

    def check_value(self) -> bytes:
        return self._aead.seal(self.CHECK, b"check")

    def verify(self, check: bytes) -> bool:
        try:
            return self._aead.open(check, b"check") == self.CHECK
        except AuthenticationFailed:
            return False
