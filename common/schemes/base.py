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
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Callable, Sequence

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

    #: the scheme's name on the wire, on command lines and in files (``paillier``, ``ristretto``)
    name: str = ""
    #: what a report calls it
    title: str = ""
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
        order is the one reported (:class:`PieceValidation`, all at once)."""
        submit = None if pool is None else (lambda block, first: pool.submit(self.validate, public, block, first))
        validation = PieceValidation(self, public, submit, piece)
        validation.add(ciphertexts)
        return validation.count()

    @abstractmethod
    def compare(self, public: bytes, query: bytes, positions: Sequence[int], encodings: Sequence[bytes]) -> bytes:
        """Blinded comparisons ``E(r_i (X_{positions[i]} - Y_i))`` with a fresh ``r_i`` each, concatenated.

        ``query`` is the querier's whole (validated) ciphertext block; ``encodings[i]`` is the
        holder's encoding ``Y_i``.  Each ``r_i`` is uniform over the whole plaintext space, never
        shorter (docs/protocol.md, "The blinded comparison")."""


class PieceValidation:
    """The validation of a received query's ciphertexts as they arrive: each full piece of ``piece``
    ciphertexts is handed to ``submit(block, first)`` (a future of :meth:`Scheme.validate`'s count, e.g.
    on a thread pool or a Dask cluster) at once; :meth:`count` waits for them all and raises the first
    failure in query order.  A query of one piece (a lookup) is validated in the calling thread, never
    queued behind other work; so is everything without ``submit``."""

    def __init__(self, scheme: Scheme, public: bytes,
                 submit: Callable[[bytes, int], Future] | None = None, piece: int = VALIDATION_PIECE) -> None:
        self.scheme, self.public, self.submit, self.piece = scheme, public, submit, piece
        self.width = scheme.ciphertext_width(public)
        self._waiting = bytearray()         # arrived, not yet handed out
        self._handed = 0                    # ciphertexts handed out before those
        self._checks: list[Future] = []

    def add(self, block: bytes) -> None:
        if len(block) % self.width:
            raise InvalidCiphertext(f"a query block of {len(block)} bytes is not a multiple of {self.width}")
        self._waiting += block
        while self.submit is not None and len(self._waiting) >= self.piece * self.width:
            self._hand_out(self.piece)

    def _hand_out(self, size: int) -> None:
        cut = size * self.width
        self._checks.append(self.submit(bytes(self._waiting[:cut]), self._handed))
        del self._waiting[:cut]
        self._handed += size

    def count(self) -> int:
        """How many ciphertexts arrived, all valid (else the first failure in query order)."""
        try:
            if not self._checks:             # nothing handed out: one piece, or no submit
                step = self.piece * self.width
                return sum(self.scheme.validate(self.public, bytes(self._waiting[i:i + step]), i // self.width)
                           for i in range(0, len(self._waiting), step))
            while self._waiting:
                self._hand_out(min(self.piece, len(self._waiting) // self.width))
            return sum(check.result() for check in self._checks)
        finally:
            self.cancel()

    def cancel(self) -> None:
        """Drop the pieces not yet checked (the query is refused, or counted)."""
        for check in self._checks:
            check.cancel()
