"""A Fellegi-Sunter model over comparison levels as matching keys for the blocked engine: its comparison
groups (one per level of each field), K's weighted rule, blocking passes, and the rules-file form.

docs/protocol.md, "Comparison levels": every blocking pass compares every level of every field
(the weight needs all fields); per candidate pair K decides each field's first agreeing level,
adds the weights and forwards the pair when the sum reaches the threshold, reporting the deciding
level of each field to the querier.  What is compared is fixed per pass, whatever the values.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import jellyfish
import numpy as np
import pandas as pd

from party_client.errors import PartyError
from party_client.matching.blocking import BlockingPass, holder_rows, parse_pass_options, plan_passes
from party_client.matching.dates import AUTO
from party_client.matching.fellegi_sunter import ELSE_LEVEL, LevelModel, accepted, pair_levels, pattern_weights
from party_client.matching.fields import aligned_key
from party_client.matching.keys import BlockedHolder, BlockedQuery, HolderKeys, QuerierKeys, QuerierTable
from party_client.matching.layout import PairLayout
from party_client.matching.levels import ANCHOR, MISSING_LEVEL

TABLE = "fellegi_sunter"
BLOCK_TRANSFORMS = ("soundex", "nysiis", "metaphone", "initial", "year", "month", "day")


@dataclass(frozen=True)
class LevelGroup:
    """One level of one field as a comparison group: the encoding domains of its querier keys (shared by
    the levels of a field that compare with the same key), ``variants`` comparisons per pair."""

    label: str
    variants: int
    domains: tuple[str, ...]


def block_codes(model: LevelModel, codes: dict[str, pd.Series], blocking: BlockingPass) -> pd.Series:
    """A pass's clear key per record ('' when a part is missing): each part a field's code, or a
    transform of it (``last:soundex``, ``dob:year``)."""
    parts = []
    names = {f.name for f in model.fields}
    for part in blocking.fields:
        name, _, transform = part.partition(":")
        if name not in names:
            raise PartyError(f"blocking part '{part}' names no field of the model")
        values = codes[name]
        if transform in ("soundex", "nysiis", "metaphone"):
            encode = getattr(jellyfish, transform)
            lookup = {v: (encode(v) if v else "") for v in pd.unique(values)}
            values = values.map(lookup)
        elif transform == "initial":
            values = values.str[:1]
        elif transform in ("year", "month", "day"):
            start = {"year": 0, "month": 4, "day": 6}[transform]
            values = values.str[start:start + (4 if transform == "year" else 2)]
        elif transform:
            raise PartyError(f"blocking part '{part}': transform must be one of {', '.join(BLOCK_TRANSFORMS)}")
        parts.append(values.astype(object))
    return aligned_key(parts)


class LevelRules:
    """A level model with blocking passes: both parties' keys for the blocked engine."""

    def __init__(self, model: LevelModel, blocking: list[BlockingPass], source: str = "preset",
                 precision: float | None = None, holder_rows: int | None = None) -> None:
        """``precision``: a target from which the threshold is derived (:mod:`party_client.matching.precision`)
        once the holder's announced table size, ``holder_rows``, is known (:meth:`at_holder_rows`); until
        then the model's threshold is a placeholder and no key can be made."""
        if precision is not None:
            from party_client.matching.precision import check_precision
            precision = check_precision(precision)
            if not model.m or not model.u:
                raise PartyError(f"{source}: a precision target needs m and u for every field ([rule.levels] m, u)")
        model.check()
        if not blocking:
            raise PartyError("a model over comparison levels needs at least one [[blocking]] pass")
        self.model, self.blocking, self.source = model, list(blocking), source
        self.precision, self.holder_rows = precision, holder_rows
        self.fields = {f.name: f for f in model.fields}
        self.terms = [()]          # one key table (``TABLE``), as reports and benchmarks count a rule's terms

    # -- the threshold from a precision target ------------------------------------------------------
    @property
    def awaits_holder_rows(self) -> bool:
        """A precision target whose threshold is not derived yet (it needs the holder's table size)."""
        return self.precision is not None and self.holder_rows is None

    def at_holder_rows(self, holder_rows: int) -> "LevelRules":
        """These rules with the threshold derived from the precision target for a holder that announced
        ``holder_rows`` rows (both parties derive the same from the same announced size)."""
        from party_client.matching.precision import match_prior, threshold_for_precision
        if self.precision is None:
            return self
        threshold = threshold_for_precision(self.model, self.precision, match_prior(holder_rows))
        model = LevelModel(self.model.fields, self.model.weights, threshold, self.model.m, self.model.u)
        return LevelRules(model, self.blocking, self.source, self.precision, holder_rows)

    def announced_rows(self, frame: pd.DataFrame) -> int:
        """The table size a holder with ``frame`` announces: its rows with a key of some pass, rounded down
        to the public step (:func:`party_client.crypto.cuckoo.padded_floor`)."""
        codes = self.codes(frame)
        return _announced(self._holder_block_keys(codes), len(frame))

    def for_holder(self, frame: pd.DataFrame) -> "LevelRules":
        """These rules as a holder of ``frame`` runs them (the threshold derived from its own size)."""
        return self.at_holder_rows(self.announced_rows(frame)) if self.awaits_holder_rows else self

    def _resolved(self) -> None:
        if self.awaits_holder_rows:
            raise PartyError(f"the threshold for precision {self.precision:g} is derived from the holder's "
                             "announced table size, not known yet")

    def _holder_block_keys(self, codes: dict[str, pd.Series]) -> list[list[str | None]]:
        return [[v if v else None for v in block_codes(self.model, codes, b).tolist()] for b in self.blocking]

    # -- layout -----------------------------------------------------------------------------------
    def _shapes(self) -> list[tuple[str, int, tuple[str, ...]]]:
        """(label, comparisons, querier key domains) per group, from a one-record table (shapes do not
        depend on values)."""
        groups = self.model.groups(self.model.blank_codes())
        return [(f"{f.name}.{outcome}", keys.comparisons, _domains(f.name, keys))
                for f in self.model.fields for outcome, keys in zip(f.outcomes, groups[f.name])]

    def layout(self) -> PairLayout:
        self._resolved()
        shapes = self._shapes()
        scaled, otherwise, threshold = self.model.scaled()
        field_of, weights = [], []
        for index, f in enumerate(self.model.fields):
            field_of += [index] * (len(f.levels) + 1)
            weights += scaled[index]
        groups = tuple(LevelGroup(label, comparisons, domains) for label, comparisons, domains in shapes)
        return PairLayout("levels", groups, (), (0,), (tuple(field_of), tuple(weights), tuple(otherwise), threshold))

    def pass_layouts(self) -> list[PairLayout]:
        return [self.layout()] * len(self.blocking)

    @property
    def spec(self) -> str:
        """Digest of what both parties must agree on (not column names or date formats)."""
        self._resolved()
        scaled, otherwise, threshold = self.model.scaled()
        canonical = {"fields": [(f.name, f.value_type, [level.name for level in f.levels]) for f in self.model.fields],
                     "weights": scaled, "else": otherwise, "threshold": threshold,
                     "blocking": [[list(b.fields), b.capacity] for b in self.blocking]}
        return "levels/v2/" + hashlib.sha256(json.dumps(canonical).encode()).hexdigest()[:32]

    @staticmethod
    def term_name(term) -> str:
        return TABLE

    # -- keys -------------------------------------------------------------------------------------
    def codes(self, frame: pd.DataFrame) -> dict[str, pd.Series]:
        if frame.empty:
            raise PartyError("the input table is empty")
        return self.model.codes(frame)

    def querier_keys(self, frame: pd.DataFrame) -> QuerierKeys:
        codes = self.codes(frame)
        records = len(frame)
        secret, passes = plan_passes(self.blocking, [block_codes(self.model, codes, b) for b in self.blocking])
        group_keys = {}
        groups = self.model.groups(codes)
        for f in self.model.fields:
            for outcome, keys in zip(f.outcomes, groups[f.name]):
                for domain, slot in zip(_domains(f.name, keys), keys.querier):
                    group_keys[domain] = slot.tolist()
        identity = np.arange(records, dtype=np.int64)
        tables = [QuerierTable(TABLE, [str(r) for r in range(records)], identity, identity)]
        return QuerierKeys(records, tables, self.spec, BlockedQuery(secret, self.pass_layouts(), passes, group_keys))

    def holder_keys(self, frame: pd.DataFrame) -> HolderKeys:
        """The holder's keys; a precision target's threshold is derived here from the table size the holder
        announces (:meth:`announced_rows`), as the querier derives it from that announcement."""
        codes = self.codes(frame)
        group_keys = {}
        groups = self.model.groups(codes)
        for f in self.model.fields:
            for outcome, keys in zip(f.outcomes, groups[f.name]):
                group_keys[f"{f.name}.{outcome}"] = [_holder_column(slot, values) for slot, values in keys.holder]
        block_keys = self._holder_block_keys(codes)
        present = holder_rows(block_keys, len(frame))
        rules = self.at_holder_rows(_announced(block_keys, len(frame))) if self.awaits_holder_rows else self
        return HolderKeys(["blocked"], [[("" if p else None) for p in present]], rules.spec,
                          BlockedHolder(rules.pass_layouts(), group_keys, block_keys))

    # -- the plaintext reference ----------------------------------------------------------------------
    def candidate_pairs(self, querier: pd.DataFrame, holder: pd.DataFrame, holder_rules: "LevelRules | None" = None,
                        left_out: list[list[int]] | None = None) -> pd.DataFrame:
        """(entry, row) pairs sharing a clear block key in some pass (the union); ``holder_rules``: the
        holder's own rules (its column names) when they differ; ``left_out``: per pass the querier
        records its bins had no room for (the report's ``left_out_records``), left out of that pass."""
        codes_q, codes_h = self.codes(querier), (holder_rules or self).codes(holder)
        found = []
        for index, b in enumerate(self.blocking):
            keys_q, keys_h = block_codes(self.model, codes_q, b), block_codes(self.model, codes_h, b)
            keys_q = keys_q.reset_index(drop=True)
            if left_out:
                keys_q.iloc[list(left_out[index])] = ""
            left = pd.DataFrame({"key": keys_q, "entry": np.arange(len(keys_q))})
            right = pd.DataFrame({"key": keys_h, "row": np.arange(len(keys_h))})
            found.append(left[left.key != ""].merge(right[right.key != ""], on="key")[["entry", "row"]])
        return pd.concat(found).drop_duplicates().reset_index(drop=True)

    def plaintext_matches(self, querier: pd.DataFrame, holder: pd.DataFrame, pairs: pd.DataFrame,
                          holder_rules: "LevelRules | None" = None) -> pd.DataFrame:
        """Of the given (entry, row) pairs, those the model accepts, with their weight (bits)."""
        groups_q = self.model.groups(self.codes(querier))
        groups_h = self.model.groups((holder_rules or self).codes(holder))
        left, right = pairs["entry"].to_numpy(), pairs["row"].to_numpy()
        levels = pair_levels(self.model, groups_q, groups_h, left, right)
        keep = accepted(self.model, levels)
        weights = pattern_weights(self.model, levels) / 1000
        return pd.DataFrame({"entry": left[keep], "row": right[keep], "weight": weights[keep]})


def _announced(block_keys: list[list[str | None]], rows: int) -> int:
    """The holder's announced table size: rows with a key of some pass, rounded down to the public step
    (as :class:`party_client.protocol.holder.Holder` announces it)."""
    from party_client.crypto.cuckoo import padded_floor
    return padded_floor(int(holder_rows(block_keys, rows).sum()))


def _domains(field: str, keys) -> tuple[str, ...]:
    """The encoding domain of each querier slot of a level: ``<field>.<source>``, the anchor shared."""
    return tuple(source if source == ANCHOR else f"{field}.{source}" for source in keys.sources)


def _holder_column(slot: int, values: pd.Series) -> list:
    """A holder comparison per row: its key (slot 0), (slot, key), or None where it has no key."""
    if slot == -1:
        return [(s, k if k else None) for s, k in values.tolist()]
    if slot == 0:
        return [v if v else None for v in values.tolist()]
    return [(slot, v if v else None) for v in values.tolist()]


def model_weight(model: LevelModel, decided: list[str]) -> float:
    """A matched pair's weight (bits) from the levels K reported (a field not reported: else)."""
    reported = dict(label.split(".", 1) for label in decided)
    total = 0.0
    for f in model.fields:
        outcome = reported.get(f.name, ELSE_LEVEL)
        total += 0.0 if outcome == MISSING_LEVEL else model.weights[f.name][outcome]
    return total


# -- the rules file ----------------------------------------------------------------------------------
def rules_document(rules: LevelRules) -> dict:
    """The model as a rules-file dict (``[[field]]`` with ``levels``, ``[rule.levels]``, ``[[blocking]]``,
    ): to edit, and to give the other party (who puts in its own column names)."""
    fields = []
    for f in rules.model.fields:
        entry = {"name": f.name, "type": f.value_type, "levels": [level.name for level in f.levels]}
        if f.parts:
            entry["columns"] = list(f.parts)
        else:
            entry["column"] = f.column
        if f.date_format:
            entry["date_format"] = f.date_format
        if f.value_type == "text":
            entry["normalize"] = f.normalize
        fields.append(entry)
    document = {"field": fields,
                "rule": {"levels": {**({"precision": rules.precision} if rules.precision is not None
                                       else {"threshold": rules.model.threshold}),
                                    "weights": {f: dict(w) for f, w in rules.model.weights.items()},
                                    **({"m": rules.model.m, "u": rules.model.u} if rules.model.m else {})}},
                "blocking": [{"fields": list(b.fields), **({"capacity": b.capacity} if b.capacity else {})}
                             for b in rules.blocking]}
    return document


def load_level_rules(document: dict, where: str) -> LevelRules:
    """A rules-file dict whose fields have ``levels`` (see :func:`rules_document`)."""
    from party_client.matching.fellegi_sunter import VALUE_TYPES, LevelField
    from party_client.matching.levels import Level
    fields = []
    for entry in document.get("field", []):
        try:
            name, value_type, levels = entry["name"], entry.get("type", "text"), entry["levels"]
        except KeyError as missing:
            raise PartyError(f"{where}: every [[field]] with levels needs {missing}") from None
        if value_type not in VALUE_TYPES:
            raise PartyError(f"{where}: field '{name}' type must be one of {', '.join(VALUE_TYPES)}")
        columns = entry.get("columns")
        if (columns is None) == ("column" not in entry):
            raise PartyError(f"{where}: field '{name}' needs column = \"...\" or (dates) columns = [year, month, day]")
        if columns is not None and (value_type != "date" or len(columns) != 3):
            raise PartyError(f"{where}: field '{name}': columns = [year, month, day] is for date fields only")
        date_format = entry.get("date_format") or AUTO if value_type == "date" and columns is None else None
        fields.append(LevelField(name, value_type, tuple(Level.parse(text, value_type) for text in levels),
                                 entry.get("column"), tuple(columns) if columns else None, date_format,
                                 entry.get("normalize", "name")))
    spec = document.get("rule", {}).get("levels", {})
    if ("threshold" in spec) == ("precision" in spec):
        raise PartyError(f"{where}: [rule.levels] needs threshold = BITS or precision = P (a target the threshold "
                         "is derived from), not both")
    try:
        weights = {f: {level: float(w) for level, w in table.items()} for f, table in spec["weights"].items()}
        # a precision target's threshold is derived once the holder's size is known: a placeholder above
        # every pattern's weight until then (LevelRules.at_holder_rows)
        threshold = float(spec["threshold"]) if "threshold" in spec else \
            sum(max(table.values(), default=0.0) for table in weights.values()) + 1.0
    except KeyError as missing:
        raise PartyError(f"{where}: [rule.levels] needs {missing}") from None
    except (TypeError, ValueError, AttributeError):
        raise PartyError(f"{where}: [rule.levels] threshold and weights must be numbers") from None
    names = {f.name for f in fields}
    blocking = []
    for entry in document.get("blocking", []):
        parts = entry.get("fields")
        if not isinstance(parts, list) or not parts or not all(isinstance(p, str) for p in parts):
            raise PartyError(f"{where}: every [[blocking]] needs fields = [\"name\", \"name:soundex\", ...]")
        for part in parts:
            name, _, transform = part.partition(":")
            if name not in names or (transform and transform not in BLOCK_TRANSFORMS):
                raise PartyError(f"{where}: [[blocking]] part '{part}' is not a field (with one of "
                                 f"{', '.join(BLOCK_TRANSFORMS)})")
        blocking.append(BlockingPass(tuple(parts), parse_pass_options(entry, where)))
    try:
        m = {f: {level: float(p) for level, p in table.items()} for f, table in spec.get("m", {}).items()}
        u = {f: {level: float(p) for level, p in table.items()} for f, table in spec.get("u", {}).items()}
    except (TypeError, ValueError, AttributeError):
        raise PartyError(f"{where}: [rule.levels] m and u must be probabilities") from None
    precision = spec.get("precision")
    if precision is not None:
        from party_client.matching.precision import check_precision
        try:
            precision = check_precision(precision)
        except PartyError as error:
            raise PartyError(f"{where}: [rule.levels] {error}") from None
    return LevelRules(LevelModel(fields, weights, threshold, m, u), blocking, source=where, precision=precision)
