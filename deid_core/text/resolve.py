"""Overlap resolution: of overlapping spans the longest wins, then the most specific (a hint over a pattern
over a cue over a list look-up), then the earliest; the result is sorted and disjoint."""
from __future__ import annotations

import bisect
from operator import itemgetter
from typing import Iterable

from .spans import Span

_START = itemgetter(0)


def _rank(s: Span) -> tuple[int, int, int]:
    start, end, _, _, _, priority = s  # by position: a named tuple's fields are fastest so
    return start - end, -priority, start


def resolve(spans: Iterable[Span]) -> list[Span]:
    """Disjoint spans, sorted by start (see the module docstring for who wins an overlap).

    Spans that overlap no other are kept as they are; the ranking runs within each group of spans linked by
    overlaps (no span outside a group can take part in its contest), most notes having few such groups."""
    out: list[Span] = []
    group: list[Span] = []
    reach = -1
    for s in sorted(spans, key=_START):  # stable: ties keep the given order
        start, end = s[0], s[1]
        if end <= start:  # empty: never kept
            continue
        if start >= reach:
            if group:
                out += group if len(group) == 1 else _contest(group)
            group = [s]
        else:
            group.append(s)
        if end > reach:
            reach = end
    if group:
        out += group if len(group) == 1 else _contest(group)
    return out


def _contest(spans: list[Span]) -> list[Span]:
    """The winners among overlapping spans, sorted by start."""
    first = spans[0]
    if len(spans) == 2:  # most often one range found by two rules: the more specific, else the first
        second = spans[1]
        if first.start == second.start and first.end == second.end:
            return [first if first.priority >= second.priority else second]
    elif all(s.start == first.start and s.end == first.end for s in spans):  # one range found by several rules
        best = max(s.priority for s in spans)
        return [next(s for s in spans if s.priority == best)]
    starts: list[int] = []  # the kept spans, disjoint, sorted by start
    ends: list[int] = []
    kept: dict[int, Span] = {}
    for s in sorted(spans, key=_rank):
        i = bisect.bisect_right(starts, s.start)
        if i and ends[i - 1] > s.start or i < len(starts) and starts[i] < s.end:
            continue
        starts.insert(i, s.start)
        ends.insert(i, s.end)
        kept[s.start] = s
    return [kept[start] for start in starts]
