"""The key holder's zero tests on K's own Dask cluster (docs/protocol.md, "Scaling out").

A large batch is cut into pieces, each zero-tested by the scheme's pure batch function on a
worker; small batches stay in the key holder's process.  The session's private key is a task
argument: it reaches the scheduler and K's workers, over Dask's TLS only (``keyholder serve``
refuses a plaintext scheduler unless ``--insecure`` on loopback).  K's scheduler and workers are
therefore inside K's trust boundary, like the key holder's own host.
"""
from __future__ import annotations

import logging
import threading
from typing import Callable

from common.distributed import Cluster, ClusterLost
from common.schemes import InvalidCiphertext, Scheme, get_scheme

#: (scheme, public key, private key, comparisons) -> per comparison, whether it encrypts zero
ZeroTest = Callable[[Scheme, bytes, bytes, bytes], "list[bool]"]

log = logging.getLogger("keyholder")
MIN_PIECE = 64          # comparisons per task at least (a task's overhead is ~1-2 ms)...
MIN_PIECE_BYTES = 32768  # ...and at least this many bytes of them: 64 Paillier-2048 comparisons (~150 ms of
                         # work), 512 of ristretto (~26 ms), so a scheduler's few ms per task stay small for either scheme


def local_zero_test(scheme: Scheme, public: bytes, private: bytes, comparisons: bytes) -> list[bool]:
    """The scheme's zero test of one batch in K's own process."""
    return scheme.zero_test(public, private, comparisons)


def zero_test(scheme_name: str, public: bytes, private: bytes, comparisons: bytes) -> list[bool]:
    """The zero test of one piece as a Dask task: the scheme crosses to the worker by its name."""
    return get_scheme(scheme_name).zero_test(public, private, comparisons)


def cluster_zero_test(cluster: Cluster, min_comparisons: int) -> ZeroTest:
    """A zero test that sends batches of at least ``min_comparisons`` to ``cluster``, split in pieces
    (about two per worker thread); smaller ones run locally.  Results come back in order."""
    return _ClusterZeroTest(cluster, min_comparisons)


class _ClusterZeroTest:
    """A lost scheduler never fails a call: the batch is zero-tested locally, and so is every batch
    while the client is not connected (Dask reconnects for up to the cluster's timeout, then gives
    up and K stays local).  The loss and the return are logged once each."""

    def __init__(self, cluster: Cluster, min_comparisons: int) -> None:
        self.cluster = cluster
        self.min_comparisons = min_comparisons
        self.local = False                       # batches go local since a loss
        self._lock = threading.Lock()

    def _fall_back(self, reason: str) -> None:
        with self._lock:
            if self.local:
                return
            self.local = True
        log.warning("%s; zero tests run locally until the Dask client reconnects (Dask tries for up to %.0f s, "
                    "--dask-timeout, then gives up and every batch stays local)", reason, self.cluster.timeout)

    def __call__(self, scheme: Scheme, public: bytes, private: bytes, comparisons: bytes) -> list[bool]:
        width = scheme.ciphertext_width(public)
        count = len(comparisons) // width
        if count < self.min_comparisons or len(comparisons) % width:
            return local_zero_test(scheme, public, private, comparisons)
        if not self.cluster.available():
            self._fall_back(f"the Dask scheduler at {self.cluster.address} is unreachable "
                            f"(client {self.cluster.client.status})")
            return local_zero_test(scheme, public, private, comparisons)
        if self.local:
            with self._lock:
                self.local = False
            log.warning("the Dask scheduler at %s is back: large batches are zero-tested on it again",
                        self.cluster.address)
        try:
            return _on_cluster(self.cluster, scheme, public, private, comparisons, width, count)
        except ClusterLost as error:
            if not self.cluster.closed:          # closed: K is stopping, nothing to report
                self._fall_back(str(error))
            return local_zero_test(scheme, public, private, comparisons)


def piece_size(count: int, width: int, threads: int) -> int:
    """Comparisons per task of a batch of ``count``: about two tasks per worker thread, but never fewer
    than :data:`MIN_PIECE` comparisons nor :data:`MIN_PIECE_BYTES` bytes of them."""
    return max(MIN_PIECE, -(-MIN_PIECE_BYTES // width), -(-count // (2 * threads)))


def _on_cluster(cluster: Cluster, scheme: Scheme, public: bytes, private: bytes, comparisons: bytes,
                width: int, count: int) -> list[bool]:
    step = piece_size(count, width, cluster.threads())
    starts = range(0, count, step)
    tasks = [cluster.submit(zero_test, scheme.name, public, private,
                            comparisons[s * width:min(s + step, count) * width]) for s in starts]
    results: list[bool] = []
    for start, task in zip(starts, tasks):
        try:
            results.extend(task.result())
        except InvalidCiphertext as error:       # name the item within the whole batch's numbering
            for rest in tasks:
                rest.cancel()
            raise InvalidCiphertext(f"comparisons from {start}: {error}") from None
    return results
