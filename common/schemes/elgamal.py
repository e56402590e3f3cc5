"""What the exponential-ElGamal schemes (``ec``, ``ristretto``) share: sizes, keys, ciphertext blocks.

Both groups have the prime order ``ℓ`` below (Ed25519's subgroup: Bernstein, Duif, Lange, Schwabe &
Yang, "High-speed high-security signatures", 2012, section 1; ristretto255: RFC 9496, section 4.1),
32-byte points and scalars; a ciphertext or comparison is two points, a keyed encoding 64 bytes.
A scheme supplies its group through three small methods (:meth:`ElGamalScheme.random_scalar`,
:meth:`~ElGamalScheme.base_mult`, :meth:`~ElGamalScheme.point_check`); the protocol's batch
methods stay with each scheme, as they are where the groups' libraries differ.
"""
from __future__ import annotations

from abc import abstractmethod

from common.schemes.base import InvalidCiphertext, KeyPair, Scheme

ORDER = 2**252 + 27742317777372353535851937790883648493
"""``ℓ``, the prime order of both groups."""

POINT_BYTES = 32
SCALAR_BYTES = 32
CIPHERTEXT_BYTES = 2 * POINT_BYTES
ENCODING_BYTES = 64
KEY_BITS = 256
ZERO_SCALAR = bytes(SCALAR_BYTES)


def split(block: bytes, what: str) -> int:
    """How many ciphertexts (or comparisons) a block holds; :class:`InvalidCiphertext` if it is ragged."""
    if len(block) % CIPHERTEXT_BYTES:
        raise InvalidCiphertext(f"{what} block of {len(block)} bytes is not a multiple of {CIPHERTEXT_BYTES}")
    return len(block) // CIPHERTEXT_BYTES


def check_encoding(encoding: bytes) -> bytes:
    """The keyed encoding as bytes, ``ValueError`` unless it has :data:`ENCODING_BYTES` bytes."""
    if len(encoding) != ENCODING_BYTES:
        raise ValueError(f"an encoding must be {ENCODING_BYTES} bytes, got {len(encoding)}")
    return bytes(encoding)


class ElGamalScheme(Scheme):
    """Exponential ElGamal in a group of order ``ℓ``: keys and sizes; the group comes from the subclass."""

    fixed_key_bits = KEY_BITS
    #: "an ec", "a ristretto": how messages name the scheme's keys
    key_article = "a"

    # -- the group -------------------------------------------------------------------------------
    @abstractmethod
    def random_scalar(self) -> bytes:
        """A uniform scalar in ``[1, ℓ)``."""

    @abstractmethod
    def base_mult(self, s: bytes) -> bytes:
        """``s·G``; ``0·G`` is the identity."""

    @abstractmethod
    def point_check(self, point: bytes) -> str | None:
        """``None`` for a group element other than the identity, else the name of the failed check."""

    # -- keys ------------------------------------------------------------------------------------
    def generate_key(self, bits: int = KEY_BITS) -> KeyPair:
        """A fresh ``(P = x·G, x)``; ``bits`` has no meaning here (the group is fixed) beyond being positive."""
        if not isinstance(bits, int) or bits <= 0:
            raise ValueError(f"key size must be a positive number of bits, got {bits!r}")
        x = self.random_scalar()
        return KeyPair(public=self.base_mult(x), private=x)

    def check_key(self, public: bytes, private: bytes) -> None:
        if self.base_mult(self.private_scalar(private)) != self.public_point(public):
            raise ValueError(f"the {self.name} private key does not belong to the public key")

    def public_point(self, public: bytes) -> bytes:
        """The public key ``P`` as bytes, ``ValueError`` naming the check unless it is a non-identity element."""
        failed = self.point_check(bytes(public))
        if failed:
            raise ValueError(f"not {self.key_article} {self.name} public key: {failed}")
        return bytes(public)

    def private_scalar(self, private: bytes) -> bytes:
        """The private key ``x`` as bytes, ``ValueError`` unless it is a scalar in ``[1, ℓ)``."""
        if len(private) != SCALAR_BYTES:
            raise ValueError(f"{self.key_article} {self.name} private key is {SCALAR_BYTES} bytes, "
                             f"got {len(private)}")
        if not 0 < int.from_bytes(private, "little") < ORDER:
            raise ValueError(f"{self.key_article} {self.name} private key must be a scalar in [1, ℓ)")
        return bytes(private)

    # -- sizes -----------------------------------------------------------------------------------
    def key_bits(self, public: bytes) -> int:
        return KEY_BITS

    def ciphertext_width(self, public: bytes) -> int:
        return CIPHERTEXT_BYTES

    def encoding_bytes(self, public: bytes) -> int:
        return ENCODING_BYTES
