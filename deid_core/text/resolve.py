"""Overlap resolution: of overlapping spans the longest wins, then the most specific (a hint over a pattern
over a cue over a list look-up), then the earliest; the result is sorted and disjoint. A span is any tuple of a
:class:`~deid_core.text.spans.Span`'s fields (the recognizers' plain tuples, :data:`~deid_core.text.spans.Found`, or
Spans), and the kept ones are returned as given."""
from __future__ import annotations

import bisect
from operator import itemgetter
from typing import Final, Iterable

from .spans import Found

_START: Final = itemgetter(0)


def _rank(s: Found) -> tuple[int, int, int]:
    start, end, _, _, _, priority = s
    return start - end, -priority, start


def resolve(spans: Iterable[Found]) -> list[Found]:
    """Disjoint spans, sorted by start (see the module docstring for who wins an overlap).

    Spans that overlap no other are kept as they are; the ranking runs within each group of spans linked by
    overlaps (no span outside a group can take part in its contest), most notes having few such groups."""
    out: list[Found] = []
    group: list[Found] = []
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


def _contest(spans: list[Found]) -> list[Found]:
    """The winners among overlapping spans, sorted by start."""
    first = spans[0]
    if len(spans) == 2:  # most often one range found by two rules: the more specific, else the first
        second = spans[1]
        if first[0] == second[0] and first[1] == second[1]:
            return [first if first[5] >= second[5] else second]
    elif all(s[0] == first[0] and s[1] == first[1] for s in spans):  # one range found by several rules
        best = max(s[5] for s in spans)
        return [next(s for s in spans if s[5] == best)]
    starts: list[int] = []  # the kept spans, disjoint, sorted by start
    ends: list[int] = []
    kept: dict[int, Found] = {}
    for s in sorted(spans, key=_rank):
        start, end = s[0], s[1]
        i = bisect.bisect_right(starts, start)
        if i and ends[i - 1] > start or i < len(starts) and starts[i] < end:
            continue
        starts.insert(i, start)
        ends.insert(i, end)
        kept[start] = s
    return [kept[start] for start in starts]
