"""The pair rule of a blocked fuzzy round: which per-field agreements make a candidate pair a match."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PairRule:
    """How a blocked fuzzy round's row (a candidate pair) matches: a DNF over comparison groups.

    The row's comparisons form consecutive groups of ``group_sizes``; a group agrees when any of
    its comparisons is zero; the row matches when all groups of some term agree (docs/protocol.md,
    "K evaluates the match rule on the per-field agreement bits").
    """

    group_sizes: tuple[int, ...]
    terms: tuple[tuple[int, ...], ...]

    def fired(self, zeros: list[bool]) -> list[int]:
        """Indices of the terms that hold for one row's zero-test results."""
        agrees, start = [], 0
        for size in self.group_sizes:
            agrees.append(any(zeros[start:start + size]))
            start += size
        return [t for t, term in enumerate(self.terms) if all(agrees[g] for g in term)]
