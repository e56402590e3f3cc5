"""What the blocked engine compares per candidate pair, and how K combines it.

A rule in disjunctive normal form is decided per pair either term by term (one
comparison group per term; K learns only which terms agree) or field by field
(one group per component, "one comparison per matching variable" in El Emam &
Arbuckle, Anonymizing Health Data, ch. 12; K learns per-field agreement bits of
candidate pairs).  docs/protocol.md, "Fuzzy, multi-field matching".
"""
from __future__ import annotations

from dataclasses import dataclass

from party_client.matching.fields import Term


@dataclass(frozen=True)
class PairGroup:
    """One comparison group of the blocked engine: a conjunction of components compared as one key.

    The holder contributes one key per variant (3 per ``year~1`` part: year - 1, year, year + 1);
    the group agrees when any variant equals the querier's key.
    """

    parts: Term

    @property
    def label(self) -> str:
        return "+".join(c.label for c in self.parts)

    @property
    def variants(self) -> int:
        return 3 ** sum(c.part == "year~1" for c in self.parts)

    @property
    def domains(self) -> tuple[str, ...]:
        """The encoding domain of each querier key the group compares with (one: its label)."""
        return (self.label,)


@dataclass(frozen=True)
class PairLayout:
    """What is compared per candidate pair and how K combines it (``keyholder.pair_rule.PairRule``).

    ``terms``: one group per rule term, the rule is "any group"; ``fields``: one group per
    component, the rule's terms over them.
    """

    kind: str
    groups: tuple[PairGroup, ...]
    terms: tuple[tuple[int, ...], ...]
    term_ids: tuple[int, ...]          # the rule's term index of each of ``terms``
    # ``levels`` (:mod:`party_client.matching.level_rules`): per group its field, its weight, per field
    # its else weight and the threshold, K's weighted rule instead of terms
    weighted: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], int] | None = None

    @property
    def group_sizes(self) -> list[int]:
        return [g.variants for g in self.groups]

    @property
    def comparisons(self) -> int:
        return sum(self.group_sizes)

    @property
    def slot_domains(self) -> list[str]:
        """The querier's ciphertexts per entry, by encoding domain: each group's, shared where groups
        compare with the same key (comparison levels of one field)."""
        return list(dict.fromkeys(d for g in self.groups for d in g.domains))

    @property
    def slots(self) -> int:
        return len(self.slot_domains)

    def slot_positions(self) -> list[list[int]]:
        """Per group, the entry position of each of its querier keys."""
        index = {d: i for i, d in enumerate(self.slot_domains)}
        return [[index[d] for d in g.domains] for g in self.groups]

    @property
    def name(self) -> str:
        return f"{self.kind}/{'.'.join(map(str, self.term_ids))}/{len(self.groups)}"
