"""Where and when a holder's comparison batches are computed: a bounded window of batches in flight on
the process's GIL-free thread pool (whole messages), inline (a lookup's few batches), or as tasks on the
holder's Dask cluster (only the comparisons, :mod:`common.distributed`), their messages handed back in
order; a stopping holder stops waiting within :data:`STOP_POLL_SECONDS`.  A large received query is
validated on the cluster too, as it arrives (:func:`cluster_validation`).
"""
from __future__ import annotations

import os
from collections import deque
from concurrent.futures import Future, TimeoutError as FutureTimeout
from typing import Any, Callable, Iterator, Protocol

from common.schemes import Scheme
from party_client.protocol.batches import Batch, BatchBuilder, validate_piece
from party_client.transport import ConnectionProblem
from proto import linkage_pb2 as pb

STOP_POLL_SECONDS = 0.25    # a round waiting for a batch checks whether the holder is stopping this often
VALIDATION_PIECE_BYTES = 1 << 20    # a query's bytes per validation task on the cluster (ristretto: 16,384 ciphertexts)


def cluster_validation(cluster: Any, scheme: Scheme, public: bytes) -> tuple[Callable[[bytes, int], Any], int]:
    """How :func:`party_client.protocol.wire.read_query` validates a query on the holder's Dask cluster:
    each piece of about :data:`VALIDATION_PIECE_BYTES` a task (:func:`validate_piece`), submitted as it
    arrives; and the piece size in ciphertexts."""
    return (lambda block, first: cluster.submit(validate_piece, scheme.name, public, block, first),
            max(1, VALIDATION_PIECE_BYTES // scheme.ciphertext_width(public)))


class Inline:
    """An executor that runs each task at once in the caller's thread (a lookup's few batches)."""

    @staticmethod
    def submit(function: Callable, *args) -> Future:
        future: Future = Future()
        future.set_result(function(*args))
        return future


class StopSignal(Protocol):
    """What a round checks between batches: a :class:`threading.Event` or a
    :class:`party_client.protocol.round_watch.RoundWatch`."""

    def is_set(self) -> bool: ...


class BatchScheduler:
    """Computes one round's batches with at most two per thread of the pool (or the cluster) in flight.

    ``pool`` is an executor (the process's :func:`common.schemes.pool.worker_pool`, or :class:`Inline`);
    with a ``cluster`` (a :class:`common.distributed.Cluster`) the comparisons run there instead and
    the messages are built here.  ``stopping`` set: the batches in flight are released and
    :class:`ConnectionProblem` is raised (``what`` names the round).
    """

    def __init__(self, builder: BatchBuilder, pool: Any, cluster: Any, stopping: StopSignal, what: str) -> None:
        self.builder, self.pool, self.cluster = builder, pool, cluster
        self.stopping, self.what = stopping, what

    def messages(self, batches: list[Batch]) -> Iterator[tuple[int, pb.ComparisonBatch]]:
        """(rows, message) of every batch, in the order given; the next batch starts as one is taken."""
        cluster = self.cluster
        shared = cluster.scatter(self.builder.query) if cluster is not None and batches else None  # once per round

        def start(seq: int, chunk: list, rule: pb.PairRule | None) -> tuple[int, Any, tuple | None]:
            """Start one batch: on the pool (the whole message), or its comparisons on the cluster."""
            if cluster is None:
                return len(chunk), self.pool.submit(self.builder.build, seq, chunk, rule), None
            return len(chunk), self.builder.submit(cluster, chunk, shared), (seq, chunk, rule)
        depth = 2 * (cluster.threads() if cluster is not None else (os.cpu_count() or 2))
        window: deque = deque()
        pending = iter(batches)
        for batch in pending:
            window.append(start(*batch))
            if len(window) >= depth:
                break
        try:
            while window:
                rows, future, arguments = window[0]
                out = self._await(future, window)
                window.popleft()
                yield rows, (out if arguments is None else self.builder.build(*arguments, out=out))
                following = next(pending, None)
                if following is not None:
                    window.append(start(*following))
        finally:                 # the round ended early (a refused submission, a closed session): its
            for _, future, _ in window:       # batches not yet started are dropped, not left to the pool
                future.cancel()

    def _await(self, future: Any, window: deque) -> Any:
        """The result of ``future`` (a pool future or a Dask :class:`common.distributed.Task`); a stopping
        holder stops waiting within :data:`STOP_POLL_SECONDS` and releases the batches in ``window``."""
        while True:
            if self.stopping.is_set():
                for _, pending, _ in window:
                    pending.cancel()
                raise ConnectionProblem(f"holder stopped while serving {self.what}; "
                                        "the key holder keeps the batches it has")
            try:
                return future.result(timeout=STOP_POLL_SECONDS)
            except FutureTimeout:
                continue
