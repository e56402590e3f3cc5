"""Fair turns at the key holder's zero tests: the CPU-bound work a holder asks of K.

Every batch a holder submits is zero-tested on K's thread pool.  Unchecked, one party submitting many
batches at once took every pool thread, and every other party's calls queued behind them (an honest
``GetParty`` answered in 89 s instead of 4 ms beside 64 hostile batches, 2 cores).  :class:`FairLanes`
gives at most ``total`` batches of all parties a lane at once, at most ``per_party`` of one party, and
hands a freed lane to the next party in turn (round-robin over parties, first come first served within
one), so a party with many batches waits for its own and others keep their share.  A waiting batch holds
no thread, only its place in its party's queue, which is bounded (``queue_per_party``): more is refused
with RESOURCE_EXHAUSTED and "retry in N s" (docs/operations.md, "Quotas and timeouts").

Written here because asyncio's semaphores are first come first served over all callers, which is what
let one party's burst go first; no maintained library keys an async semaphore's turns by caller.
"""
from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict, deque
from typing import AsyncIterator

from keyholder.errors import ServiceError
from keyholder.slots import RETRY_SECONDS


class FairLanes:
    """``total`` lanes shared round-robin by parties, ``per_party`` at most each; used on one event loop."""

    def __init__(self, total: int, per_party: int, queue_per_party: int, what: str = "zero-test batches",
                 flags: tuple[str, str] = ("--max-zero-tests", "--max-zero-tests-queued")) -> None:
        if total < 1 or per_party < 1 or queue_per_party < 0:
            raise ValueError("total and per_party must be at least 1, queue_per_party at least 0")
        self.total, self.per_party, self.queue_per_party = total, per_party, queue_per_party
        self.what, self.flags = what, flags
        self._running: dict[str, int] = {}
        self._waiting: OrderedDict[str, deque[asyncio.Future]] = OrderedDict()   # parties in turn order

    @property
    def busy(self) -> int:
        return sum(self._running.values())

    def running(self, party: str) -> int:
        return self._running.get(party, 0)

    @contextlib.asynccontextmanager
    async def turn(self, party: str) -> AsyncIterator[None]:
        """Wait for ``party``'s turn (no thread waits), hold a lane for the body, give it to the next."""
        await self._acquire(party)
        try:
            yield
        finally:
            self._release(party)

    async def _acquire(self, party: str) -> None:
        if not self._waiting and self.busy < self.total and self.running(party) < self.per_party:
            self._running[party] = self.running(party) + 1
            return
        queue = self._waiting.get(party)
        if queue is not None and len(queue) >= self.queue_per_party or queue is None and not self.queue_per_party:
            raise ServiceError("RESOURCE_EXHAUSTED",
                               f"{self.queue_per_party} {self.what} of '{party}' already wait for the key holder "
                               f"({self.flags[1]}): retry in {RETRY_SECONDS} s", retry_after=RETRY_SECONDS)
        ticket = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(party, deque()).append(ticket)
        self._dispatch()                     # a lane may be free for this party while others wait at their cap
        try:
            await ticket
        except asyncio.CancelledError:
            if ticket.done() and not ticket.cancelled():     # granted as the caller went: give the lane on
                self._release(party)
            else:
                self._forget(party, ticket)
            raise

    def _release(self, party: str) -> None:
        left = self._running[party] - 1
        if left:
            self._running[party] = left
        else:
            del self._running[party]
        self._dispatch()

    def _dispatch(self) -> None:
        """Give free lanes to waiting parties in turn: each pass serves a party once, then moves it last."""
        while self.busy < self.total:
            party = next((p for p in self._waiting if self.running(p) < self.per_party), None)
            if party is None:
                return
            queue = self._waiting.pop(party)
            ticket = queue.popleft()
            if queue:
                self._waiting[party] = queue                  # back of the line
            self._running[party] = self.running(party) + 1
            ticket.set_result(None)

    def _forget(self, party: str, ticket: asyncio.Future) -> None:
        queue = self._waiting.get(party)
        if queue is not None:
            with contextlib.suppress(ValueError):
                queue.remove(ticket)
            if not queue:
                del self._waiting[party]
