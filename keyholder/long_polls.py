"""Long-polls at the key holder: async waits for a change of what a call is waiting on (a session's
rounds, a holder's work list, an upload that grows), woken by the core's change notices and holding
no thread, at most ``Limits.max_waits`` per party (:mod:`keyholder.slots`)."""
from __future__ import annotations

import asyncio
import contextlib
import time
from typing import AsyncIterator, Callable, TypeVar

from keyholder.errors import ServiceError
from keyholder.limits import Limits
from keyholder.pool import on_pool
from keyholder.slots import Slots

T = TypeVar("T")
RECHECK_SECONDS = 5.0                     # a long-poll looks again at least this often


class Changes:
    """Wakes the async long-polls when the core reports a change (from any thread), only those waiting
    on what changed: a session's rounds (``WaitRound``) or a holder's work list (``ListWork``).

    A waiter takes :meth:`event` for its key (inside :meth:`watch`) before it looks at the state, so a
    change between its look and its wait still wakes it.  A change naming no key wakes every waiter.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._events: dict[str, asyncio.Event] = {}
        self._watchers: dict[str, int] = {}

    @contextlib.contextmanager
    def watch(self, key: str):
        """Count a waiter on ``key`` (on the event loop); the key's event goes with its last waiter."""
        self._watchers[key] = self._watchers.get(key, 0) + 1
        try:
            yield
        finally:
            left = self._watchers.pop(key) - 1
            if left:
                self._watchers[key] = left
            else:
                self._events.pop(key, None)

    def event(self, key: str) -> asyncio.Event:
        """The event set at the next change of ``key`` (take it before looking)."""
        event = self._events.get(key)
        if event is None:
            event = self._events[key] = asyncio.Event()
        return event

    def notify(self, keys: tuple[str, ...] = ()) -> None:
        self.loop.call_soon_threadsafe(self._fire, keys)

    def _fire(self, keys: tuple[str, ...]) -> None:
        for key in keys or list(self._events):
            event = self._events.pop(key, None)
            if event is not None:
                event.set()


class LongPolls:
    """The waits of one server, on its event loop: each looks on the pool (:mod:`keyholder.pool`) when
    what it waits on changes (:class:`Changes`), and at least every :data:`RECHECK_SECONDS`."""

    def __init__(self, changes: Changes, limits: Limits, stopping: Callable[[], bool]) -> None:
        self.changes = changes
        self.waits = Slots("long-polls", limits.max_waits, held="waiting")
        self.stopping = stopping          # the key holder is stopping: waits end with what there is

    async def wait(self, party: str, key: str, wait: float, ready: Callable[[], T | None],
                   looked: asyncio.Event | None = None) -> T | None:
        """Check ``ready`` on the pool until it gives something or ``wait`` seconds pass; one of
        ``party``'s waits.  It looks again when ``key`` changes.  ``looked``: the caller has just looked,
        after taking this event of ``key``, so the first look is skipped."""
        deadline = time.monotonic() + wait
        with self.waits.hold(party), self.changes.watch(key):
            event = looked
            while True:
                if event is None:
                    event = self.changes.event(key)
                    value = await on_pool(ready)
                    if value:
                        return value
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.stopping():
                    return None
                try:
                    await asyncio.wait_for(event.wait(), min(remaining, RECHECK_SECONDS))
                except asyncio.TimeoutError:
                    pass
                event = None

    async def follow(self, key: str, read: Callable[[], bytes | None]) -> AsyncIterator[bytes]:
        """What ``read()`` (on the pool) gives each time ``key`` changes, until it gives ``None``: a
        growing upload read as it grows (``b""``: nothing new yet).  UNAVAILABLE when the key holder is
        stopping; ``read``'s refusals are raised as they are."""
        with self.changes.watch(key):
            while True:
                event = self.changes.event(key)
                data = await on_pool(read)
                if data:
                    yield data
                elif data is None:
                    return
                elif self.stopping():
                    raise ServiceError("UNAVAILABLE", "the key holder is stopping")
                else:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(event.wait(), RECHECK_SECONDS)
