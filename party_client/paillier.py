"""Paillier on the party side: fast encryption for the querier, blinded
comparisons for the holder.  Raw gmpy2 integers on the hot paths; ``phe``
holds and validates the public key (its object API and float encoding are
not used for identifiers: the encoding leaks an exponent and costs time).

Encryption (querier).  ``E(m) = (1 + m n) * h^a mod n^2`` with the fixed-base
obfuscator of Damgard-Jurik-Nielsen: ``h = x^n mod n^2`` for one random ``x``
per session and a short random exponent ``a`` (256 bits, i.e. 128-bit security
against the kangaroo attack on the short exponent).  A comb table of
``h^(d * 2^(8j))`` turns ``h^a`` into 32 multiplications, about 50x cheaper
than ``r^n mod n^2``.  No library offers fixed-base exponentiation for gmpy2
integers, hence the hand-written table.

Comparison (holder).  docs/protocol.md, "The blinded comparison":
``c = (E(X) * g^(-Y))^r mod n^2 = E(r (X - Y))`` with ``g^(-Y) = 1 - Y n mod n^2``.
``r`` is fresh for every comparison and uniform in [1, n) by default (a
non-match decrypts to a uniform value); with fast blinding it is uniform in
[1, 2^128), about 16x cheaper, safe against K alone but not against a querier
colluding with K.  The book prints ``((E(x) * E(y))^-1)^r``, which tests
x = -y; :func:`book_literal_comparison` keeps it only for the test that
shows why.
"""
from __future__ import annotations

import os
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor

import gmpy2
from phe import paillier

FAST_BLINDING_BITS = 128
OBFUSCATOR_BITS = 256
WINDOW_BITS = 8


class PublicKey:
    """A session's Paillier public key with gmpy2 copies of n and n^2."""

    def __init__(self, modulus: bytes | int) -> None:
        n = int.from_bytes(modulus, "big") if isinstance(modulus, bytes) else int(modulus)
        self.phe = paillier.PaillierPublicKey(n)
        self.n = gmpy2.mpz(n)
        self.n_square = self.n * self.n
        self.bits = n.bit_length()
        self.width = 2 * ((self.bits + 7) // 8)

    def to_bytes(self, ciphertext) -> bytes:
        return gmpy2.mpz(ciphertext).to_bytes(self.width, "big")

    def from_bytes(self, blob: bytes) -> list:
        """Split concatenated fixed-width ciphertexts, checking each lies in (0, n^2)."""
        width = self.width
        if len(blob) % width:
            raise ValueError("ciphertext block is not a whole number of ciphertexts")
        values = [gmpy2.mpz.from_bytes(blob[i:i + width], "big") for i in range(0, len(blob), width)]
        if any(not 0 < v < self.n_square for v in values):
            raise ValueError("a ciphertext lies outside Z_(n^2)")
        return values


def release_gil() -> None:
    """Thread initializer: let gmpy2 release the GIL during its arithmetic (threads then use every core)."""
    gmpy2.get_context().allow_release_gil = True


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def worker_pool() -> ThreadPoolExecutor:
    """Threads whose gmpy2 work runs outside the GIL: one per core, no pickling."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=os.cpu_count() or 2,
                                       thread_name_prefix="paillier", initializer=release_gil)
        return _POOL


class Encryptor:
    """Querier-side encryption with a per-session fixed-base obfuscator table."""

    def __init__(self, key: PublicKey, exponent_bits: int = OBFUSCATOR_BITS) -> None:
        self.key = key
        self.windows = (exponent_bits + WINDOW_BITS - 1) // WINDOW_BITS
        self.exponent_bits = self.windows * WINDOW_BITS
        x = gmpy2.mpz(secrets.randbelow(int(key.n) - 2) + 2)
        base = gmpy2.powmod(x, key.n, key.n_square)
        n2 = key.n_square
        self._table = []
        for _ in range(self.windows):
            row = [gmpy2.mpz(1), base]
            for _ in range(2, 1 << WINDOW_BITS):
                row.append(row[-1] * base % n2)
            self._table.append(row)
            base = row[-1] * base % n2  # base^(2^8)

    def obfuscator(self):
        """``h^a`` for a fresh random ``a`` of ``exponent_bits`` bits."""
        digits = secrets.token_bytes(self.windows)
        n2 = self.key.n_square
        value = self._table[0][digits[0]]
        for row, digit in zip(self._table[1:], digits[1:]):
            value = value * row[digit] % n2
        return value

    def encrypt(self, message: int):
        n = self.key.n
        return (1 + gmpy2.mpz(message) * n) * self.obfuscator() % self.key.n_square

    def encrypt_random(self):
        """An encryption of a uniform random plaintext: a dummy bin."""
        return self.encrypt(secrets.randbelow(int(self.key.n)))


def negated_generator_power(key: PublicKey, y: int):
    """``g^(-Y) = 1 - Y n (mod n^2)`` for ``0 <= Y < n``."""
    return (key.n_square + 1 - gmpy2.mpz(y) * key.n) % key.n_square


def blinding_factor(key: PublicKey, fast: bool):
    """A fresh ``r``: uniform in [1, n) (full) or [1, 2^128) (fast)."""
    if fast:
        return gmpy2.mpz(secrets.randbelow((1 << FAST_BLINDING_BITS) - 1) + 1)
    return gmpy2.mpz(secrets.randbelow(int(key.n) - 1) + 1)


def blinded_comparison(key: PublicKey, ciphertext, negated_y, r):
    """``(E(X) * g^(-Y))^r mod n^2``: an encryption of ``r (X - Y)``."""
    return gmpy2.powmod(ciphertext * negated_y % key.n_square, r, key.n_square)


def book_literal_comparison(key: PublicKey, encrypted_x, encrypted_y, r):
    """The book's formula read literally, ``((E(x) * E(y))^-1)^r``: zero iff x = -y."""
    inverse = gmpy2.invert(encrypted_x * encrypted_y % key.n_square, key.n_square)
    return gmpy2.powmod(inverse, r, key.n_square)
