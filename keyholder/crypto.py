"""The key holder's cryptography: session key pairs, the half-CRT zero test,
ciphertext validation, and encryption of private keys at rest.

docs/protocol.md ("The blinded comparison"): K decides whether a blinded
comparison ``c`` encrypts zero without decrypting it:  ``c`` encrypts 0 iff
``c^(p-1) = 1 (mod p^2)`` and ``c^(q-1) = 1 (mod q^2)``.  The p-test runs first
and a failure stops there, so a non-match costs one half-size exponentiation.
K offers no decrypt call at all.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import gmpy2
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from phe import paillier


def _release_gil() -> None:
    # gmpy2 contexts are per thread: let this worker's big-number work run
    # outside the GIL so the pool really uses every core.
    gmpy2.get_context().allow_release_gil = True


_POOL_LOCK = threading.Lock()
_POOL: ThreadPoolExecutor | None = None


def worker_pool() -> ThreadPoolExecutor:
    """One pool of GIL-free gmpy2 workers shared by all sessions (a thread per core)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=os.cpu_count() or 2,
                                       thread_name_prefix="zero-test",
                                       initializer=_release_gil)
        return _POOL


@dataclass(frozen=True)
class SessionKey:
    """A session's Paillier key pair, reduced to what K needs: n, p, q."""

    n: int
    p: int
    q: int

    @property
    def bits(self) -> int:
        return self.n.bit_length()

    def modulus_bytes(self) -> bytes:
        return self.n.to_bytes((self.n.bit_length() + 7) // 8, "big")


def generate_session_key(bits: int) -> SessionKey:
    """A fresh Paillier key pair for one session (``phe`` with gmpy2)."""
    public, private = paillier.generate_paillier_keypair(n_length=bits)
    return SessionKey(n=int(public.n), p=int(private.p), q=int(private.q))


class CiphertextError(ValueError):
    """A submitted value is not a ciphertext of this session (outside Z*_{n^2})."""


class ZeroTester:
    """Half-CRT zero test for one session key (docs/protocol.md, "The blinded comparison")."""

    def __init__(self, key: SessionKey) -> None:
        self.n = gmpy2.mpz(key.n)
        self.n_square = self.n * self.n
        self.width = 2 * ((key.n.bit_length() + 7) // 8)
        self._p = gmpy2.mpz(key.p)
        self._q = gmpy2.mpz(key.q)
        self._p_square = self._p * self._p
        self._q_square = self._q * self._q
        self._p_minus_1 = self._p - 1
        self._q_minus_1 = self._q - 1

    def parse(self, blob: bytes) -> list:
        """Split concatenated fixed-width ciphertexts and check each is in Z*_{n^2}."""
        width = self.width
        if len(blob) % width:
            raise CiphertextError(f"ciphertext bytes ({len(blob)}) are not a multiple of {width}")
        values = [gmpy2.mpz.from_bytes(blob[i:i + width], "big") for i in range(0, len(blob), width)]
        for index, value in enumerate(values):
            if not 0 < value < self.n_square or gmpy2.gcd(value, self.n) != 1:
                raise CiphertextError(f"ciphertext {index} is outside Z*_(n^2)")
        return values

    def is_zero(self, c) -> bool:
        """True iff ``c`` encrypts 0; the p-test first, stopping on failure."""
        if gmpy2.powmod(c, self._p_minus_1, self._p_square) != 1:
            return False
        return gmpy2.powmod(c, self._q_minus_1, self._q_square) == 1

    def test_many(self, values: list) -> list[bool]:
        """Zero-test a batch on every core (gmpy2 releases the GIL in the pool)."""
        if len(values) < 64:
            return [self.is_zero(c) for c in values]
        pool = worker_pool()
        step = max(16, len(values) // (4 * (os.cpu_count() or 2)))
        chunks = [values[i:i + step] for i in range(0, len(values), step)]
        results: list[bool] = []
        for part in pool.map(lambda chunk: [self.is_zero(c) for c in chunk], chunks):
            results.extend(part)
        return results


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

    def wrap(self, session_id: str, key: SessionKey) -> bytes:
        width = (key.bits + 15) // 16 + 1
        plain = key.p.to_bytes(width, "big") + key.q.to_bytes(width, "big")
        nonce = os.urandom(12)
        return nonce + self._aead.encrypt(nonce, plain, session_id.encode())

    def unwrap(self, session_id: str, n: int, blob: bytes) -> SessionKey:
        plain = self._aead.decrypt(blob[:12], blob[12:], session_id.encode())
        half = len(plain) // 2
        p, q = int.from_bytes(plain[:half], "big"), int.from_bytes(plain[half:], "big")
        if p * q != n:
            raise ValueError("unwrapped key does not match the session modulus")
        return SessionKey(n=n, p=p, q=q)

    def check_value(self) -> bytes:
        nonce = os.urandom(12)
        return nonce + self._aead.encrypt(nonce, self.CHECK, b"check")

    def verify(self, check: bytes) -> bool:
        try:
            return self._aead.decrypt(check[:12], check[12:], b"check") == self.CHECK
        except Exception:
            return False
