"""Caps on the calls a party holds open at the key holder at once (long-polls, streams), per party and
in total, so that no party can take what every other party needs (docs/operations.md, "Quotas and
timeouts").

A call takes a :class:`Slot` before it waits or opens anything and gives it back when it ends; above a
cap it is refused with RESOURCE_EXHAUSTED and "retry in N s" (back-pressure the party clients wait out).
"""
from __future__ import annotations

import resource
import threading

from keyholder.errors import ServiceError

RETRY_SECONDS = 1             # what a refused caller is told to wait; its own backoff lengthens it
FDS_KEPT = 256                # descriptors kept for the store, key workers' pipes, the listener and the log
MAX_STREAMS_TOTAL = 4096


def _descriptors(limit: int | None) -> int:
    """File descriptors the process may open beyond :data:`FDS_KEPT` (``limit``: ``RLIMIT_NOFILE``, soft,
    unless given)."""
    if limit is None:
        limit, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if limit == resource.RLIM_INFINITY:
        limit = 2 * MAX_STREAMS_TOTAL + FDS_KEPT
    return max(0, limit - FDS_KEPT)


def stream_budget(limit: int | None = None) -> int:
    """Streams all parties may hold open at once, below the process's file-descriptor limit: a stream
    may hold a spool file, so half of the descriptors beyond :data:`FDS_KEPT`, at least 16, at most
    :data:`MAX_STREAMS_TOTAL`."""
    return max(16, min(MAX_STREAMS_TOTAL, _descriptors(limit) // 2))


def connection_budget(limit: int | None = None) -> int:
    """Connections the server accepts at once: the other half of the descriptors beyond
    :data:`FDS_KEPT` (each connection is a socket), at least 16, at most :data:`MAX_STREAMS_TOTAL`."""
    return max(16, min(MAX_STREAMS_TOTAL, _descriptors(limit) - _descriptors(limit) // 2))


class Slots:
    """Concurrent calls of one kind (``what``, e.g. "long-polls"): at most ``per_party`` of one party
    and (``total`` given) ``total`` of all parties; ``flags`` name the options that set the caps."""

    def __init__(self, what: str, per_party: int, total: int | None = None, held: str = "open",
                 flags: tuple[str, str] = ("", "")) -> None:
        self.what, self.per_party, self.total, self.held, self.flags = what, per_party, total, held, flags
        self._held: dict[str, int] = {}
        self._count = 0
        self._lock = threading.Lock()

    def hold(self, party: str) -> "Slot":
        """Take a slot for ``party`` (a context manager giving it back), or refuse the call."""
        with self._lock:
            if self._held.get(party, 0) >= self.per_party:
                self._refuse(f"{self.per_party} {self.what} of '{party}' are already {self.held}", self.flags[0])
            if self.total is not None and self._count >= self.total:
                self._refuse(f"{self.total} {self.what} of all parties are {self.held} at the key holder, its most",
                             self.flags[1])
            self._held[party] = self._held.get(party, 0) + 1
            self._count += 1
        return Slot(self, party)

    def _refuse(self, said: str, flag: str) -> None:
        raise ServiceError("RESOURCE_EXHAUSTED", f"{said}{f' ({flag})' if flag else ''}: retry in {RETRY_SECONDS} s",
                           retry_after=RETRY_SECONDS)

    def _give_back(self, party: str) -> None:
        with self._lock:
            self._count -= 1
            self._held[party] -= 1
            if not self._held[party]:
                del self._held[party]


class Slot:
    """One call's place under :class:`Slots`; given back once, by :meth:`release` or on leaving ``with``."""

    def __init__(self, slots: Slots, party: str) -> None:
        self._slots, self._party, self._released = slots, party, False

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._slots._give_back(self._party)

    def __enter__(self) -> "Slot":
        return self

    def __exit__(self, *exc) -> None:
        self.release()
