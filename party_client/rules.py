"""Fuzzy, multi-field match rules (docs/protocol.md, "Fuzzy, multi-field matching";
book ch. 12, "Matching on the Unknown").

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

Dates of birth follow the NDI rules (same month and year; same month and
day; same month and year within one year): terms ``{month, day}`` and
``{month, year±1}``, where the querier contributes year - 1, year and
year + 1 (book: "day, month, year - 1, year, and year + 1").  With
``transposed = true`` a third term matches day and month swapped in the same
year.  Day/month order is never guessed: each party declares its format.
"""
from __future__ import annotations

import ast
import hashlib
import itertools
import json
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

import jellyfish
import pandas as pd

from party_client.errors import PartyError
from party_client.keys import KEY_SEPARATOR, HolderKeys, QuerierKeys, QuerierTable
from party_client.normalize import normalize_identifiers, normalize_names

ENCODERS = ("exact", "name", "soundex", "nysiis", "metaphone", "initial", "dob_ndi")
PHONETIC = {"soundex": jellyfish.soundex, "nysiis": jellyfish.nysiis, "metaphone": jellyfish.metaphone}


@dataclass(frozen=True)
class BlockingPass:
    """One ``[[blocking]]`` pass: its key's fields; keyed buckets (given, or the most the risk allows) or clear."""

    fields: tuple[str, ...]
    buckets: int | None = None
    clear: bool = False

    @property
    def name(self) -> str:
        return "+".join(self.fields)


@dataclass(frozen=True)
class RiskPolicy:
    """``[risk]``: the threshold for what travels in the clear, and the population behind the data."""

    max: float = 0.05
    population: int | None = None


@dataclass(frozen=True)
class Field:
    name: str
    column: str
    encoder: str
    date_format: str | None = None
    transposed: bool = False


@dataclass(frozen=True)
class Component:
    """One atomic equality: a field, or one part of a date (``day``, ``month``, ``year``, ``year~1``, ``swap``)."""

    field: str
    part: str = ""

    @property
    def label(self) -> str:
        return f"{self.field}.{self.part}" if self.part else self.field


Term = tuple[Component, ...]


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


@dataclass(frozen=True)
class PairLayout:
    """What is compared per candidate pair and how K combines it (``keyholder.sessions.PairRule``).

    ``terms``: one group per rule term, the rule is "any group" (K learns only which terms
    agree); ``fields``: one group per component, the rule's terms over them (the book's "one
    comparison per matching variable"; K learns per-field agreement bits of candidate pairs).
    """

    kind: str
    groups: tuple[PairGroup, ...]
    terms: tuple[tuple[int, ...], ...]
    term_ids: tuple[int, ...]          # the rule's term index of each of ``terms``

    @property
    def group_sizes(self) -> list[int]:
        return [g.variants for g in self.groups]

    @property
    def comparisons(self) -> int:
        return sum(self.group_sizes)

    @property
    def name(self) -> str:
        return f"{self.kind}/{'.'.join(map(str, self.term_ids))}/{len(self.groups)}"


def _field_terms(field: Field) -> list[frozenset[Component]]:
    """A field's agreement as a DNF over components."""
    if field.encoder != "dob_ndi":
        return [frozenset({Component(field.name)})]
    terms = [frozenset({Component(field.name, "month"), Component(field.name, "day")}),
             frozenset({Component(field.name, "month"), Component(field.name, "year~1")})]
    if field.transposed:
        terms.append(frozenset({Component(field.name, "swap"), Component(field.name, "year")}))
    return terms


def _minimal(sets: list[frozenset]) -> list[frozenset]:
    unique = sorted(set(sets), key=lambda s: (len(s), sorted(map(str, s))))
    return [s for s in unique if not any(other < s for other in unique)]


def parse_boolean_rule(expression: str, fields: set[str]) -> list[frozenset[str]]:
    """``a or (b and c)`` -> minimal DNF over field names; only and/or and names are allowed."""
    try:
        tree = ast.parse(expression, mode="eval").body
    except SyntaxError:
        raise PartyError(f"rule '{expression}' is not a boolean expression of field names") from None

    def dnf(node) -> list[frozenset[str]]:
        if isinstance(node, ast.Name):
            if node.id not in fields:
                raise PartyError(f"rule uses '{node.id}', which is not a [[field]] name")
            return [frozenset({node.id})]
        if isinstance(node, ast.BoolOp):
            parts = [dnf(value) for value in node.values]
            if isinstance(node.op, ast.Or):
                return _minimal([term for part in parts for term in part])
            return _minimal([frozenset().union(*combo) for combo in itertools.product(*parts)])
        raise PartyError(f"rule '{expression}': only field names, 'and', 'or' and parentheses are allowed")
    return dnf(tree)


def fellegi_sunter_terms(m: dict[str, float], u: dict[str, float], threshold: float) -> list[frozenset[str]]:
    """Minimal agreement sets whose Fellegi-Sunter weight reaches ``threshold``.

    weight(S) = sum_{f in S} log2(m_f/u_f) + sum_{f not in S} log2((1-m_f)/(1-u_f)).  With m_f > u_f the
    weight grows with agreement, so the accepted sets form an up-set: its minimal sets are the DNF.
    """
    names = sorted(m)
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


def _aligned_key(parts: list[pd.Series]) -> pd.Series:
    """One key per record from parts aligned on the record index; '' when any part is missing."""
    key = parts[0]
    for part in parts[1:]:
        key = key + KEY_SEPARATOR + part
    missing = pd.concat([(part == "") for part in parts], axis=1).any(axis=1)
    return key.where(~missing, "")


class Rules:
    """A parsed rules file: fields, the rule's terms, and how to compute each side's keys."""

    def __init__(self, fields: list[Field], field_terms: list[frozenset[str]], source: str,
                 blocking: list[BlockingPass] | None = None, risk: RiskPolicy | None = None,
                 compare: str = "auto") -> None:
        self.fields = {f.name: f for f in fields}
        self.source = source
        self.blocking = list(blocking or [])
        self.risk = risk or RiskPolicy()
        self.compare = compare
        expanded: list[frozenset[Component]] = []
        for term in field_terms:
            for combo in itertools.product(*(_field_terms(self.fields[name]) for name in sorted(term))):
                expanded.append(frozenset().union(*combo))
        self.terms: list[Term] = [tuple(sorted(t, key=lambda c: c.label)) for t in _minimal(expanded)]

    @property
    def spec(self) -> str:
        """Digest of what both parties must agree on (not column names or date formats)."""
        canonical = {"fields": sorted((f.name, f.encoder, f.transposed) for f in self.fields.values()),
                     "terms": [[c.label for c in term] for term in self.terms]}
        if self.blocking:
            canonical["blocking"] = [[list(b.fields), b.buckets, b.clear] for b in self.blocking]
            canonical["layout"] = [layout.name for layout in self.pass_layouts()]
        return "rules/v1/" + hashlib.sha256(json.dumps(canonical).encode()).hexdigest()[:32]

    @staticmethod
    def term_name(term: Term) -> str:
        return "+".join(c.label for c in term)

    # -- per-field codes ------------------------------------------------------
    def codes(self, frame: pd.DataFrame) -> dict[str, pd.Series]:
        """Code per (field[.part]) and record; '' = missing.  Vectorized except the phonetic call."""
        codes: dict[str, pd.Series] = {}
        for field in self.fields.values():
            if field.column not in frame.columns:
                raise PartyError(f"rules field '{field.name}': column '{field.column}' not in the input "
                                 f"(columns: {', '.join(map(str, frame.columns))})")
            column = frame[field.column].reset_index(drop=True)
            if field.encoder == "exact":
                codes[field.name] = normalize_identifiers(column)
            elif field.encoder == "dob_ndi":
                codes.update(self._date_parts(field, column))
            else:
                names = normalize_names(column)
                if field.encoder == "name":
                    codes[field.name] = names
                elif field.encoder == "initial":
                    codes[field.name] = names.str[:1]
                else:
                    encode = PHONETIC[field.encoder]
                    distinct = pd.unique(names)
                    lookup = {v: (encode(v) if v else "") for v in distinct}
                    codes[field.name] = names.map(lookup)
        return codes

    @staticmethod
    def _date_parts(field: Field, column: pd.Series) -> dict[str, pd.Series]:
        """Day, month and year as text ('' when missing or unparseable), parsed with the declared format."""
        text = column.astype("string").fillna("").str.strip()
        dates = pd.to_datetime(text, format=field.date_format, errors="coerce")
        if int((text != "").sum()) and not dates.notna().any():
            raise PartyError(f"rules field '{field.name}': no value of column '{field.column}' matches "
                             f"date_format '{field.date_format}'")

        def text_of(values: pd.Series) -> pd.Series:
            return values.astype("Int64").astype("string").fillna("").astype(object)
        return {f"{field.name}.day": text_of(dates.dt.day), f"{field.name}.month": text_of(dates.dt.month),
                f"{field.name}.year": text_of(dates.dt.year), f"{field.name}.__year": dates.dt.year.astype("Int64")}

    @staticmethod
    def _component(component: Component, codes: dict[str, pd.Series], querier: bool) -> pd.Series:
        """One component's values per record (the querier may contribute several)."""
        if component.part == "year~1":
            year = codes[f"{component.field}.__year"].dropna()
            if not querier:
                return year.astype(str)
            return pd.concat([(year + delta).astype(str) for delta in (-1, 0, 1)]).sort_index(kind="stable")
        if component.part == "swap":
            day, month = codes[f"{component.field}.day"], codes[f"{component.field}.month"]
            first, second = (day, month) if querier else (month, day)
            return (first + "/" + second).where((day != "") & (month != ""), "")
        return codes[component.label]

    def _term_keys(self, term: Term, codes: dict[str, pd.Series], querier: bool) -> pd.Series:
        """Key strings of one term, indexed by record; a record missing any part has no key."""
        keys: pd.Series | None = None
        for component in term:
            part = self._component(component, codes, querier)
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

    @staticmethod
    def _part_variants(component: Component, codes: dict[str, pd.Series], querier: bool) -> list[pd.Series]:
        """A component's code per record: the querier's one value, the holder's variants."""
        if component.part == "year~1":
            year = codes[f"{component.field}.__year"]
            deltas = (0,) if querier else (-1, 0, 1)
            return [(year + d).astype("string").fillna("").astype(object) for d in deltas]
        return [Rules._component(component, codes, querier)]

    def group_codes(self, codes: dict[str, pd.Series], querier: bool) -> dict[str, list[pd.Series]]:
        """Per group label of the passes' layouts, per variant: the key per record ('' when a part is missing)."""
        out = {}
        for group in {g for layout in self.pass_layouts() for g in layout.groups}:
            variants = []
            for combo in itertools.product(*(self._part_variants(c, codes, querier) for c in group.parts)):
                variants.append(_aligned_key(list(combo)))
            out[group.label] = variants
        return out

    def block_labels(self, blocking: BlockingPass) -> list[str]:
        """The codes a pass's key is made of; a dob_ndi field blocks on its month."""
        return [f"{name}.month" if name in self.fields and self.fields[name].encoder == "dob_ndi" else name
                for name in blocking.fields]

    def block_keys(self, codes: dict[str, pd.Series], blocking: BlockingPass) -> pd.Series:
        """A pass's clear block key per record ('' when a part is missing)."""
        return _aligned_key([codes[label] for label in self.block_labels(blocking)])

    def querier_keys(self, frame: pd.DataFrame) -> QuerierKeys:
        codes = self.codes(frame)
        if self.blocking:
            from party_client.blocking import plan_query     # blocking builds on these rules
            return plan_query(self, codes, len(frame))
        tables = [QuerierTable.from_pairs(self.term_name(t), self._term_keys(t, codes, querier=True))
                  for t in self.terms]
        return QuerierKeys(len(frame), tables, self.spec)

    def holder_keys(self, frame: pd.DataFrame) -> HolderKeys:
        codes = self.codes(frame)
        if self.blocking:
            from party_client.blocking import holder_blocks
            return holder_blocks(self, codes, len(frame))
        values = []
        for term in self.terms:
            keys = self._term_keys(term, codes, querier=False)
            column = [None] * len(frame)
            for row, key in keys.items():
                column[row] = key
            values.append(column)
        return HolderKeys([self.term_name(t) for t in self.terms], values, self.spec)


def load_rules(source: str | Path | dict) -> Rules:
    """Parse a rules file (TOML) or an equivalent dict."""
    if isinstance(source, dict):
        document, where = source, "rules"
    else:
        path = Path(source)
        try:
            document = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise PartyError(f"rules file {path} does not exist") from None
        except tomllib.TOMLDecodeError as error:
            raise PartyError(f"rules file {path}: {error}") from None
        where = str(path)
    fields = []
    for entry in document.get("field", []):
        try:
            field = Field(name=entry["name"], column=entry["column"], encoder=entry["encoder"],
                          date_format=entry.get("date_format"), transposed=bool(entry.get("transposed", False)))
        except KeyError as missing:
            raise PartyError(f"{where}: every [[field]] needs {missing}") from None
        if field.encoder not in ENCODERS:
            raise PartyError(f"{where}: encoder '{field.encoder}' unknown (use one of {', '.join(ENCODERS)})")
        if field.encoder == "dob_ndi" and not field.date_format:
            raise PartyError(f"{where}: field '{field.name}' (dob_ndi) needs date_format, e.g. \"%Y%m%d\"")
        if not field.name.isidentifier():
            raise PartyError(f"{where}: field name '{field.name}' must be an identifier")
        fields.append(field)
    if not fields:
        raise PartyError(f"{where}: no [[field]] defined")
    if len({f.name for f in fields}) != len(fields):
        raise PartyError(f"{where}: field names must be unique")
    rule = document.get("rule", {})
    names = {f.name for f in fields}
    if "match" in rule:
        terms = parse_boolean_rule(rule["match"], names)
    elif "fellegi_sunter" in rule:
        fs = rule["fellegi_sunter"]
        try:
            m, u, threshold = fs["m"], fs["u"], float(fs["threshold"])
        except KeyError as missing:
            raise PartyError(f"{where}: [rule.fellegi_sunter] needs {missing}") from None
        except (TypeError, ValueError):
            raise PartyError(f"{where}: [rule.fellegi_sunter] threshold must be a number") from None
        if set(m) != names or set(u) != names:
            raise PartyError(f"{where}: m and u must give a probability for every field")
        terms = fellegi_sunter_terms(m, u, threshold)
    else:
        raise PartyError(f"{where}: [rule] needs match = \"...\" or a [rule.fellegi_sunter] table")
    compare = rule.get("compare", "auto")
    if compare not in ("auto", "terms", "fields"):
        raise PartyError(f"{where}: [rule] compare must be auto, terms or fields")
    return Rules(fields, terms, where, _blocking(document, where, fields), _risk(document, where), compare)


def _blocking(document: dict, where: str, fields: list[Field]) -> list[BlockingPass]:
    """``[[blocking]]`` passes: fields (names, or date parts such as ``dob.year``), optional buckets or clear."""
    names = {f.name for f in fields}
    parts = {f"{f.name}.{p}" for f in fields if f.encoder == "dob_ndi" for p in ("day", "month", "year")}
    passes = []
    for entry in document.get("blocking", []):
        chosen = entry.get("fields")
        if not isinstance(chosen, list) or not chosen or not all(isinstance(n, str) for n in chosen):
            raise PartyError(f"{where}: every [[blocking]] needs fields = [\"name\", ...]")
        unknown = [n for n in chosen if n not in names | parts]
        if unknown:
            raise PartyError(f"{where}: [[blocking]] field '{unknown[0]}' is not a [[field]] name")
        buckets = entry.get("buckets")
        if buckets is not None and (not isinstance(buckets, int) or buckets < 1):
            raise PartyError(f"{where}: [[blocking]] buckets must be a positive integer")
        clear = bool(entry.get("clear", False))
        if clear and buckets is not None:
            raise PartyError(f"{where}: a [[blocking]] pass is either clear or bucketed, not both")
        passes.append(BlockingPass(tuple(chosen), buckets, clear))
    return passes


def _risk(document: dict, where: str) -> RiskPolicy:
    risk = document.get("risk", {})
    try:
        threshold = float(risk.get("max", 0.05))
        population = risk.get("population")
        population = None if population is None else int(population)
    except (TypeError, ValueError):
        raise PartyError(f"{where}: [risk] max must be a number and population an integer") from None
    if not 0 < threshold <= 1:
        raise PartyError(f"{where}: [risk] max must lie in (0, 1]")
    if population is not None and population < 1:
        raise PartyError(f"{where}: [risk] population must be positive")
    return RiskPolicy(threshold, population)
