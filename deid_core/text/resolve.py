"""Overlap resolution: of overlapping spans the longest wins, then the most specific (a hint over a pattern
over a cue over a list look-up), then the earliest; the result is sorted and disjoint."""
from __future__ import annotations

import bisect
from typing import Iterable

from .spans import Span


def _rank(s: Span) -> tuple[int, int, int]:
    start, end, _, _, _, priority = s  # by position: a named tuple's fields are fastest so
    return start - end, -priority, start


def resolve(spans: Iterable[Span]) -> list[Span]:
    """Disjoint spans, sorted by start (see the module docstring for who wins an overlap)."""
    ranked = sorted(spans, key=_rank)
    starts: list[int] = []  # the kept spans, disjoint, sorted by start
    ends: list[int] = []
    kept: dict[int, Span] = {}
    for s in ranked:
        i = bisect.bisect_right(starts, s.start)
        if s.end <= s.start or i and ends[i - 1] > s.start or i < len(starts) and starts[i] < s.end:
            continue
        starts.insert(i, s.start)
        ends.insert(i, s.end)
        kept[s.start] = s
    return [kept[start] for start in starts]
