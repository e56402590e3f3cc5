"""Threads for a scheme's big-number batch work.

gmpy2 releases the GIL during its arithmetic once a thread's context allows it, so one
thread per core really uses every core and nothing is pickled.  The key holder's zero tests
and the holder's blinded comparisons share this pool within their process.
"""
from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import gmpy2

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def release_gil() -> None:
    """Thread initializer: let gmpy2 release the GIL during its arithmetic (threads then use every core)."""
    gmpy2.get_context().allow_release_gil = True


def pool_threads() -> int:
    """One thread per core; in a Dask worker process, the worker's own thread count: a worker started
    with ``--nthreads N`` was given N cores, and more threads per task would take its neighbours'
    (``dask worker --nworkers 8 --nthreads 1`` on 8 cores would otherwise run 64 arithmetic threads)."""
    distributed = sys.modules.get("distributed")       # only loaded where Dask is in use
    if distributed is not None:
        try:
            return max(1, int(distributed.get_worker().state.nthreads))
        except (ValueError, AttributeError):           # not inside a worker
            pass
    return os.cpu_count() or 2


def worker_pool() -> ThreadPoolExecutor:
    """The process's threads whose gmpy2 work runs outside the GIL: one per core (:func:`pool_threads`),
    no pickling."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=pool_threads(),
                                       thread_name_prefix="scheme", initializer=release_gil)
        return _POOL
