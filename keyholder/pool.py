"""The key holder's thread pool: where the core's blocking work (SQLite, cryptography) runs for the
async servicer, so that a call waiting on it holds no thread, and the count of that work in flight,
so that a stopping server closes the store only after the last piece of it."""
from __future__ import annotations

import asyncio
import threading
import time
from concurrent import futures
from typing import Callable, TypeVar

T = TypeVar("T")


async def on_pool(function: Callable[..., T], *args) -> T:
    """``function(*args)`` on the running event loop's default executor (the server's :class:`Pool`)."""
    return await asyncio.get_running_loop().run_in_executor(None, function, *args)


class Pool(futures.ThreadPoolExecutor):
    """A thread pool that counts the work submitted to it and not yet done, queued or running (a
    cancelled piece is done: :meth:`shutdown` with ``cancel_futures`` leaves only the running ones)."""

    def __init__(self, workers: int) -> None:
        super().__init__(max_workers=workers, thread_name_prefix="core")
        self._idle = threading.Condition()
        self._in_flight = 0

    def submit(self, fn, /, *args, **kwargs) -> futures.Future:
        with self._idle:
            self._in_flight += 1
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:
            self._done(None)
            raise
        future.add_done_callback(self._done)
        return future

    def _done(self, _future: futures.Future | None) -> None:
        with self._idle:
            self._in_flight -= 1
            self._idle.notify_all()

    def wait_idle(self, timeout: float) -> int:
        """Wait until no work is in flight (at most ``timeout`` s); returns the pieces still running."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._in_flight and (remaining := deadline - time.monotonic()) > 0:
                self._idle.wait(remaining)
            return self._in_flight
