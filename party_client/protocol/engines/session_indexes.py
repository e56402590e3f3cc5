"""The per-session indexes a holder keeps across rounds, bounded by memory (docs/protocol.md, "Lookup")."""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

DEFAULT_BUDGET_BYTES = 1 << 30     # 1 GiB: 256 lookup sessions over a million rows (4 bytes per row each)


@dataclass
class _Entry:
    parameters: Any
    value: Any
    size: int
    expires_at: float


def footprint(value: Any) -> int:
    """The bytes an index holds: its numpy arrays (an index is an array or a tuple of them)."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (tuple, list)):
        return sum(footprint(part) for part in value)
    return 0


class SessionIndexes:
    """Indexes keyed by session, each built once and kept while its session lives.

    Builds of different sessions run at once (each under its own lock, outside the cache's lock:
    numpy releases the GIL); rounds of one session wait for its single build.  An entry leaves
    when its session's key expires, or, when the indexes exceed ``budget_bytes``, least recently
    used first (a session dropped this way is rebuilt at its next round).
    """

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        self.budget_bytes = budget_bytes
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._building: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self.builds = 0

    def _hit(self, session_id: str, parameters: Any) -> _Entry | None:
        entry = self._entries.get(session_id)
        if entry is None or entry.parameters != parameters:
            return None
        self._entries.move_to_end(session_id)
        return entry

    def get(self, session_id: str, parameters: Any, build: Callable[[], Any], expires_at: float = 0.0) -> Any:
        """``build()`` for this session and parameters, built once and kept until ``expires_at``
        (0: no expiry known) or until memory runs short."""
        with self._lock:
            entry = self._hit(session_id, parameters)
            if entry is not None:
                return entry.value
            building = self._building.setdefault(session_id, threading.Lock())
        with building:
            with self._lock:
                entry = self._hit(session_id, parameters)
                if entry is not None:
                    return entry.value
            value = build()
            with self._lock:
                self.builds += 1
                self._entries[session_id] = _Entry(parameters, value, footprint(value), expires_at)
                self._evict(keep=session_id)
                self._building.pop(session_id, None)
        return value

    def _evict(self, keep: str) -> None:
        now = time.time()
        for session_id in [s for s, e in self._entries.items() if e.expires_at and e.expires_at <= now]:
            del self._entries[session_id]
        if keep in self._entries and self._entries[keep].size > self.budget_bytes:
            del self._entries[keep]                  # larger than the whole budget: used once, not kept
        while self.bytes > self.budget_bytes:
            self._entries.popitem(last=False)         # least recently used first (the new one is the last)

    @property
    def bytes(self) -> int:
        return sum(entry.size for entry in self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, session_id: str) -> bool:
        return session_id in self._entries
