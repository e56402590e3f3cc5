"""Telling the user what a wait is for and how long it may last (no silent waits).

A wait says nothing for its first ~2 s, then prints one line, and again after 10 s, 30 s and 1 min,
then every 5 min (a 10-minute wait: 5 lines, not 60); each notice is one stderr line, through tqdm so
progress bars stay intact, with a timestamp when stderr is not a terminal.
"""
from __future__ import annotations

import sys
import time
from typing import Callable

from tqdm import tqdm

FIRST_AFTER = 2.0
#: The gaps between a wait's notices: the n-th repeat comes BACKOFF[n] s after the previous (the last repeats).
BACKOFF = (10.0, 30.0, 60.0, 300.0)
#: How often a long poll returns to check on the wait (the notices themselves follow :data:`BACKOFF`).
EVERY = BACKOFF[0]


def human_seconds(seconds: float) -> str:
    """``580`` -> ``9 min 40 s``; ``3540`` -> ``59 min``; ``28.3`` -> ``28 s``."""
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours} h"] * bool(hours) + [f"{minutes} min"] * bool(minutes) + [f"{secs} s"] * bool(secs)
    return " ".join(parts[:2]) or "0 s"


class TimeLeft:
    """Time left of a job seen as a share in steps (the holder's round, in 10 % steps): the rate since
    the job was first seen under way, applied to the share left; None before the first step."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock, self.started = clock, None

    def seconds(self, under_way: bool, percent: int) -> float | None:
        now = self.clock()
        if under_way and self.started is None:
            self.started = now
        if self.started is None or percent <= 0 or now <= self.started:
            return None
        return (now - self.started) * (100 - percent) / percent


def stderr_line(text: str) -> None:
    stamp = "" if sys.stderr.isatty() else time.strftime("%Y-%m-%d %H:%M:%S ")
    tqdm.write(f"party: {stamp}{text}", file=sys.stderr)
    sys.stderr.flush()


class Notice:
    """Wait messages per topic: the first once the wait has lasted ``first_after`` s, then after each gap of
    ``backoff`` in turn, the last gap repeating."""

    def __init__(self, sink: Callable[[str], None] | None = None, first_after: float = FIRST_AFTER,
                 backoff: tuple[float, ...] = BACKOFF, clock: Callable[[], float] = time.monotonic) -> None:
        self.sink = sink or stderr_line
        self.first_after, self.backoff, self.clock = first_after, tuple(backoff), clock
        self._said: dict[str, tuple[float, int]] = {}  # topic -> (last notice, notices of this wait)

    def say(self, topic: str, since: float, text: str | Callable[[], str]) -> None:
        now = self.clock()
        if now - since < self.first_after:
            return
        last, count = self._said.get(topic, (None, 0))
        if last is not None and last >= since:  # the same wait: the next gap of the backoff
            if now - last < self.backoff[min(count - 1, len(self.backoff) - 1)]:
                return
        else:
            count = 0
        self._said[topic] = (now, count + 1)
        self.sink(text() if callable(text) else text)

    def now(self, text: str) -> None:
        """A one-off line (not a wait)."""
        self.sink(text)
