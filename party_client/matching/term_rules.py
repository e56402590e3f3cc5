"""Term rules: fuzzy, multi-field match rules over encoded fields, beside the comparison levels of
:mod:`party_client.matching.level_rules` (docs/protocol.md, "Fuzzy, multi-field matching"; El Emam &
Arbuckle, Anonymizing Health Data, ch. 12; Christen, Data Matching, 2012).

A rules file names matching variables (fields), how each is encoded, and a
rule: a boolean expression over the fields (``ssn or (sn and gn and dob)``)
or Fellegi-Sunter weights with a threshold.  Each party writes its own file
(its own column names and date formats); field names, encoders and the rule
must agree, which the holder checks through a digest.

How the rule is evaluated without showing per-field agreements to anyone:
the rule is monotone (more agreement never turns a match into a non-match),
so it equals the disjunction of its minimal conjunctions (DNF).  Each
conjunction becomes one *term*: a key made of the term's field codes,
compared exactly with the padded-cuckoo protocol.  K zero-tests each term's
comparison and forwards a holder row as soon as any term is zero, so it
evaluates the rule on the encrypted data; it sees which term fired, never
the agreement pattern of a non-matching pair, and the querier receives only
final matches.  The cost is ``h`` comparisons per holder row and term,
independent of the querier's size, with no blocking key in the clear.

Dates of birth follow the NDI rules (:func:`party_client.matching.fields.field_terms`):
terms ``{month, day}`` and ``{month, year±1}``, where the querier contributes
year - 1, year and year + 1; with ``transposed = true`` a third term matches day
and month swapped in the same year.  The rules file is read by
:mod:`party_client.matching.rules_file`.
"""
from __future__ import annotations

import ast
import hashlib
import itertools
import json
import math
import re

import numpy as np
import pandas as pd

from party_client.errors import PartyError
from party_client.matching.blocking import BlockingPass, holder_rows, plan_passes
from party_client.matching.fields import (KEY_SEPARATOR, Component, Field, Term, aligned_key, component_values,
                                          component_variants, field_codes, field_terms)
from party_client.matching.keys import BlockedHolder, BlockedQuery, HolderKeys, QuerierKeys, QuerierTable
from party_client.matching.layout import PairGroup, PairLayout

__all__ = ["Rules", "parse_boolean_rule", "fellegi_sunter_terms", "BlockingPass", "Field",
           "Component", "Term", "PairGroup", "PairLayout"]


MAX_RULE_FIELDS = 64        # [[field]] entries of a rules file
MAX_RULE_TERMS = 256        # minimal AND-terms of a rule: each costs h comparisons per holder row
MAX_FS_FIELDS = 16          # Fellegi-Sunter weights enumerate the 2^fields agreement patterns
_MAX_PRODUCT = 16 * MAX_RULE_TERMS     # candidate terms of one AND or OR before minimizing


def _too_many_terms() -> PartyError:
    return PartyError(f"the rule has more than {MAX_RULE_TERMS} minimal AND-terms (each costs comparisons "
                      "on every holder row); simplify it")


def _minimal(sets: list[frozenset]) -> list[frozenset]:
    """The minimal sets (none contains another), in O(n · MAX_RULE_TERMS): smaller sets first, each
    checked against the minimal ones kept so far; more than ``MAX_RULE_TERMS`` kept is refused."""
    kept: list[frozenset] = []
    for candidate in sorted(set(sets), key=lambda s: (len(s), sorted(map(str, s)))):
        if not any(other <= candidate for other in kept):
            kept.append(candidate)
            if len(kept) > MAX_RULE_TERMS:
                raise _too_many_terms()
    return kept


def parse_boolean_rule(expression: str, fields: set[str]) -> list[frozenset[str]]:
    """``a or (b and c)`` -> minimal DNF over field names; only and/or and names are allowed."""
    references = sum(1 for word in re.findall(r"[A-Za-z_]\w*", expression) if word not in ("and", "or"))
    if references > _MAX_PRODUCT:         # counted before parsing: a huge rule is refused in linear time
        raise PartyError(f"the rule names fields {references} times (at most {_MAX_PRODUCT}); simplify it")
    try:
        tree = ast.parse(expression, mode="eval").body
    except (SyntaxError, RecursionError, MemoryError):
        raise PartyError(f"rule '{expression[:80]}' is not a boolean expression of field names "
                         "(or is nested too deeply)") from None

    def dnf(node) -> list[frozenset[str]]:
        if isinstance(node, ast.Name):
            if node.id not in fields:
                raise PartyError(f"rule uses '{node.id}', which is not a [[field]] name")
            return [frozenset({node.id})]
        if isinstance(node, ast.BoolOp):
            parts = [dnf(value) for value in node.values]
            if isinstance(node.op, ast.Or):
                if sum(len(part) for part in parts) > _MAX_PRODUCT:
                    raise _too_many_terms()
                return _minimal([term for part in parts for term in part])
            terms = [frozenset()]
            for part in parts:                  # one factor at a time, minimized: the product stays bounded
                if len(terms) * len(part) > _MAX_PRODUCT:
                    raise _too_many_terms()
                terms = _minimal([term | other for term in terms for other in part])
            return terms
        raise PartyError(f"rule '{expression}': only field names, 'and', 'or' and parentheses are allowed")
    try:
        return dnf(tree)
    except RecursionError:
        raise PartyError(f"rule '{expression[:80]}' is nested too deeply") from None


def fellegi_sunter_terms(m: dict[str, float], u: dict[str, float], threshold: float) -> list[frozenset[str]]:
    """Minimal agreement sets whose Fellegi-Sunter weight reaches ``threshold`` (Fellegi & Sunter,
    "A theory for record linkage", JASA 1969).

    weight(S) = sum_{f in S} log2(m_f/u_f) + sum_{f not in S} log2((1-m_f)/(1-u_f)).  With m_f > u_f the
    weight grows with agreement, so the accepted sets form an up-set: its minimal sets are the DNF.
    """
    names = sorted(m)
    if len(names) > MAX_FS_FIELDS:
        raise PartyError(f"Fellegi-Sunter weights over at most {MAX_FS_FIELDS} fields ({len(names)} given)")
    for name in names:
        if not 0 < u.get(name, -1) < m[name] < 1:
            raise PartyError(f"Fellegi-Sunter field '{name}' needs 0 < u < m < 1")
    agree = {f: math.log2(m[f] / u[f]) for f in names}
    disagree = {f: math.log2((1 - m[f]) / (1 - u[f])) for f in names}
    accepted = [frozenset(subset) for size in range(len(names) + 1)
                for subset in itertools.combinations(names, size)
                if sum(agree[f] if f in subset else disagree[f] for f in names) >= threshold]
    if not accepted:
        raise PartyError("no agreement pattern reaches the Fellegi-Sunter threshold")
    if frozenset() in accepted:
        raise PartyError(f"Fellegi-Sunter threshold {threshold:g} accepts pairs that agree on nothing "
                         f"(the all-disagree weight is {sum(disagree.values()):.2f}); raise it")
    return _minimal(accepted)


class Rules:
    """A parsed rules file: fields, the rule's terms, and how to compute each side's keys."""

    def __init__(self, fields: list[Field], rule_terms: list[frozenset[str]], source: str,
                 blocking: list[BlockingPass] | None = None, compare: str = "auto") -> None:
        self.fields = {f.name: f for f in fields}
        self.source = source
        self.blocking = list(blocking or [])
        self.compare = compare
        if len(fields) > MAX_RULE_FIELDS:
            raise PartyError(f"a rules file has at most {MAX_RULE_FIELDS} [[field]] entries ({len(fields)} given)")
        expanded: list[frozenset[Component]] = []
        for term in rule_terms:
            for combo in itertools.product(*(field_terms(self.fields[name]) for name in sorted(term))):
                expanded.append(frozenset().union(*combo))
        self.terms: list[Term] = [tuple(sorted(t, key=lambda c: c.label)) for t in _minimal(expanded)]

    @property
    def spec(self) -> str:
        """Digest of what both parties must agree on (not column names or date formats)."""
        canonical = {"fields": sorted((f.name, f.encoder, f.transposed) for f in self.fields.values()),
                     "terms": [[c.label for c in term] for term in self.terms]}
        if self.blocking:
            canonical["blocking"] = [[list(b.fields), b.capacity] for b in self.blocking]
            canonical["layout"] = [layout.name for layout in self.pass_layouts()]
        return "rules/v1/" + hashlib.sha256(json.dumps(canonical).encode()).hexdigest()[:32]

    @staticmethod
    def term_name(term: Term) -> str:
        return "+".join(c.label for c in term)

    # -- per-field codes ------------------------------------------------------
    def codes(self, frame: pd.DataFrame) -> dict[str, pd.Series]:
        """Code per (field[.part]) and record; '' = missing (:func:`party_client.matching.fields.field_codes`)."""
        codes: dict[str, pd.Series] = {}
        for field in self.fields.values():
            codes.update(field_codes(field, frame))
        return codes

    def _term_keys(self, term: Term, codes: dict[str, pd.Series], querier: bool) -> pd.Series:
        """Key strings of one term, indexed by record; a record missing any part has no key."""
        keys: pd.Series | None = None
        for component in term:
            part = component_values(component, codes, querier)
            part = part[part != ""]
            if keys is None:
                keys = part
            else:
                joined = keys.rename("a").to_frame().join(part.rename("b"), how="inner")
                keys = joined["a"] + KEY_SEPARATOR + joined["b"]
        return keys

    # -- the blocked engine ---------------------------------------------------------
    def pass_terms(self, blocking: BlockingPass) -> list[int]:
        """The rule terms a pass compares: those that force its block key to agree (every pair they
        accept shares the pass's block), plus the terms no pass covers."""
        def covers(term: Term, pass_: BlockingPass) -> bool:
            labels = {c.label for c in term}
            return all(label in labels for label in self.block_labels(pass_))
        uncovered = [t for t, term in enumerate(self.terms) if not any(covers(term, b) for b in self.blocking)]
        return sorted({t for t, term in enumerate(self.terms) if covers(term, blocking)} | set(uncovered))

    def pass_layouts(self) -> list[PairLayout]:
        return [self.pair_layout(self.pass_terms(b)) for b in self.blocking]

    def pair_layout(self, term_ids: list[int] | None = None) -> PairLayout:
        """Per-term groups or per-field groups of the given terms (default: all), whichever needs fewer
        comparisons per pair (ties: terms)."""
        ids = tuple(range(len(self.terms)) if term_ids is None else term_ids)
        terms = [self.terms[t] for t in ids]
        by_term = PairLayout("terms", tuple(PairGroup(t) for t in terms), tuple((i,) for i in range(len(terms))), ids)
        components = sorted({c for t in terms for c in t}, key=lambda c: c.label)
        index = {c: i for i, c in enumerate(components)}
        by_field = PairLayout("fields", tuple(PairGroup((c,)) for c in components),
                              tuple(tuple(index[c] for c in t) for t in terms), ids)
        if self.compare == "terms" or (self.compare == "auto" and by_term.comparisons <= by_field.comparisons):
            return by_term
        return by_field

    def group_codes(self, codes: dict[str, pd.Series], querier: bool) -> dict[str, list[pd.Series]]:
        """Per group label of the passes' layouts, per variant: the key per record ('' when a part is missing)."""
        out = {}
        for group in {g for layout in self.pass_layouts() for g in layout.groups}:
            variants = []
            for combo in itertools.product(*(component_variants(c, codes, querier) for c in group.parts)):
                variants.append(aligned_key(list(combo)))
            out[group.label] = variants
        return out

    def block_labels(self, blocking: BlockingPass) -> list[str]:
        """The codes a pass's key is made of; a dob_ndi field blocks on its month."""
        return [f"{name}.month" if name in self.fields and self.fields[name].encoder == "dob_ndi" else name
                for name in blocking.fields]

    def block_keys(self, codes: dict[str, pd.Series], blocking: BlockingPass) -> pd.Series:
        """A pass's clear block key per record ('' when a part is missing)."""
        return aligned_key([codes[label] for label in self.block_labels(blocking)])

    def querier_keys(self, frame: pd.DataFrame) -> QuerierKeys:
        codes = self.codes(frame)
        if self.blocking:
            return self._blocked_querier_keys(codes, len(frame))
        tables = [QuerierTable.from_pairs(self.term_name(t), self._term_keys(t, codes, querier=True))
                  for t in self.terms]
        return QuerierKeys(len(frame), tables, self.spec)

    def holder_keys(self, frame: pd.DataFrame) -> HolderKeys:
        codes = self.codes(frame)
        if self.blocking:
            return self._blocked_holder_keys(codes, len(frame))
        values = []
        for term in self.terms:
            keys = self._term_keys(term, codes, querier=False)
            column = [None] * len(frame)
            for row, key in keys.items():
                column[row] = key
            values.append(column)
        return HolderKeys([self.term_name(t) for t in self.terms], values, self.spec)

    def _blocked_querier_keys(self, codes: dict[str, pd.Series], records: int) -> QuerierKeys:
        """The querier's passes as padded bins and its key per comparison group and record."""
        secret, passes = plan_passes(self.blocking, [self.block_keys(codes, b) for b in self.blocking])
        group_keys = {label: variants[0].tolist() for label, variants in self.group_codes(codes, querier=True).items()}
        # One "table" per rule term whose key is the record itself: a match (term, record) then maps to
        # the record like a cuckoo-table hit does, so outputs are assembled the same way.
        identity = np.arange(records, dtype=np.int64)
        tables = [QuerierTable(self.term_name(t), [str(r) for r in range(records)], identity, identity)
                  for t in self.terms]
        return QuerierKeys(records, tables, self.spec, BlockedQuery(secret, self.pass_layouts(), passes, group_keys))

    def _blocked_holder_keys(self, codes: dict[str, pd.Series], rows: int) -> HolderKeys:
        """The holder's group keys (all variants) and clear block keys per pass."""
        def column(series: pd.Series) -> list[str | None]:
            return [v if v else None for v in series.tolist()]
        group_keys = {label: [column(v) for v in variants]
                      for label, variants in self.group_codes(codes, querier=False).items()}
        block_keys = [column(self.block_keys(codes, b)) for b in self.blocking]
        present = holder_rows(block_keys, rows)
        # HolderKeys.rows = rows with a block key in some pass (rows without one are never compared).
        return HolderKeys(["blocked"], [[("" if p else None) for p in present]], self.spec,
                          BlockedHolder(self.pass_layouts(), group_keys, block_keys))
