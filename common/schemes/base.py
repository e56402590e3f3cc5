"""The comparison scheme: the arithmetic behind every blinded comparison.

docs/protocol.md ("The blinded comparison"): the querier Q encrypts keyed
encodings ``X`` under a per-session public key issued by the key holder K; the
holder H turns each ciphertext and its own encoding ``Y`` into a *blinded
comparison*, an encryption of ``r (X - Y)`` with a fresh uniform ``r``; K learns
only whether each comparison encrypts zero.  Every engine (exact tables,
lookup buckets, fuzzy terms, blocked pairs) and the key holder go through this
interface and never through a concrete scheme, so a scheme is added by adding
one implementation.

Every method is a pure batch function: bytes and ints in, bytes (or booleans)
out, no globals that change results, no open connections.  The same call runs
on a thread, in a worker process, or on a distributed worker.  Ciphertexts and
comparisons travel as concatenations of fixed-width items
(:meth:`Scheme.ciphertext_width`).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Sequence

VALIDATION_PIECE = 2048
"""Ciphertexts per validation task of a received query (a few ms of work per piece for either scheme)."""


class InvalidCiphertext(ValueError):
    """A received ciphertext or comparison failed validation; the message names the item and the check."""


@dataclass(frozen=True)
class KeyPair:
    """A session key pair as bytes: ``public`` goes to both parties, ``private`` never leaves K."""

    public: bytes
    private: bytes


class Scheme(ABC):
    """One comparison scheme: key generation and zero test (K), encryption (Q), blinded comparison (H)."""

    #: the scheme's name on the wire, on command lines and in files (``paillier``, ``ec``)
    name: str = ""
    #: what a report calls it
    title: str = ""
    #: whether :meth:`compare` has a cheaper short-``r`` variant (``fast_blinding``); a holder records
    #: "full" blinding for a scheme without one, whatever the querier asked.
    has_fast_blinding: bool = False
    #: the one size parameter of a scheme whose group is fixed (``None``: the key size is chosen per session)
    fixed_key_bits: int | None = None
    #: whether :meth:`generate_key` is costly (a search for large primes holding the GIL for up to seconds):
    #: the key holder then generates keys in worker processes, within each party's budget
    costly_keys: bool = False

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<{self.title} comparison scheme {self.name!r}>"

    # One object per scheme and process: a copy is the scheme itself, and a pickle holds only the name.
    def __copy__(self) -> "Scheme":
        return self

    def __deepcopy__(self, memo: dict) -> "Scheme":
        return self

    def __reduce__(self) -> tuple:
        from common.schemes import get_scheme
        return get_scheme, (self.name,)

    # -- key holder ------------------------------------------------------------------------------
    @abstractmethod
    def generate_key(self, bits: int) -> KeyPair:
        """A fresh key pair for one session (``bits`` is the scheme's size parameter, if it has one)."""

    @abstractmethod
    def check_key(self, public: bytes, private: bytes) -> None:
        """Raise ``ValueError`` unless ``private`` belongs to ``public`` (a key unwrapped from storage)."""

    @abstractmethod
    def zero_test(self, public: bytes, private: bytes, comparisons: bytes) -> list[bool]:
        """Per comparison, whether it encrypts zero.  Validates the whole batch first and raises
        :class:`InvalidCiphertext` (naming the item and the check) before testing anything."""

    # -- sizes -----------------------------------------------------------------------------------
    @abstractmethod
    def key_bits(self, public: bytes) -> int:
        """The size parameter the public key was generated with (recorded in sessions and reports)."""

    @abstractmethod
    def ciphertext_width(self, public: bytes) -> int:
        """Bytes per ciphertext and per comparison on the wire."""

    @abstractmethod
    def encoding_bytes(self, public: bytes) -> int:
        """Length of the keyed encoding (PRF output) that the scheme maps to a plaintext."""

    # -- querier ---------------------------------------------------------------------------------
    @abstractmethod
    def encrypt(self, public: bytes, encodings: Sequence[bytes | None]) -> bytes:
        """``E(X)`` for each encoding, ``E(random)`` for ``None`` (padding), concatenated."""

    # -- holder ----------------------------------------------------------------------------------
    @abstractmethod
    def validate(self, public: bytes, ciphertexts: bytes, first: int = 0) -> int:
        """Check a received block of ciphertexts; return how many it holds or raise :class:`InvalidCiphertext`
        (naming the failed item as number ``first + i`` of the whole query)."""

    def validate_all(self, public: bytes, ciphertexts: bytes, pool: Executor | None = None,
                     piece: int = VALIDATION_PIECE) -> int:
        """:meth:`validate` of a whole query in pieces of ``piece`` ciphertexts, spread over ``pool``'s
        threads (the libraries behind both schemes release the GIL); the first failing piece in query
        order is the one reported."""
        width = self.ciphertext_width(public)
        if len(ciphertexts) % width:
            raise InvalidCiphertext(f"a query block of {len(ciphertexts)} bytes is not a multiple of {width}")
        count = len(ciphertexts) // width
        starts = range(0, count, piece)

        def check(start: int) -> int:
            return self.validate(public, ciphertexts[start * width:min(start + piece, count) * width], first=start)
        counted = pool.map(check, starts) if pool is not None and len(starts) > 1 else map(check, starts)
        return sum(counted)

    @abstractmethod
    def compare(self, public: bytes, query: bytes, positions: Sequence[int], encodings: Sequence[bytes],
                fast_blinding: bool = False) -> bytes:
        """Blinded comparisons ``E(r_i (X_{positions[i]} - Y_i))`` with a fresh ``r_i`` each, concatenated.

        ``query`` is the querier's whole (validated) ciphertext block; ``encodings[i]`` is the
        holder's encoding ``Y_i``.  ``fast_blinding`` asks for a short ``r`` where the scheme has one
        (schemes without a cheaper variant ignore it)."""
