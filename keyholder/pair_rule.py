"""The pair rule of a blocked fuzzy round: which per-field agreements make a candidate pair a match (a
boolean DNF over comparison groups, or Fellegi-Sunter weights over comparison levels)."""
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
    weighted: "WeightedRule | None" = None

    def fired(self, zeros: list[bool]) -> list[int]:
        """Indices of the terms that hold for one row's zero-test results (weighted: the groups that
        decided each field, when the weight reaches the threshold)."""
        agrees, start = [], 0
        for size in self.group_sizes:
            agrees.append(any(zeros[start:start + size]))
            start += size
        if self.weighted is not None:
            return self.weighted.decided(agrees)
        return [t for t, term in enumerate(self.terms) if all(agrees[g] for g in term)]


@dataclass(frozen=True)
class WeightedRule:
    """Fellegi-Sunter over comparison levels (docs/protocol.md, "Comparison levels"): a field's
    outcome is its first agreeing group, or its else weight; a row matches when the weights' sum
    reaches the threshold (integers: thousandths of a bit)."""

    group_fields: tuple[int, ...]
    group_weights: tuple[int, ...]
    field_else: tuple[int, ...]
    threshold: int

    def decided(self, agrees: list[bool]) -> list[int]:
        """The first agreeing group of each field that has one, if the total reaches the threshold."""
        chosen: dict[int, int] = {}
        for group, (field, agree) in enumerate(zip(self.group_fields, agrees)):
            if agree and field not in chosen:
                chosen[field] = group
        total = sum(self.group_weights[chosen[f]] if f in chosen else weight
                    for f, weight in enumerate(self.field_else))
        return sorted(chosen.values()) if total >= self.threshold and chosen else []
