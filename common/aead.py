"""The one AES-256-GCM sealing recipe: keys from a passphrase, seal and open with associated data.

AES-GCM (NIST SP 800-38D) through pyca/cryptography's ``AESGCM``.  A sealed blob is
``nonce || ciphertext || tag`` with a fresh random 96-bit nonce (SP 800-38D, section 8.2.2: random
nonces are safe for up to 2^32 messages under one key); a caller that numbers its records instead
passes the nonce itself (:meth:`Aead.encrypt_at`).  The associated data bind a blob to its place
(a session id, a file header): moved elsewhere it fails the tag.  A failed open raises
:class:`AuthenticationFailed` with one line saying what failed; callers turn it into their own error.

Passphrase keys use scrypt (Percival & Josefsson, RFC 7914) with n = 2^15, r = 8, p = 1 and a
random salt the caller stores next to the sealed data.
"""
from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
SALT_BYTES = 16
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2 ** 15, 8, 1


class AuthenticationFailed(ValueError):
    """A sealed blob did not open: wrong key, wrong associated data, or altered bytes."""


def passphrase_key(passphrase: bytes, salt: bytes) -> bytes:
    """The 256-bit key of ``passphrase`` under ``salt`` (scrypt, n = 2^15, r = 8, p = 1)."""
    return Scrypt(salt=salt, length=KEY_BYTES, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P).derive(passphrase)


class Aead:
    """AES-256-GCM under one key: :meth:`seal`/:meth:`open` with a random nonce carried in front,
    :meth:`encrypt_at`/:meth:`decrypt_at` with a nonce the caller derives (a record's index)."""

    def __init__(self, key: bytes) -> None:
        self._aesgcm = AESGCM(key)

    def seal(self, plain: bytes, associated: bytes | None = None, nonce: bytes | None = None) -> bytes:
        """``nonce || ciphertext || tag`` of ``plain`` bound to ``associated`` (a fresh random nonce
        unless the caller drew one, e.g. to put it in a header that is itself associated data)."""
        nonce = os.urandom(NONCE_BYTES) if nonce is None else nonce
        return nonce + self._aesgcm.encrypt(nonce, plain, associated)

    def open(self, blob: bytes, associated: bytes | None = None, what: str = "a sealed blob") -> bytes:
        """The plaintext of a :meth:`seal` blob; :class:`AuthenticationFailed` naming ``what`` otherwise."""
        if len(blob) < NONCE_BYTES + TAG_BYTES:
            raise AuthenticationFailed(f"{what} is too short to be sealed")
        return self.decrypt_at(blob[:NONCE_BYTES], blob[NONCE_BYTES:], associated, what)

    def encrypt_at(self, nonce: bytes, plain: bytes, associated: bytes | None = None) -> bytes:
        """``ciphertext || tag`` under a nonce the caller never reuses with this key (not carried)."""
        return self._aesgcm.encrypt(nonce, plain, associated)

    def decrypt_at(self, nonce: bytes, sealed: bytes, associated: bytes | None = None,
                   what: str = "a sealed blob") -> bytes:
        """The plaintext of :meth:`encrypt_at`'s output; :class:`AuthenticationFailed` naming ``what``."""
        try:
            return self._aesgcm.decrypt(nonce, sealed, associated)
        except InvalidTag:
            raise AuthenticationFailed(f"{what} failed authentication (wrong key, or altered)") from None
