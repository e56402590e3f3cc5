"""The key holder's thread pool counts the core's work in flight (``keyholder.pool.Pool``): a stopping
server closes the store only once that count is zero, and work still queued when it stops is
cancelled and no longer counted."""
from __future__ import annotations

import threading

from keyholder.pool import Pool


def test_the_pool_counts_work_until_it_is_done_or_cancelled():
    pool = Pool(1)
    release = threading.Event()
    running = pool.submit(release.wait, 10)
    queued = pool.submit(lambda: None)
    assert pool.wait_idle(0.05) == 2                        # one running, one queued behind it
    pool.shutdown(wait=False, cancel_futures=True)          # what a stopping server does
    assert queued.cancelled() and pool.wait_idle(0.05) == 1
    release.set()
    assert pool.wait_idle(5) == 0 and running.result() is True
