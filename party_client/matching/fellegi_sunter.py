"""The Fellegi-Sunter model over comparison levels: fields and their levels, m and u per level, the pair
weight and its threshold, u from a party's own value frequencies and m by EM with reported convergence.

Fellegi & Sunter, "A theory for record linkage", JASA 64 (1969): a pair's weight is the sum over fields
of log2(m/u) of the level it reached, m = P(level | match), u = P(level | non-match).  Levels of one
field are exclusive: a pair's level is the first level, in the field's order, that agrees
(:mod:`party_client.matching.levels`); a field missing on either side is its own level with weight 0
and leaves the field out of EM; ``else`` is the level of a pair that agrees at none.  EM after Winkler,
"Using the EM algorithm for weight computation in the Fellegi-Sunter model of record linkage" (ASA
SRMS, 1988): fields conditionally independent given the match status, EM over the counts of
agreement patterns.  Weights are kept in integer thousandths of a bit, so that the key holder and the
plaintext reference add exactly the same numbers (docs/protocol.md, "Comparison levels").
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field as dataclass_field

import numpy as np
import pandas as pd

from party_client.errors import PartyError
from party_client.matching.dates import AUTO, read_dates
from party_client.matching.levels import (ELSE_LEVEL, MISSING_LEVEL, GroupKeys, Level, date_keys, group_agreement,
                                          marked_values, missing_keys, number_keys, text_keys)
from party_client.matching.name_forms import name_parts
from party_client.matching.normalize import normalize_identifiers, normalize_names

SCALE = 1000                 # weights in thousandths of a bit
PROBABILITY_FLOOR = 1e-6
VALUE_TYPES = ("text", "date", "number")
DATE_PARTS = ("year", "month", "day")


@dataclass(frozen=True)
class LevelField:
    """A matching variable with graded levels.  ``column`` is one column, or for a date split over three
    columns ``parts`` = (year column, month column, day column); ``normalize``: ``name`` (letters a-z)
    or ``identifier`` (letters and digits)."""

    name: str
    value_type: str
    levels: tuple[Level, ...]
    column: str | None = None
    parts: tuple[str, str, str] | None = None
    date_format: str | None = None
    normalize: str = "name"

    @property
    def outcomes(self) -> list[str]:
        """The field's level names in order, then ``missing`` and ``else``."""
        return [level.name for level in self.levels] + [MISSING_LEVEL, ELSE_LEVEL]

    @property
    def columns(self) -> list[str]:
        return list(self.parts) if self.parts else [self.column]


def field_codes(field: LevelField, frame: pd.DataFrame) -> pd.Series:
    """The field's normalized value per record ('' missing): text normalized, dates as ``YYYYMMDD``,
    numbers as integers in decimal."""
    for column in field.columns:
        if column not in frame.columns:
            raise PartyError(f"field '{field.name}': column '{column}' not in the input "
                             f"(columns: {', '.join(map(str, frame.columns))})")
    if field.value_type == "date":
        if field.parts:
            text = [frame[c].reset_index(drop=True).astype("string").fillna("").str.strip() for c in field.parts]
            joined = text[0].str.zfill(4) + text[1].str.zfill(2) + text[2].str.zfill(2)
            dates = pd.to_datetime(joined.where((text[0] != "") & (text[1] != "") & (text[2] != ""), None),
                                   format="%Y%m%d", errors="coerce")
        else:
            text = frame[field.column].reset_index(drop=True).astype("string").fillna("").str.strip()
            dates = read_dates(text, field.date_format or AUTO, f"field '{field.name}' (column '{field.column}')")
        return dates.dt.strftime("%Y%m%d").astype(object).where(dates.notna(), "").astype(object)
    column = frame[field.column].reset_index(drop=True)
    if field.value_type == "number":
        value = pd.to_numeric(column.astype("string").str.strip(), errors="coerce")
        whole = value.notna() & (value == value.round())
        return value.where(whole).astype("Int64").astype("string").fillna("").astype(object)
    return normalize_names(column) if field.normalize == "name" else normalize_identifiers(column)


def _part_count(field: LevelField) -> int:
    """How many parts of its written names a field's ``compound`` levels compare (0: none)."""
    return max((int(level.parameter) for level in field.levels if level.kind == "compound"), default=0)


def part_code(field: str, index: int) -> str:
    """The codes' name for a field's written names' part ``index`` (no field name contains ':')."""
    return f"{field}:part.{index}"


def level_groups(field: LevelField, codes: dict[str, pd.Series]) -> list[GroupKeys]:
    """The field's groups, one per level then ``missing``, as keys of one table (both sides' keys)."""
    own = codes[field.name]
    groups = []
    for level in field.levels:
        if field.value_type == "text":
            other = codes.get(level.parameter) if level.kind == "swapped" else None
            if level.kind == "compound":
                other = [codes[part_code(field.name, k)] for k in range(int(level.parameter))]
            if level.kind == "swapped" and other is None:
                raise PartyError(f"field '{field.name}': level {level.name} names no field of the model")
            groups.append(text_keys(level, own, other))
        elif field.value_type == "date":
            groups.append(date_keys(level, own))
        else:
            groups.append(number_keys(level, own))
    # a field with a ``value`` slot carries the missing marker there (one querier slot fewer per field)
    shared = any("value" in g.sources for g in groups)
    if shared:
        marked = marked_values(own)
        for g in groups:
            g.querier = [marked if source == "value" else q for q, source in zip(g.querier, g.sources)]
    groups.append(missing_keys(own, value_slot=shared))
    return groups


@dataclass
class LevelModel:
    """Fields with levels, weights per level (bits; ``missing`` always 0), and the threshold."""

    fields: list[LevelField]
    weights: dict[str, dict[str, float]]
    threshold: float
    m: dict[str, dict[str, float]] = dataclass_field(default_factory=dict)
    u: dict[str, dict[str, float]] = dataclass_field(default_factory=dict)

    def scaled(self) -> tuple[list[list[int]], list[int], int]:
        """Per field the weight of each level then ``missing`` (0), its ``else`` weight, and the threshold,
        in thousandths of a bit."""
        levels, otherwise = [], []
        for f in self.fields:
            w = self.weights[f.name]
            levels.append([round(w[level.name] * SCALE) for level in f.levels] + [0])
            otherwise.append(round(w[ELSE_LEVEL] * SCALE))
        return levels, otherwise, round(self.threshold * SCALE)

    def check(self) -> None:
        names = {f.name for f in self.fields}
        for f in self.fields:
            missing = [o for o in f.outcomes if o != MISSING_LEVEL and o not in self.weights.get(f.name, {})]
            if missing:
                raise PartyError(f"field '{f.name}': no weight for level {missing[0]}")
            for level in f.levels:
                if level.kind == "swapped" and level.parameter not in names:
                    raise PartyError(f"field '{f.name}': level {level.name} names no field of the model")
        _, otherwise, threshold = self.scaled()
        if sum(otherwise) >= threshold:
            raise PartyError(f"threshold {self.threshold:g} accepts pairs that agree on nothing "
                             f"(the all-else weight is {sum(otherwise) / SCALE:.2f}); raise it")

    def codes(self, frame: pd.DataFrame) -> dict[str, pd.Series]:
        """Per field its codes; a field with a ``compound`` level also its written names' parts
        (:func:`part_code` names them)."""
        codes = {f.name: field_codes(f, frame) for f in self.fields}
        for f in self.fields:
            if _part_count(f):
                parts = name_parts(frame[f.column].reset_index(drop=True), _part_count(f))
                codes.update({part_code(f.name, k): part for k, part in enumerate(parts)})
        return codes

    def blank_codes(self) -> dict[str, pd.Series]:
        """The codes of one record with every value missing (the shapes of the keys do not depend on values)."""
        blank = pd.Series([""], dtype=object)
        return {f.name: blank for f in self.fields} | {part_code(f.name, k): blank for f in self.fields
                                                        for k in range(_part_count(f))}

    def groups(self, codes: dict[str, pd.Series]) -> dict[str, list[GroupKeys]]:
        return {f.name: level_groups(f, codes) for f in self.fields}


def pair_levels(model: LevelModel, querier_groups: dict[str, list[GroupKeys]],
                holder_groups: dict[str, list[GroupKeys]], left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Per pair and field the outcome index (the first agreeing level; ``len(levels)`` = missing,
    ``len(levels) + 1`` = else): the plaintext reference of what the key holder decides."""
    out = np.zeros((len(left), len(model.fields)), dtype=np.int64)
    for column, f in enumerate(model.fields):
        level = np.full(len(left), len(f.levels) + 1, dtype=np.int64)
        groups_q, groups_h = querier_groups[f.name], holder_groups[f.name]
        for index in range(len(groups_q) - 1, -1, -1):          # first agreeing level wins
            agree = group_agreement(groups_q[index], groups_h[index], left, right)
            level = np.where(agree, index, level)
        out[:, column] = level
    return out


def pattern_weights(model: LevelModel, levels: np.ndarray) -> np.ndarray:
    """Each pair's weight in thousandths of a bit (integers, as the key holder adds them)."""
    scaled, otherwise, _ = model.scaled()
    total = np.zeros(len(levels), dtype=np.int64)
    for column, f in enumerate(model.fields):
        table = np.array(scaled[column] + [otherwise[column]], dtype=np.int64)
        total += table[levels[:, column]]
    return total


def accepted(model: LevelModel, levels: np.ndarray) -> np.ndarray:
    return pattern_weights(model, levels) >= model.scaled()[2]


# -- estimation ----------------------------------------------------------------------------------------
def _clamp(p: float) -> float:
    return min(max(p, PROBABILITY_FLOOR), 1 - PROBABILITY_FLOOR)


def u_from_frequencies(model: LevelModel, frame: pd.DataFrame, sample_pairs: int = 200_000,
                       seed: int = 0) -> dict[str, dict[str, float]]:
    """u per field and level (missing excluded): the share of seeded random pairs of distinct records
    of the party's own table that reach each level (splink's u from random pairs)."""
    n = len(frame)
    if n < 2:
        raise PartyError("estimating u needs at least two records")
    rng = np.random.default_rng(seed)
    left = rng.integers(0, n, sample_pairs)
    right = (left + rng.integers(1, n, sample_pairs)) % n
    groups = model.groups(model.codes(frame))
    levels = pair_levels(model, groups, groups, left, right)
    return {f.name: _distribution(levels[:, c], f) for c, f in enumerate(model.fields)}


def _distribution(column: np.ndarray, f: LevelField, weights: np.ndarray | None = None) -> dict[str, float]:
    """The share of each non-missing outcome among the pairs (optionally weighted)."""
    missing = len(f.levels)
    weights = np.ones(len(column)) if weights is None else weights
    known = column != missing
    total = float(weights[known].sum()) or 1.0
    return {name: _clamp(float(weights[known & (column == i)].sum()) / total)
            for i, name in enumerate(f.outcomes) if name != MISSING_LEVEL}


@dataclass(frozen=True)
class EMFit:
    """EM's estimates and whether it converged (``change``: the last iteration's largest change)."""

    m: dict[str, dict[str, float]]
    u: dict[str, dict[str, float]]
    match_proportion: float
    iterations: int
    converged: bool
    change: float


def expectation_maximisation(model: LevelModel, patterns: np.ndarray, counts: np.ndarray | None = None,
                             u: dict[str, dict[str, float]] | None = None, match_proportion: float = 0.1,
                             max_iterations: int = 500, tolerance: float = 1e-6) -> EMFit:
    """m (and u unless given) per level by EM over agreement patterns (rows: outcome index per field,
    as :func:`pair_levels`), each pattern counted ``counts`` times; missing outcomes leave the field out."""
    patterns = np.asarray(patterns, dtype=np.int64)
    counts = np.ones(len(patterns)) if counts is None else np.asarray(counts, dtype=np.float64)
    fields = model.fields
    m = {f.name: _initial_m(f) for f in fields}
    estimate_u = u is None
    if estimate_u:
        u = {f.name: {name: 1.0 / (len(f.outcomes) - 1) for name in f.outcomes if name != MISSING_LEVEL}
             for f in fields}
    lam, change, iteration = match_proportion, math.inf, 0
    for iteration in range(1, max_iterations + 1):
        log_m = np.zeros(len(patterns))
        log_u = np.zeros(len(patterns))
        for c, f in enumerate(fields):
            names = f.outcomes
            table_m = np.array([math.log(m[f.name][n]) if n != MISSING_LEVEL else 0.0 for n in names])
            table_u = np.array([math.log(u[f.name][n]) if n != MISSING_LEVEL else 0.0 for n in names])
            log_m += table_m[patterns[:, c]]
            log_u += table_u[patterns[:, c]]
        a = math.log(lam) + log_m
        b = math.log(1 - lam) + log_u
        top = np.maximum(a, b)
        posterior = np.exp(a - top) / (np.exp(a - top) + np.exp(b - top))
        weighted = posterior * counts
        new_lam = _clamp(float(weighted.sum() / counts.sum()))
        new_m = {f.name: _distribution(patterns[:, c], f, weighted) for c, f in enumerate(fields)}
        new_u = u if not estimate_u else {f.name: _distribution(patterns[:, c], f, (1 - posterior) * counts)
                                          for c, f in enumerate(fields)}
        change = max([abs(new_lam - lam)] + [abs(new_m[f][k] - m[f][k]) for f in new_m for k in new_m[f]]
                     + [abs(new_u[f][k] - u[f][k]) for f in new_u for k in new_u[f]])
        lam, m, u = new_lam, new_m, new_u
        if change < tolerance:
            return EMFit(m, u, lam, iteration, True, change)
    return EMFit(m, u, lam, iteration, False, change)


def _initial_m(f: LevelField) -> dict[str, float]:
    """A starting m: most mass on the first level, decreasing along the order."""
    names = [n for n in f.outcomes if n != MISSING_LEVEL]
    raw = [0.5 ** i for i in range(len(names))]
    raw[0] *= 4
    return {n: r / sum(raw) for n, r in zip(names, raw)}


def weights_from(m: dict[str, dict[str, float]], u: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """log2(m/u) per field and level (rounded to thousandths of a bit)."""
    return {f: {level: round(math.log2(m[f][level] / u[f][level]), 3) for level in m[f]} for f in m}


def model_from_fit(fields: list[LevelField], fit: EMFit, threshold: float) -> LevelModel:
    """A model from a converged fit; a fit that did not converge is refused (no rule is written)."""
    if not fit.converged:
        raise PartyError(f"EM did not converge in {fit.iterations} iterations (last change {fit.change:.2g}); "
                         f"no rule written: give labelled pairs, more records or fewer levels")
    model = LevelModel(list(fields), weights_from(fit.m, fit.u), threshold, fit.m, fit.u)
    model.check()
    return model
