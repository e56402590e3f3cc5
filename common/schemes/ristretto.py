"""Exponential ElGamal over the ristretto255 group: the ``ristretto`` comparison scheme.

ristretto255 (de Valence, Grigg, Hamburg, Lovecruft, Tankersley & Valsorda, RFC 9496,
"The ristretto255 and decaf448 Groups", 2023, sections 1–4) is a group of prime order
``ℓ = 2^252 + 27742317777372353535851937790883648493`` built on the same curve as Ed25519
(Hamburg, "Decaf: eliminating cofactors through point compression", CRYPTO 2015).  Its
32-byte encoding covers exactly the group: a string decodes to a group element or is refused
(RFC 9496, section 4.3.1), so there is no cofactor, no point of small order and no "on the
curve but outside the subgroup" case to check, and a decoded element needs no other test.  Every
group operation is a call into libsodium through the ``rbcl`` bindings (libsodium
documentation, "Ristretto"); this module holds no curve arithmetic of its own.

The scheme (ElGamal, "A public key cryptosystem and a signature scheme based on discrete
logarithms", *IEEE Transactions on Information Theory* 31(4), 1985, with the message in the
exponent), mapped onto docs/protocol.md, "The blinded comparison", with ``G`` the ristretto255
generator (its encoding: RFC 9496, appendix A.1):

- **K** draws ``x`` uniform in ``[1, ℓ)`` and publishes ``P = x·G``.
- **Encoding to plaintext**: the 64-byte keyed encoding, read as a little-endian integer, is
  reduced mod ``ℓ``; as ``2^512 ≫ ℓ`` the scalar ``X`` is uniform up to a statistical distance
  below ``2^-259``.
- **Q** encrypts ``E(X) = (k·G, X·G + k·P)`` with a fresh uniform ``k``; padding (``None``)
  encrypts a fresh uniform scalar.  A ciphertext is 64 bytes.
- **H**, holding ``Y``, sends ``c = r·(E(X) − (0, Y·G)) = (r·c1, r·(c2 − Y·G))`` with a fresh
  uniform ``r`` in ``[1, ℓ)`` per comparison, which is an encryption of ``r·(X − Y)`` under the
  randomness ``r·k``.
- **K** tests zero without taking a discrete logarithm: ``c`` encrypts 0 iff ``c2 = x·c1``.

Why it is sound.  Under the decisional Diffie–Hellman assumption in this group, ``(k·G, k·P)``
is indistinguishable from a pair of independent uniform elements, so Q's ``k`` hides ``X`` from
H and from K's view of the traffic.  For a non-match, ``X − Y ≠ 0`` and ``r`` is uniform and
independent, so ``r·(X − Y)`` is uniform in ``[1, ℓ)`` and ``r·k`` is uniform too: the comparison
``(rk·G, r(X − Y)·G + rk·P)`` is a fresh encryption of a uniform non-zero plaintext, and K (even
with Q's ``k`` and ``X``) learns only "non-zero".  A match is ``(rk·G, rk·P)``, which K recognises
and which carries nothing else.  The group has prime order, so no element lies in a small
subgroup that a crafted point could push a blinded comparison into.  The best known attack is
Pollard's rho at about ``2^126`` operations, as for the prime-order subgroup of the curve beneath
(Bernstein, Duif, Lange, Schwabe & Yang, "High-speed high-security signatures", *Journal of
Cryptographic Engineering* 2(2), 2012, section 1), i.e. roughly 128-bit security, comparable to
3072-bit Paillier.

Validation.  A received point must decode (libsodium's ``crypto_core_ristretto255_is_valid_point``;
the multiplication decodes its input the same way) and have bit 255 clear: RFC 9496, section
4.3.1, refuses every string whose integer is ``≥ p``, but the libsodium 1.0.18 inside ``rbcl``
ignores bit 255 while decoding, so a point and the same bytes with that bit set would both be
accepted.  The check is done here, on whole batches at once.  The identity (32 zero bytes, RFC
9496, section 4.3.2) is refused where ElGamal needs a non-identity (the public key, ``c1``, a
query's ``c2``) and accepted as the second half of a comparison, where a crafted ``c2 = Y·G``
produces it and it stands for a non-zero plaintext (``x·c1`` is never the identity), so K
accepts it as "non-zero".

libsodium refuses a zero scalar and a product equal to the identity (libsodium documentation,
"Ristretto", "Scalar multiplication"); hence ``0·G`` and ``r·identity`` are the identity by
definition here, not libsodium calls.  Addition and subtraction accept the identity.

Speed.  ``rbcl`` binds one element per call (ctypes, which releases the GIL, so a pool's threads
use every core); the batch functions below draw every random scalar of a batch from one
``os.urandom`` call, run each libsodium function over the whole batch with ``map`` and check
canonical form and identities with numpy, so Python adds a few per cent to the libsodium time
(measured in docs/protocol.md, "Comparison schemes").
"""
from __future__ import annotations

import os
from hmac import compare_digest
from itertools import repeat
from typing import Sequence

import numpy as np

from common.schemes.base import InvalidCiphertext, KeyPair, Scheme


ORDER = 2**252 + 27742317777372353535851937790883648493
"""``ℓ``, the prime order of the group (RFC 9496, section 4.1)."""

POINT_BYTES = 32
SCALAR_BYTES = 32
CIPHERTEXT_BYTES = 2 * POINT_BYTES
ENCODING_BYTES = 64
KEY_BITS = 256
_ZERO_SCALAR = bytes(SCALAR_BYTES)


def _load_libsodium():
    """``rbcl``, after removing the copy of libsodium it writes to a temporary file on import.

    ``rbcl`` loads its bundled libsodium from a fresh temporary file in every process and leaves
    the file behind (2.8 MB per process); once the library is mapped the file is not needed."""
    import importlib

    import rbcl
    try:
        os.unlink(importlib.import_module("rbcl._sodium").lib_path)
    except (AttributeError, OSError):  # another layout of the package, or a system that keeps it open
        pass
    return rbcl


_rbcl = _load_libsodium()
_add = _rbcl.crypto_core_ristretto255_add
_sub = _rbcl.crypto_core_ristretto255_sub
_decodes = _rbcl.crypto_core_ristretto255_is_valid_point
_reduce = _rbcl.crypto_core_ristretto255_scalar_reduce
_mult = _rbcl.crypto_scalarmult_ristretto255
_base = _rbcl.crypto_scalarmult_ristretto255_base

FIELD_PRIME = 2**255 - 19
IDENTITY = bytes(POINT_BYTES)
"""The encoding of the neutral element (RFC 9496, section 4.3.2: ``s = 0``)."""


def _split(block: bytes, what: str) -> int:
    """How many ciphertexts (or comparisons) a block holds; :class:`InvalidCiphertext` if it is ragged."""
    if len(block) % CIPHERTEXT_BYTES:
        raise InvalidCiphertext(f"{what} block of {len(block)} bytes is not a multiple of {CIPHERTEXT_BYTES}")
    return len(block) // CIPHERTEXT_BYTES


def check_encoding(encoding: bytes) -> bytes:
    """The keyed encoding as bytes, ``ValueError`` unless it has :data:`ENCODING_BYTES` bytes."""
    if len(encoding) != ENCODING_BYTES:
        raise ValueError(f"an encoding must be {ENCODING_BYTES} bytes, got {len(encoding)}")
    return bytes(encoding)


def scalar_from_encoding(encoding: bytes) -> bytes:
    """The 64-byte encoding reduced mod ``ℓ`` (32 bytes, little-endian; may be zero)."""
    return _reduce(check_encoding(encoding))


def random_scalars(count: int) -> list[bytes]:
    """``count`` uniform scalars in ``[1, ℓ)``: 64 random bytes each, reduced mod ``ℓ`` (statistical
    distance below ``2^-259``), all drawn by one ``os.urandom`` call; a zero (probability ``1/ℓ``) is redrawn."""
    pool = os.urandom(64 * count)
    scalars = list(map(_reduce, (pool[i:i + 64] for i in range(0, 64 * count, 64))))
    for i, s in enumerate(scalars):
        while s == _ZERO_SCALAR:
            s = scalars[i] = _reduce(os.urandom(64))
    return scalars


def base_mult(s: bytes) -> bytes:
    """``s·G``, with ``0·G`` the identity (libsodium refuses the zero scalar)."""
    return IDENTITY if s == _ZERO_SCALAR else _base(s)


def _blinded_difference(r: bytes, c2: bytes, yg: bytes) -> bytes:
    """``r·(c2 − Y·G)``, the identity when ``c2 = Y·G`` (libsodium refuses to multiply it).

    ``rbcl``'s subtraction returns 32 zero bytes, the identity, when an operand does not decode;
    that case is told apart from a true identity and refused like a failed multiplication."""
    d = _sub(c2, yg)
    if d != IDENTITY:
        return _mult(r, d)
    if c2 != yg:
        raise RuntimeError("c2 does not decode")
    return IDENTITY


def point_check(point: bytes, identity_ok: bool = False) -> str | None:
    """``None`` for the encoding of a group element (the identity only if ``identity_ok``), else
    the name of the failed check.  Decoding decides; the rest only names why it refused."""
    if len(point) != POINT_BYTES:
        return f"length {len(point)} != {POINT_BYTES}"
    if point[31] & 0x80:
        return "non-canonical encoding"
    if _decodes(bytes(point)):
        return None if identity_ok or point != IDENTITY else "identity point"
    s = int.from_bytes(point, "little")
    if s >= FIELD_PRIME or s & 1:  # RFC 9496, section 4.3.1: s must be below p and non-negative (even)
        return "non-canonical encoding"
    return "not the encoding of a group element"


def _points(block: bytes, count: int) -> tuple[list[bytes], list[bytes]]:
    """The first and the second points of ``count`` concatenated ciphertexts."""
    return ([block[at:at + POINT_BYTES] for at in range(0, count * CIPHERTEXT_BYTES, CIPHERTEXT_BYTES)],
            [block[at:at + POINT_BYTES] for at in range(POINT_BYTES, count * CIPHERTEXT_BYTES, CIPHERTEXT_BYTES)])


def _suspects(block: bytes, count: int, identity_ok_second: bool) -> bool:
    """Whether any point of the block has bit 255 set, or is an identity where one is refused
    (numpy over the whole block; the caller's per-point decoding does the rest)."""
    points = np.frombuffer(block, dtype=np.uint8, count=count * CIPHERTEXT_BYTES).reshape(count, 2, POINT_BYTES)
    if (points[:, :, 31] & 0x80).any():
        return True
    identities = ~points.any(axis=2)
    return bool(identities[:, 0].any() or (not identity_ok_second and identities[:, 1].any()))


def _first_failure(block: bytes, count: int, what: str, first: int, identity_ok_second: bool) -> str | None:
    """The message naming the first point of the block, in order, that fails :func:`point_check`."""
    for i in range(count):
        at = i * CIPHERTEXT_BYTES
        for half, name, identity_ok in ((0, "first", False), (POINT_BYTES, "second", identity_ok_second)):
            failed = point_check(block[at + half:at + half + POINT_BYTES], identity_ok)
            if failed:
                return f"{what} {first + i}: {name} point: {failed}"
    return None


class RistrettoScheme(Scheme):
    """Exponential ElGamal on ristretto255 (see the module docstring)."""

    name = "ristretto"
    title = "exponential ElGamal on ristretto255"
    fixed_key_bits = KEY_BITS

    # -- keys ------------------------------------------------------------------------------------
    def generate_key(self, bits: int = KEY_BITS) -> KeyPair:
        """A fresh ``(P = x·G, x)``; ``bits`` has no meaning here (the group is fixed) beyond being positive."""
        if not isinstance(bits, int) or bits <= 0:
            raise ValueError(f"key size must be a positive number of bits, got {bits!r}")
        x = random_scalars(1)[0]
        return KeyPair(public=base_mult(x), private=x)

    def check_key(self, public: bytes, private: bytes) -> None:
        if base_mult(self.private_scalar(private)) != self.public_point(public):
            raise ValueError(f"the {self.name} private key does not belong to the public key")

    def public_point(self, public: bytes) -> bytes:
        """The public key ``P`` as bytes, ``ValueError`` naming the check unless it is a non-identity element."""
        failed = point_check(bytes(public))
        if failed:
            raise ValueError(f"not a {self.name} public key: {failed}")
        return bytes(public)

    def private_scalar(self, private: bytes) -> bytes:
        """The private key ``x`` as bytes, ``ValueError`` unless it is a scalar in ``[1, ℓ)``."""
        if len(private) != SCALAR_BYTES:
            raise ValueError(f"a {self.name} private key is {SCALAR_BYTES} bytes, got {len(private)}")
        if not 0 < int.from_bytes(private, "little") < ORDER:
            raise ValueError(f"a {self.name} private key must be a scalar in [1, ℓ)")
        return bytes(private)

    # -- sizes -----------------------------------------------------------------------------------
    def key_bits(self, public: bytes) -> int:
        return KEY_BITS

    def ciphertext_width(self, public: bytes) -> int:
        return CIPHERTEXT_BYTES

    def encoding_bytes(self, public: bytes) -> int:
        return ENCODING_BYTES

    # -- key holder ------------------------------------------------------------------------------
    def zero_test(self, public: bytes, private: bytes, comparisons: bytes) -> list[bool]:
        """``c2 == x·c1`` per comparison, after checking every point of the batch: ``c1`` a
        non-identity element, ``c2`` an element or the identity.  ``x·c1`` decodes ``c1``, and every
        ``c2`` is decoded, a match's too: the work is the same whatever the results (libsodium's
        multiplication and decoding take the same time for any input, and the comparison is
        ``hmac.compare_digest``), so the holder cannot time its matches (docs/protocol.md, "A zero
        test that takes the same time")."""
        x = self.private_scalar(private)
        count = _split(comparisons, "comparison")
        block = bytes(comparisons)
        c1s, c2s = _points(block, count)
        try:
            if _suspects(block, count, identity_ok_second=True):
                raise ValueError
            expected = list(map(_mult, repeat(x, count), c1s))
            if not all(list(map(_decodes, c2s))):     # a list: no early stop either
                raise ValueError
        except (ValueError, RuntimeError):
            raise InvalidCiphertext(_first_failure(block, count, "comparison", 0, identity_ok_second=True)
                                    or "a comparison was refused by libsodium") from None
        return list(map(compare_digest, c2s, expected))

    # -- querier ---------------------------------------------------------------------------------
    def encrypt(self, public: bytes, encodings: Sequence[bytes | None]) -> bytes:
        """``(k·G, X·G + k·P)`` per encoding with a fresh ``k``; ``None`` encrypts a uniform scalar."""
        p = self.public_point(public)
        count = len(encodings)
        padding = iter(random_scalars(sum(e is None for e in encodings)))
        mgs = list(map(base_mult, [next(padding) if e is None else scalar_from_encoding(e) for e in encodings]))
        ks = random_scalars(count)
        c2s = list(map(_add, mgs, map(_mult, ks, repeat(p, count))))
        for i in [i for i, c2 in enumerate(c2s) if c2 == IDENTITY]:
            while c2s[i] == IDENTITY:  # X·G + k·P is the identity (which H refuses) with probability 1/ℓ: redraw k
                ks[i] = random_scalars(1)[0]
                c2s[i] = _add(mgs[i], _mult(ks[i], p))
        return b"".join(b for pair in zip(map(_base, ks), c2s) for b in pair)

    # -- holder ----------------------------------------------------------------------------------
    def validate(self, public: bytes, ciphertexts: bytes, first: int = 0) -> int:
        """Every point of the query must decode to a group element other than the identity."""
        count = _split(ciphertexts, "ciphertext")
        block = bytes(ciphertexts)
        c1s, c2s = _points(block, count)
        if _suspects(block, count, identity_ok_second=False) or not all(map(_decodes, c1s)) \
                or not all(map(_decodes, c2s)):
            raise InvalidCiphertext(_first_failure(block, count, "ciphertext", first, identity_ok_second=False)
                                    or "a ciphertext was refused")
        return count

    def compare(self, public: bytes, query: bytes, positions: Sequence[int], encodings: Sequence[bytes]) -> bytes:
        """``(r·c1, r·(c2 − Y·G))`` per position with a fresh ``r``; ``Y·G`` is computed once per
        distinct encoding of the batch."""
        if len(positions) != len(encodings):
            raise ValueError(f"{len(positions)} positions but {len(encodings)} encodings")
        block = bytes(query)
        count = _split(block, "ciphertext")
        for position in positions:
            if not 0 <= position < count:
                raise ValueError(f"position {position} outside the query's {count} ciphertexts")
        ygs = {e: base_mult(scalar_from_encoding(e)) for e in dict.fromkeys(encodings)}
        rs = random_scalars(len(positions))
        c1s = [block[p * CIPHERTEXT_BYTES:p * CIPHERTEXT_BYTES + POINT_BYTES] for p in positions]
        c2s = [block[p * CIPHERTEXT_BYTES + POINT_BYTES:(p + 1) * CIPHERTEXT_BYTES] for p in positions]
        try:  # libsodium decodes every operand; a refusal means the query skipped validate()
            pairs = zip(map(_mult, rs, c1s), map(_blinded_difference, rs, c2s, [ygs[e] for e in encodings]))
            return b"".join(b for pair in pairs for b in pair)
        except RuntimeError:
            for position in positions:
                failed = _first_failure(block[position * CIPHERTEXT_BYTES:(position + 1) * CIPHERTEXT_BYTES],
                                        1, "ciphertext", position, identity_ok_second=False)
                if failed:
                    raise InvalidCiphertext(f"{failed} (refused by libsodium: validate the query before "
                                            "comparing)") from None
            raise
