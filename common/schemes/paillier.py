"""The Paillier comparison scheme (Paillier, "Public-Key Cryptosystems Based on
Composite Degree Residuosity Classes", EUROCRYPT 1999): one of the comparison
schemes behind :class:`common.schemes.Scheme`, used by the key holder K, the
querier Q and the holder H (the default of a session that names none).  Raw gmpy2 integers on
the hot paths; ``phe`` generates the session keys and holds the public key (its
object API and float encoding are not used for identifiers: the encoding leaks
an exponent and costs time).

Keys.  The public key is the modulus ``n`` big-endian (what ``SessionInfo.public_key``
carries); the private key is ``p || q``, each of one fixed width.

Encryption (Q).  ``E(m) = (1 + m n) * h^a mod n^2`` with the fixed-base
obfuscator of Damgård, Jurik & Nielsen ("A generalization of Paillier's
public-key system", 2010): ``h = x^n mod n^2`` for one random ``x`` per key and a
short random exponent ``a`` (256 bits, i.e. 128-bit security against the
kangaroo attack on the short exponent).  A comb table of ``h^(d * 2^(8j))``
turns ``h^a`` into 32 multiplications, about 50x cheaper than ``r^n mod n^2``.
No library offers fixed-base exponentiation for gmpy2 integers, hence the
hand-written table.

Comparison (H).  docs/protocol.md, "The blinded comparison":
``c = (E(X) * g^(-Y))^r mod n^2 = E(r (X - Y))`` with ``g^(-Y) = 1 - Y n mod n^2``.
``r`` is fresh for every comparison and uniform in [1, n), so a non-match decrypts to a
uniform value.  A short ``r`` would not do: K decrypts ``r (X - Y)``, and two comparisons
hiding the same difference then have a ratio of two small numbers mod n, which rational
reconstruction finds.  El Emam & Arbuckle (Anonymizing Health Data, ch. 12) print
``((E(x) * E(y))^-1)^r``, which tests x = -y; :func:`book_literal_comparison`
keeps it only for the test that shows why.

Zero test (K).  docs/protocol.md, "The blinded comparison": K decides whether
``c`` encrypts zero without decrypting it, by one half-size exponentiation whose
work does not depend on the result (docs/protocol.md, "A zero test that takes the
same time").  For ``c = (1 + m n) s^n``, ``c^(p-1) = 1 + (p-1) m n (mod p^2)``, since
``s^(n (p-1))`` is a power of the group order ``p (p-1)``; so ``c^(p-1) = 1 (mod p^2)``
iff ``p`` divides ``m``.  A blinded comparison encrypts ``m = r (X - Y) mod n`` with
``r`` uniform in [1, n) and keyed encodings ``X``, ``Y``: ``p | m`` with ``m != 0``
needs ``p | r`` or ``p | X - Y``, each of probability about ``1/p`` (2^-1023 at the
default 2048-bit modulus), and a party who could choose such an ``m`` would know ``p``.
The q-half is therefore never needed, and is never run: running it only when the
p-half passed (as an earlier version did) made each zero cost one more
exponentiation, which the holder could time.  The exponentiation is GMP's
``mpz_powm_sec`` (the same time and memory accesses for any base of the same
size, GMP manual, "Modular Powering"); it costs 1.5x ``mpz_powm``.  Every
comparison is first checked to lie in Z*_{n^2}.
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import gmpy2
from phe import paillier

from common.schemes.base import InvalidCiphertext, KeyPair, Scheme
from common.schemes.pool import pool_threads, release_gil, worker_pool

__all__ = ["PaillierScheme", "PublicKey", "SessionKey", "Encryptor", "ZeroTester", "generate_session_key",
           "negated_generator_power", "blinding_factor", "blinded_comparison", "book_literal_comparison",
           "release_gil", "worker_pool"]

OBFUSCATOR_BITS = 256
WINDOW_BITS = 8
ENCODING_MARGIN_BITS = 64       # an encoding has |n| - 64 bits, so X < n


class PublicKey:
    """A session's Paillier public key with gmpy2 copies of n and n^2."""

    def __init__(self, modulus: bytes | int) -> None:
        n = int.from_bytes(modulus, "big") if isinstance(modulus, bytes) else int(modulus)
        self.phe = paillier.PaillierPublicKey(n)
        self.n = gmpy2.mpz(n)
        self.n_square = self.n * self.n
        self.bits = n.bit_length()
        self.width = 2 * ((self.bits + 7) // 8)

    def modulus_bytes(self) -> bytes:
        """The public key bytes: ``n`` big-endian."""
        return int(self.n).to_bytes((self.bits + 7) // 8, "big")

    def to_bytes(self, ciphertext) -> bytes:
        return gmpy2.mpz(ciphertext).to_bytes(self.width, "big")

    def from_bytes(self, blob: bytes, first: int = 0) -> list:
        """Split concatenated fixed-width ciphertexts, checking each lies in (0, n^2) (a failure names
        the item as number ``first + i``)."""
        width = self.width
        if len(blob) % width:
            raise InvalidCiphertext("ciphertext block is not a whole number of ciphertexts")
        values = [gmpy2.mpz.from_bytes(blob[i:i + width], "big") for i in range(0, len(blob), width)]
        for index, value in enumerate(values):
            if not 0 < value < self.n_square:
                raise InvalidCiphertext(f"ciphertext {first + index} lies outside Z_(n^2)")
        return values


class Encryptor:
    """Encryption with a fixed-base obfuscator table (one random base per instance)."""

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


def blinding_factor(key: PublicKey):
    """A fresh ``r``, uniform in [1, n)."""
    return gmpy2.mpz(secrets.randbelow(int(key.n) - 1) + 1)


def blinded_comparison(key: PublicKey, ciphertext, negated_y, r):
    """``(E(X) * g^(-Y))^r mod n^2``: an encryption of ``r (X - Y)``."""
    return gmpy2.powmod(ciphertext * negated_y % key.n_square, r, key.n_square)


def book_literal_comparison(key: PublicKey, encrypted_x, encrypted_y, r):
    """The formula printed in El Emam & Arbuckle (ch. 12) read literally, ``((E(x) * E(y))^-1)^r``:
    zero iff x = -y (kept only for the test that shows why it is not used)."""
    inverse = gmpy2.invert(encrypted_x * encrypted_y % key.n_square, key.n_square)
    return gmpy2.powmod(inverse, r, key.n_square)


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

    def private_bytes(self) -> bytes:
        """``p || q``, each ``ceil(|n| / 16) + 1`` bytes (room for primes of unequal length)."""
        width = _prime_width(self.bits)
        return self.p.to_bytes(width, "big") + self.q.to_bytes(width, "big")

    @classmethod
    def from_bytes(cls, public: bytes, private: bytes) -> "SessionKey":
        """The key pair from its bytes; ``ValueError`` unless ``p q = n``."""
        n = int.from_bytes(public, "big")
        half = len(private) // 2
        p, q = int.from_bytes(private[:half], "big"), int.from_bytes(private[half:], "big")
        if len(private) != 2 * _prime_width(n.bit_length()) or p * q != n or p < 2 or q < 2:
            raise ValueError("the private key does not match the session modulus")
        return cls(n=n, p=p, q=q)


def _prime_width(modulus_bits: int) -> int:
    return (modulus_bits + 15) // 16 + 1


def generate_session_key(bits: int) -> SessionKey:
    """A fresh Paillier key pair for one session (``phe`` with gmpy2)."""
    public, private = paillier.generate_paillier_keypair(n_length=bits)
    return SessionKey(n=int(public.n), p=int(private.p), q=int(private.q))


class ZeroTester:
    """The p-half zero test for one session key (docs/protocol.md, "The blinded comparison")."""

    def __init__(self, key: SessionKey) -> None:
        self.n = gmpy2.mpz(key.n)
        self.n_square = self.n * self.n
        self.width = 2 * ((key.n.bit_length() + 7) // 8)
        self._p = gmpy2.mpz(key.p)
        self._p_square = self._p * self._p
        self._p_minus_1 = self._p - 1

    def parse(self, blob: bytes) -> list:
        """Split concatenated fixed-width ciphertexts and check each is in Z*_{n^2}."""
        width = self.width
        if len(blob) % width:
            raise InvalidCiphertext(f"ciphertext bytes ({len(blob)}) are not a multiple of {width}")
        values = [gmpy2.mpz.from_bytes(blob[i:i + width], "big") for i in range(0, len(blob), width)]
        for index, value in enumerate(values):
            if not 0 < value < self.n_square or gmpy2.gcd(value, self.n) != 1:
                raise InvalidCiphertext(f"ciphertext {index} is outside Z*_(n^2)")
        return values

    def is_zero(self, c) -> bool:
        """True iff ``c`` encrypts 0 (the p-half alone, in constant time; see the module docstring)."""
        return gmpy2.powmod_sec(c, self._p_minus_1, self._p_square) == 1

    def test_many(self, values: list) -> list[bool]:
        """Zero-test a batch on every core (gmpy2 releases the GIL in the pool)."""
        if len(values) < 64:
            return [self.is_zero(c) for c in values]
        pool = worker_pool()
        step = max(16, len(values) // (4 * pool_threads()))
        chunks = [values[i:i + step] for i in range(0, len(values), step)]
        results: list[bool] = []
        for part in pool.map(lambda chunk: [self.is_zero(c) for c in chunk], chunks):
            results.extend(part)
        return results


@lru_cache(maxsize=64)
def _public_key(public: bytes) -> PublicKey:
    return PublicKey(public)


@lru_cache(maxsize=4)      # a 2048-bit key's comb table holds ~4 MB
def _encryptor(public: bytes) -> Encryptor:
    """One comb table per public key (its random base is the per-session ``x``)."""
    return Encryptor(_public_key(public))


class PaillierScheme(Scheme):
    """Paillier behind the :class:`Scheme` interface: bytes in, bytes out."""

    name = "paillier"
    title = "Paillier"
    costly_keys = True              # two primes of half the modulus each (gmpy2.next_prime keeps the GIL)

    def generate_key(self, bits: int) -> KeyPair:
        key = generate_session_key(bits)
        return KeyPair(public=key.modulus_bytes(), private=key.private_bytes())

    def check_key(self, public: bytes, private: bytes) -> None:
        SessionKey.from_bytes(public, private)

    def zero_test(self, public: bytes, private: bytes, comparisons: bytes) -> list[bool]:
        tester = ZeroTester(SessionKey.from_bytes(public, private))
        return tester.test_many(tester.parse(comparisons))

    def key_bits(self, public: bytes) -> int:
        return _public_key(public).bits

    def ciphertext_width(self, public: bytes) -> int:
        return _public_key(public).width

    def encoding_bytes(self, public: bytes) -> int:
        return (_public_key(public).bits - ENCODING_MARGIN_BITS) // 8

    def encrypt(self, public: bytes, encodings: Sequence[bytes | None]) -> bytes:
        key, encryptor = _public_key(public), _encryptor(public)
        out = bytearray()
        for x in encodings:
            value = encryptor.encrypt_random() if x is None else encryptor.encrypt(int.from_bytes(x, "big"))
            out += key.to_bytes(value)
        return bytes(out)

    def validate(self, public: bytes, ciphertexts: bytes, first: int = 0) -> int:
        return len(_public_key(public).from_bytes(ciphertexts, first))

    def compare(self, public: bytes, query: bytes, positions: Sequence[int], encodings: Sequence[bytes]) -> bytes:
        key = _public_key(public)
        width, n_square = key.width, key.n_square
        out = bytearray()
        last, negated = None, None
        for position, encoding in zip(positions, encodings):
            if encoding is not last:
                last, negated = encoding, negated_generator_power(key, int.from_bytes(encoding, "big"))
            start = position * width
            ciphertext = gmpy2.mpz.from_bytes(query[start:start + width], "big")
            if not start + width <= len(query) or not 0 < ciphertext < n_square:
                raise InvalidCiphertext(f"query position {position} holds no valid ciphertext")
            out += key.to_bytes(blinded_comparison(key, ciphertext, negated, blinding_factor(key)))
        return bytes(out)
