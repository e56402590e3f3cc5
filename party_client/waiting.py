"""Telling the user what a wait is for and how long it may last (no silent waits).

A wait says nothing for its first ~2 s, then prints one line and another every ~10 s
(stderr, through tqdm so progress bars stay intact; with a timestamp when stderr is not a terminal).
"""
from __future__ import annotations

import sys
import time
from typing import Callable

from tqdm import tqdm

FIRST_AFTER = 2.0
EVERY = 10.0


def human_seconds(seconds: float) -> str:
    """``580`` -> ``9 min 40 s``; ``3540`` -> ``59 min``; ``28.3`` -> ``28 s``."""
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours} h"] * bool(hours) + [f"{minutes} min"] * bool(minutes) + [f"{secs} s"] * bool(secs)
    return " ".join(parts[:2]) or "0 s"


def stderr_line(text: str) -> None:
    stamp = "" if sys.stderr.isatty() else time.strftime("%Y-%m-%d %H:%M:%S ")
    tqdm.write(f"party: {stamp}{text}", file=sys.stderr)
    sys.stderr.flush()


class Notice:
    """Throttled wait messages per topic: the first once the wait has lasted ``first_after`` s, then every ``every`` s."""

    def __init__(self, sink: Callable[[str], None] | None = None, first_after: float = FIRST_AFTER,
                 every: float = EVERY, clock: Callable[[], float] = time.monotonic) -> None:
        self.sink = sink or stderr_line
        self.first_after, self.every, self.clock = first_after, every, clock
        self._said: dict[str, float] = {}

    def say(self, topic: str, since: float, text: str | Callable[[], str]) -> None:
        now = self.clock()
        if now - since < self.first_after:
            return
        last = self._said.get(topic)
        if last is not None and last >= since and now - last < self.every:
            return
        self._said[topic] = now
        self.sink(text() if callable(text) else text)

    def now(self, text: str) -> None:
        """A one-off line (not a wait)."""
        self.sink(text)
