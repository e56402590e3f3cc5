"""Connections each party holds at the key holder: at most ``per_party`` of one party in use at once,
so that no party can take the connections (file descriptors) every other party needs (docs/operations.md,
"Quotas and timeouts").

gRPC gives a servicer no handle on a connection, only the caller's address and port, which name it
(``context.peer()``); nor a way to close one.  So the cap is kept on calls: a call of a party on a
connection it has not used before is refused while the party already uses ``per_party`` others.  A
connection counts as used while a call of the party runs on it and for ``idle`` seconds after its last
call ends, the time after which the server closes a connection with no call
(``grpc.max_connection_idle_ms``, set to the same ``idle``).  A refused connection carries no call, so
the server closes it; its descriptor is free again.  Connections that never make an authenticated call
belong to no party: they count only against the server's cap on all connections
(``grpc.max_allowed_incoming_connections``), below the process's descriptor limit
(:func:`keyholder.slots.connection_budget`).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

from keyholder.errors import ServiceError
from keyholder.slots import RETRY_SECONDS


class Connections:
    """The connections in use per party (see the module docstring); thread-safe."""

    def __init__(self, per_party: int, idle: float, flag: str = "",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.per_party, self.idle, self.flag, self._clock = per_party, idle, flag, clock
        self._calls: dict[tuple[str, str], int] = {}        # (party, connection) -> calls running on it
        self._ended: dict[tuple[str, str], float] = {}      # (party, connection) -> when its last call ended
        self._lock = threading.Lock()

    def call(self, connection: str) -> "Call":
        """A call arriving on ``connection`` (``context.peer()``); :meth:`Call.enter` once authenticated."""
        return Call(self, connection)

    def in_use(self, party: str) -> int:
        """Connections ``party`` uses now (calls running, or ended less than ``idle`` seconds ago)."""
        with self._lock:
            return len(self._used(party, self._clock()))

    def _used(self, party: str, now: float) -> set[str]:
        for key in [k for k, ended in self._ended.items() if now - ended >= self.idle]:
            del self._ended[key]
        return {c for p, c in (*self._calls, *self._ended) if p == party}

    def _enter(self, party: str, connection: str) -> None:
        key = (party, connection)
        with self._lock:
            used = self._used(party, self._clock())
            if connection not in used and len(used) >= self.per_party:
                raise ServiceError(
                    "RESOURCE_EXHAUSTED",
                    f"{self.per_party} connections of '{party}' are already in use"
                    f"{f' ({self.flag})' if self.flag else ''}: retry in {RETRY_SECONDS} s",
                    retry_after=RETRY_SECONDS)
            self._calls[key] = self._calls.get(key, 0) + 1
            self._ended.pop(key, None)

    def _leave(self, party: str, connection: str) -> None:
        key = (party, connection)
        with self._lock:
            left = self._calls.get(key, 0) - 1
            if left > 0:
                self._calls[key] = left
            else:
                self._calls.pop(key, None)
                self._ended[key] = self._clock()


class Call:
    """One call's use of its connection: :meth:`enter` (the party known) may refuse it; :meth:`end`
    (when the call is over, whatever happened) gives the use back if it was taken."""

    def __init__(self, connections: Connections, connection: str) -> None:
        self._connections, self._connection = connections, connection
        self._party: str | None = None
        self._over = False          # ended before it entered (cancelled while authenticating): never enters
        self._lock = threading.Lock()

    def enter(self, party: str) -> None:
        with self._lock:
            if self._party is None and not self._over:
                self._connections._enter(party, self._connection)
                self._party = party

    def end(self) -> None:
        with self._lock:
            party, self._party, self._over = self._party, None, True
        if party is not None:
            self._connections._leave(party, self._connection)
