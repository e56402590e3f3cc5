"""The querier's encryption of its table's slots, in slot order, while the query uploads
(docs/protocol.md, "Streaming the query").

:class:`SlotEncryption` is a sequence of the ciphertexts that fills in the background: reading a
slot waits until it is encrypted.  The upload reads it front to back, so the holder receives,
opens and validates the first records while the querier still encrypts the last ones.

Where the work runs:

* **this machine**: pieces of ``PIECE`` slots are dealt round-robin to a thread of this process
  and, for large tables, one worker process per further core
  (:mod:`party_client.crypto.encrypt_worker`; gmpy2 holds the GIL for most of Paillier's
  encryption, so threads would not add speed).  Each encrypts its pieces in order and writes as it
  goes, so the pieces come back in slot order.  A worker that dies leaves its pieces to this
  process (any valid encryption will do);
* **the querier's Dask cluster** (``party join|dedup --dask``): pieces of ``CLUSTER_PIECE`` slots at
  most, two per worker thread in flight, each encrypted by
  :func:`party_client.crypto.encrypt_worker.encrypt_items` (what the local worker process runs).  Only
  bytes, ints and the scheme's name are task arguments.  A lost scheduler costs no result: the
  slots still missing are encrypted here.
"""
from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from typing import Callable, Iterator

from common.distributed import Cluster, ClusterLost
from common.schemes import Scheme
from common.schemes.pool import release_gil
from party_client.crypto.encrypt_worker import BATCH_ITEMS, MIN_ITEMS_FOR_WORKERS, encrypt_in_worker, \
    encrypt_items, frame_items
from party_client.protocol.engines.interface import Progress

PIECE = BATCH_ITEMS         # slots per piece on this machine (a worker process writes one batch at a time)
CLUSTER_PIECE = 4096        # slots per Dask task at most (0.3-0.6 s of work for either scheme)...
MIN_CLUSTER_PIECE = 256     # ...and at least (Dask costs a few ms per task)
log = logging.getLogger("party")


class EncryptionStopped(RuntimeError):
    """Raised where the upload reads a slot after :meth:`SlotEncryption.close` (Ctrl-C, a failed call)."""


class _QuietWhenStopped(logging.Filter):
    """grpc logs any exception of a request iterator with its traceback, at ERROR.  An upload abandoned
    on purpose ends its iterator with :class:`EncryptionStopped`: that one is not an error to show."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], EncryptionStopped))


logging.getLogger("grpc._channel").addFilter(_QuietWhenStopped())


class SlotEncryption(Sequence):
    """The ciphertexts of ``encodings`` (``E(X)``, or ``E(random)`` for ``None``: padding), produced
    in the background in slot order; indexing waits for the slots it reads.  :meth:`close` stops
    the work not yet done (an interrupted or failed upload).

    Reads come from one thread at a time (the upload's); ``close`` may come from any.
    """

    def __init__(self, scheme: Scheme, public: bytes, encodings: list[bytes | None], progress: Progress,
                 cluster: Cluster | None = None, notice: Callable[[str], None] = log.warning) -> None:
        self.scheme, self.public, self.encodings, self.notice = scheme, public, encodings, notice
        self.count, self.width = len(encodings), scheme.ciphertext_width(public)
        self._ticks = iter(progress("encrypt", self.count)(range(self.count)))
        self._done: list[bytes] = []
        self._closed = threading.Event()
        self._local = ThreadPoolExecutor(max_workers=1, thread_name_prefix="encrypt", initializer=release_gil)
        self._workers: list = []
        self._blocks = self._cluster_blocks(cluster) if cluster is not None else self._local_blocks()

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index):
        stop = index.indices(self.count)[1] if isinstance(index, slice) else \
            (index % self.count if index < 0 else index) + 1
        self._fill(stop)
        return self._done[index]

    def all(self) -> list[bytes]:
        """Every ciphertext (waits for the last)."""
        self._fill(self.count)
        self.close()
        return self._done

    def close(self) -> None:
        """Stop: pieces not started are dropped, worker processes ended."""
        self._closed.set()
        self._local.shutdown(wait=False, cancel_futures=True)
        for job in self._workers:
            job.stop()

    def _fill(self, stop: int) -> None:
        while len(self._done) < stop:
            if self._closed.is_set():
                raise EncryptionStopped("the encryption was stopped")
            try:
                block = next(self._blocks)
            except Exception:              # a cancelled piece, a stopped worker's closed file
                if self._closed.is_set():
                    raise EncryptionStopped("the encryption was stopped") from None
                raise
            slots = len(block) // self.width
            self._done.extend(block[i:i + self.width] for i in range(0, len(block), self.width))
            for _ in islice(self._ticks, slots):
                pass

    def _here(self, first: int, size: int) -> bytes:
        return self.scheme.encrypt(self.public, self.encodings[first:first + size])

    def _local_blocks(self) -> Iterator[bytes]:
        """Pieces dealt round-robin to this process's thread (owner 0) and worker processes (owners
        1 ...); piece ``k`` is the ``k // owners``-th of its owner's, which encrypts them in order."""
        cores = os.cpu_count() or 1
        starts = range(0, self.count, PIECE)
        owners = cores if cores > 1 and self.count >= MIN_ITEMS_FOR_WORKERS else 1
        width = self.scheme.encoding_bytes(self.public)
        self._workers = [encrypt_in_worker(self.scheme, self.public,
                                           [x for k in range(w, len(starts), owners)
                                            for x in self.encodings[starts[k]:starts[k] + PIECE]], width)
                         for w in range(1, owners)]
        mine = {k: self._local.submit(self._here, starts[k], PIECE) for k in range(0, len(starts), owners)}
        dead: set[int] = set()
        for k, first in enumerate(starts):
            size = min(PIECE, self.count - first)
            owner = k % owners
            if owner == 0:
                yield mine.pop(k).result()
                continue
            if owner not in dead:
                try:
                    yield self._workers[owner - 1].read((k // owners) * PIECE, size)
                    continue
                except (RuntimeError, OSError, ValueError):    # it died (or was stopped: closed file)
                    if self._closed.is_set():
                        raise
                    dead.add(owner)
                    self.notice("an encryption worker process stopped; encrypting its share in this process")
            yield self._here(first, size)

    def _cluster_blocks(self, cluster: Cluster) -> Iterator[bytes]:
        """Pieces on the Dask cluster, in order; after a lost scheduler, the rest here."""
        width, count = self.scheme.encoding_bytes(self.public), self.count
        window: deque = deque()
        done = 0
        try:
            threads = cluster.threads()
            size = max(MIN_CLUSTER_PIECE, min(CLUSTER_PIECE, -(-count // (4 * threads))))
            starts = iter(range(0, count, size))

            def start(first: int) -> None:
                window.append((first, cluster.submit(encrypt_items, self.scheme.name, self.public, width,
                                                     frame_items(self.encodings[first:first + size], width))))
            for first in starts:
                start(first)
                if len(window) >= 2 * threads:
                    break
            while window:
                first, task = window[0]
                block = task.result()
                window.popleft()
                if len(block) != min(size, count - first) * self.width:
                    raise ValueError(f"an encryption task returned {len(block)} bytes")
                done += min(size, count - first)
                yield block
                following = next(starts, None)
                if following is not None:
                    start(following)
        except ClusterLost as error:
            for _, task in window:
                task.cancel()
            self.notice(f"{error}; encrypting the rest of the query locally")
        for first in range(done, count, PIECE):    # pieces are taken in order: what is missing is the rest
            yield self._here(first, min(PIECE, count - first))


def encrypt_slots(scheme: Scheme, public: bytes, encodings: list[bytes | None], progress: Progress) -> list[bytes]:
    """Every slot's ciphertext (:class:`SlotEncryption` on this machine, waited for)."""
    return SlotEncryption(scheme, public, encodings, progress).all()


def encrypt_on_cluster(cluster: Cluster, scheme: Scheme, public: bytes, encodings: list[bytes | None],
                       progress: Progress, notice: Callable[[str], None] = log.warning) -> list[bytes]:
    """Every slot's ciphertext, encrypted on the querier's Dask cluster (:class:`SlotEncryption`)."""
    return SlotEncryption(scheme, public, encodings, progress, cluster, notice).all()
