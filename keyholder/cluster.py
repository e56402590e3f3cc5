"""The key holder's zero tests on K's own Dask cluster (docs/protocol.md, "Scaling out").

A large batch is cut into pieces, each zero-tested by the scheme's pure batch function on a
worker; small batches stay in the key holder's process.  The session's private key is a task
argument: it reaches the scheduler and K's workers, over Dask's TLS only (``keyholder serve``
refuses a plaintext scheduler unless ``--insecure`` on loopback).  K's scheduler and workers are
therefore inside K's trust boundary, like the key holder's own host.
"""
from __future__ import annotations

import logging
from typing import Callable

from common.distributed import Cluster, ClusterLost
from common.schemes import InvalidCiphertext, get_scheme

#: (scheme name, public key, private key, comparisons) -> per comparison, whether it encrypts zero
ZeroTest = Callable[[str, bytes, bytes, bytes], "list[bool]"]

log = logging.getLogger("keyholder")
MIN_PIECE = 64          # comparisons per task at least (a task's overhead is ~1-2 ms)


def zero_test(scheme_name: str, public: bytes, private: bytes, comparisons: bytes) -> list[bool]:
    """The scheme's zero test of one batch: the function a worker runs, and the local path."""
    return get_scheme(scheme_name).zero_test(public, private, comparisons)


def cluster_zero_test(cluster: Cluster, min_comparisons: int) -> ZeroTest:
    """A zero test that sends batches of at least ``min_comparisons`` to ``cluster``, split in pieces
    (about two per worker thread); smaller ones run locally.  Results come back in order.  A lost
    scheduler does not fail the call: the batch is zero-tested locally and a warning logged (the
    first batch after the loss waits for Dask's reconnection timeout, 30 s by default)."""

    def run(scheme_name: str, public: bytes, private: bytes, comparisons: bytes) -> list[bool]:
        width = get_scheme(scheme_name).ciphertext_width(public)
        count = len(comparisons) // width
        if count < min_comparisons or len(comparisons) % width:
            return zero_test(scheme_name, public, private, comparisons)
        try:
            return _on_cluster(cluster, scheme_name, public, private, comparisons, width, count)
        except ClusterLost as error:
            log.warning("%s; zero-testing this batch locally", error)
            return zero_test(scheme_name, public, private, comparisons)
    return run


def _on_cluster(cluster: Cluster, scheme_name: str, public: bytes, private: bytes, comparisons: bytes,
                width: int, count: int) -> list[bool]:
    step = max(MIN_PIECE, -(-count // (2 * cluster.threads())))
    starts = range(0, count, step)
    tasks = [cluster.submit(zero_test, scheme_name, public, private,
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
