"""The holder's comparison batches (docs/protocol.md, "The blinded comparison"): the batches a round's
comparison units are cut into, and each batch's message: the blinded comparisons
(:func:`compare_units`, a pure function run on the holder's thread pool or a Dask worker) and one sealed
attachment per row (positions + released values, padded to one length); and the validation of a received
query's pieces (:func:`validate_piece`, pure as well).  No I/O: the holder's driver
sends the messages.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Sequence

import numpy as np

from common.schemes import Scheme, get_scheme
from party_client.crypto.seal import SessionCipher
from party_client.protocol.engines.interface import RoundPlan, Unit
from proto import linkage_pb2 as pb

Batch = tuple[int, list[Unit], "pb.PairRule | None"]     # (seq, the batch's units, blocked: the pass's pair rule)


def compare_units(scheme_name: str, public: bytes, query: bytes, positions: Sequence[int],
                  encodings: Sequence[bytes]) -> bytes:
    """The blinded comparisons ``E(r_i (X_{positions[i]} - Y_i))`` of one batch, concatenated: a pure
    function of its arguments (docs/protocol.md, "The blinded comparison"); the scheme by its name, since
    this may run in a Dask worker's process."""
    return get_scheme(scheme_name).compare(public, query, positions, encodings)


def validate_piece(scheme_name: str, public: bytes, ciphertexts: bytes, first: int) -> int:
    """How many ciphertexts a piece of the received query holds, each validated by the scheme
    (:class:`common.schemes.InvalidCiphertext` naming item ``first + i`` otherwise): a pure function,
    run on the holder's Dask cluster for a large query."""
    return get_scheme(scheme_name).validate(public, ciphertexts, first=first)


#: Comparisons per batch at most, per scheme: a batch takes a few seconds on one core at most, so a
#: round's progress shows and a round whose session closed stops soon (docs/protocol.md, "Interrupted
#: runs").  Fixed per scheme, so a resumed holder cuts the same batches.
BATCH_COMPARISONS = {"paillier": 512}
DEFAULT_BATCH_COMPARISONS = 8192


def cut_batches(plan: RoundPlan, batch_rows: int, scheme_name: str = "") -> list[Batch]:
    """The round's units cut into numbered batches of at most ``batch_rows`` rows and
    :data:`BATCH_COMPARISONS` comparisons (a row with more is a batch of its own); a batch never spans
    two passes of a blocked rule."""
    units = plan.units
    # Batches are the unit of parallel work: small inputs get small batches so every core helps.
    size = max(16, min(batch_rows, -(-len(units) // (4 * (os.cpu_count() or 2)))))
    most = BATCH_COMPARISONS.get(scheme_name, DEFAULT_BATCH_COMPARISONS)
    ends = np.cumsum(np.fromiter((len(c) for _, c in units), dtype=np.int64, count=len(units)))
    segments = plan.segments if plan.segments is not None else [(0, len(units), None)]
    chunks = []
    for start, end, rule in segments:
        i = start
        while i < end:                                   # one step per batch
            done = int(ends[i - 1]) if i else 0
            stop = min(end, i + size, int(np.searchsorted(ends, done + most, side="right")))
            stop = max(stop, i + 1)
            chunks.append((units[i:stop], rule))
            i = stop
    return [(seq, chunk, rule) for seq, (chunk, rule) in enumerate(chunks)]


class BatchBuilder:
    """Builds the messages of one round's batches.

    ``payloads`` (per holder row, the released values; None: nothing released) and ``row_tag`` (blocked
    rules: names a row found by several passes; None otherwise) fill the attachments, all sealed with
    ``cipher`` to one width, the longest a row of this round can need.
    """

    def __init__(self, session_id: str, round_: int, scheme: Scheme, public: bytes, query: bytes,
                 cipher: SessionCipher, units: list[Unit], payloads: list[list[str]] | None = None,
                 longest_payload: int = 0, row_tag: Callable[[int], bytes] | None = None) -> None:
        self.session_id, self.round, self.scheme = session_id, round_, scheme
        self.public, self.query = public, query
        self.cipher, self.payloads, self.row_tag = cipher, payloads, row_tag
        positions_bound = max((len(c) for _, c in units), default=1) * 5 + 4 + (18 if row_tag is not None else 0)
        self.width = SessionCipher.padded_width((longest_payload if payloads is not None else 0) + positions_bound)

    @staticmethod
    def unit_lists(chunk: list[Unit]) -> tuple[list[int], list[bytes]]:
        """The query positions and the holder's encodings of a batch's comparisons, in order."""
        return ([p for _, comparisons in chunk for p, _ in comparisons],
                [x for _, comparisons in chunk for _, x in comparisons])

    def comparisons(self, chunk: list[Unit], query: object | None = None) -> tuple:
        """The arguments of :func:`compare_units` for a batch (``query``: the query as shared with a cluster)."""
        return (self.scheme.name, self.public, self.query if query is None else query, *self.unit_lists(chunk))

    def submit(self, cluster: Any, chunk: list[Unit], shared: Any) -> Any:
        """A batch's comparisons as a task on a :class:`common.distributed.Cluster` (``shared``: the query
        scattered there once per round); :meth:`build` makes the message of its result."""
        return cluster.submit(compare_units, *self.comparisons(chunk, shared))

    def build(self, seq: int, chunk: list[Unit], rule: pb.PairRule | None,
              out: bytes | None = None) -> pb.ComparisonBatch:
        """The batch's message; its comparisons ``out`` are computed here unless given."""
        if out is None:
            out = compare_units(*self.comparisons(chunk))
        counts, attachments = [], []
        for row, comparisons in chunk:
            counts.append(len(comparisons))
            attachment = pb.RowAttachment(positions=[p for p, _ in comparisons],
                                          values=self.payloads[row] if self.payloads is not None else [],
                                          row_tag=self.row_tag(row) if self.row_tag is not None else b"")
            attachments.append(self.cipher.seal(attachment.SerializeToString(), self.width))
        return pb.ComparisonBatch(session_id=self.session_id, round=self.round, seq=seq, ciphertexts=out,
                                  row_comparisons=counts, attachments=attachments, rule=rule)
