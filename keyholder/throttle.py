"""A per-address throttle of failed authentications (the key holder's answer to token guessing)."""
from __future__ import annotations

import math
import threading
import time
from collections import deque

from keyholder.errors import ServiceError


class FailureThrottle:
    """Failed authentications per peer address: above ``limit`` within ``window`` seconds the
    address is refused without checking until the oldest failure ages out (OWASP Authentication
    Cheat Sheet, "Protect against automated attacks")."""

    MAX_PEERS = 10_000

    def __init__(self, limit: int, window: float) -> None:
        self.limit, self.window = limit, window
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, peer: str, now: float) -> deque[float]:
        times = self._failures.setdefault(peer, deque())
        while times and times[0] <= now - self.window:
            times.popleft()
        return times

    def check(self, peer: str | None) -> None:
        if peer is None:
            return
        now = time.monotonic()
        with self._lock:
            times = self._recent(peer, now)
            if len(times) >= self.limit:
                wait = max(1, math.ceil(times[0] + self.window - now))
                raise ServiceError("RESOURCE_EXHAUSTED", f"too many failed authentications from this "
                                                         f"address: retry in {wait} s")
            if not times:
                self._failures.pop(peer, None)

    def failed(self, peer: str | None) -> None:
        if peer is None:
            return
        with self._lock:
            if len(self._failures) >= self.MAX_PEERS and peer not in self._failures:
                self._failures.pop(next(iter(self._failures)))
            self._recent(peer, time.monotonic()).append(time.monotonic())
