"""The holder's stream of comparison batches to K (docs/protocol.md, "Scaling out"): a bounded window
of ``SubmitComparisons`` calls in flight per round, so K zero-tests several batches at once instead of
the holder waiting for each reply before sending the next.  K accepts a round's batches in any order
and ignores a sequence number it already has, so order and resumption (the ``received_seqs`` of a
work item) need nothing more.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait, FIRST_COMPLETED
from typing import Callable

from party_client.transport import Connection, KeyHolderRefusal
from proto import linkage_pb2 as pb

SUBMIT_WINDOW = 8           # SubmitComparisons calls in flight per round (party hold --submit-window)
SUBMIT_TIMEOUT = 600.0      # seconds one call may take (K zero-tests the batch before it answers)
CANCELLED_RESENDS = 3       # a batch whose call a stopping K cancelled is sent again this often at most


class SubmitWindow:
    """Sends a round's batches with at most ``depth`` calls in flight; :meth:`send` blocks while the
    window is full.  The first failed call is raised by the next :meth:`send` or by :meth:`drain`
    (the other calls in flight then end by themselves: K keeps what arrives, and a resumed holder
    sends only what K lacks); ``on_sent(message)`` runs, one at a time, once K has acknowledged a batch."""

    def __init__(self, connection: Connection, depth: int = SUBMIT_WINDOW,
                 on_sent: Callable[[pb.ComparisonBatch], None] = lambda message: None) -> None:
        if depth < 1:
            raise ValueError("the submit window must be at least 1")
        self.connection, self.depth, self.on_sent = connection, depth, on_sent
        self._pool = ThreadPoolExecutor(max_workers=depth, thread_name_prefix="submit")
        self._in_flight: set[Future] = set()
        self._lock = threading.Lock()

    def _call(self, message: pb.ComparisonBatch) -> None:
        for attempt in range(CANCELLED_RESENDS + 1):
            try:
                self.connection.call("SubmitComparisons", message, timeout=SUBMIT_TIMEOUT)
                break
            except KeyHolderRefusal as refusal:
                # A stopping K cancels the calls still in flight after its grace period; a batch is
                # idempotent (K ignores a seq it has), so it is sent again (the transport waits for K).
                if refusal.code != "CANCELLED" or attempt == CANCELLED_RESENDS:
                    raise
        with self._lock:
            self.on_sent(message)

    def _reap(self, block: bool) -> None:
        """Forget finished calls (waiting for one when ``block``); raise the first failure."""
        if block and self._in_flight:
            wait(self._in_flight, return_when=FIRST_COMPLETED)
        for future in [f for f in self._in_flight if f.done()]:
            self._in_flight.discard(future)
            error = future.exception()
            if error is not None:
                self._abandon()
                raise error

    def send(self, message: pb.ComparisonBatch) -> None:
        self._reap(block=False)
        while len(self._in_flight) >= self.depth:
            self._reap(block=True)
        self._in_flight.add(self._pool.submit(self._call, message))

    def drain(self) -> None:
        """Wait for every call in flight; raise the first that failed."""
        while self._in_flight:
            self._reap(block=True)
        self._pool.shutdown(wait=True)

    def _abandon(self) -> None:
        """Send nothing more; the calls in flight end by themselves (each bounded by its timeout)."""
        self._in_flight.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)

    close = _abandon
