"""Fellegi-Sunter m and u estimated by the querier on its own table with EM.

Sources.  Fellegi & Sunter (1969), "A theory for record linkage", JASA 64:
1183-1210: per field, m = P(agree | match), u = P(agree | non-match), and the
pair weight sum log2(m/u) over agreeing fields + log2((1-m)/(1-u)) over the
others.  Winkler (1988), "Using the EM algorithm for weight computation in the
Fellegi-Sunter model of record linkage" (ASA SRMS): EM over the agreement
patterns of record pairs, fields conditionally independent given the match
status.  splink (UK Ministry of Justice, "Expectation maximisation" and
"u probability estimation" in its documentation): u from random pairs of
records, then m by EM on blocked pairs with u held fixed.

The querier holds only its own table, so its training pairs are pairs of its
own records (a de-duplication): EM learns m from the duplicates the table
contains.  A table without duplicates (or a linked training sample) gives EM
nothing to learn from.

How blocking is undone.  Blocked pairs all agree on some field; EM on them
alone with u fixed mistakes that selection for matching (the all-disagree
pattern never appears; on FEBRL 2 the match proportion goes to 1 and every m
to the fields' agreement rate among blocked pairs).  splink therefore drops
the blocking rule's columns from each EM session.  Here the blocking keys are
exactly the fields' agreement events (one key per field; NDI dates:
month+day, month+year, month+year+-1 and, when transposed, day/month swapped
in the same year), so every pair outside the blocks disagrees on every field:
EM runs on *all* n(n-1)/2 pairs, the blocked ones by their agreement
patterns and the rest as one all-disagree pattern of known count.  Large
tables: no block may dominate the training sample; blocks above a cap are
sampled and their pairs weighted by the inverse of their inclusion
probability (``training_pairs``), which keeps the pattern counts unbiased.
"""
from __future__ import annotations

import copy
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import tomli_w

from party_client.errors import PartyError
from party_client.matching.fields import MISSING, date_numbers, integer_codes, pair_agreement
from party_client.matching.term_rules import Rules
from party_client.matching.rules_file import load_rules
from party_client.files import read_table

PROBABILITY_FLOOR = 1e-6            # u and m are kept in [1e-6, 1 - 1e-6]
U_SAMPLE_PAIRS = 200_000            # random pairs for the u of NDI dates
M_ABOVE_U = 1.001                   # an m that did not exceed u is raised to u * M_ABOVE_U (weight ~0)
SIGNIFICANT_DIGITS = 6              # m and u as written to the rules file


@dataclass(frozen=True)
class EMResult:
    """EM estimates.  ``match_proportion`` is the share of matches among ``total_pairs`` (the pairs EM
    ran on, unobserved all-disagree pairs included); ``pairs`` the training pairs actually compared;
    ``not_above_u`` the fields whose m came out <= u and was clamped just above it."""

    m: dict[str, float]
    u: dict[str, float]
    match_proportion: float
    iterations: int
    converged: bool
    pairs: int
    total_pairs: float
    not_above_u: tuple[str, ...] = ()

    @property
    def expected_matches(self) -> float:
        return self.match_proportion * self.total_pairs


class TrainingPairs(NamedTuple):
    """Pairs (left[i], right[i]), left < right, of one table's records; ``weight[i]`` is the number of
    blocked pairs that pair stands for (1.0 unless its block was sampled)."""

    left: np.ndarray
    right: np.ndarray
    weight: np.ndarray


# -- codes as integers ---------------------------------------------------------------------------------
def _combine(*parts: np.ndarray) -> np.ndarray:
    """One integer per tuple of parts (each below 10,000), MISSING when any part is."""
    value = np.zeros(len(parts[0]), dtype=np.int64)
    for part in parts:
        value = value * 10_000 + part
    return np.where(np.any([part == MISSING for part in parts], axis=0), MISSING, value)


def _record_count(codes: dict[str, pd.Series]) -> int:
    return len(next(iter(codes.values())))


# -- agreement -----------------------------------------------------------------------------------------
def field_agreement(rules: Rules, codes: dict[str, pd.Series], left: np.ndarray, right: np.ndarray) -> pd.DataFrame:
    """Per field (column) whether records left[i] and right[i] of one table agree: by the field's terms, the
    ones the compiled rule compares (:func:`party_client.matching.fields.pair_agreement`)."""
    left, right = np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)
    columns: dict[str, np.ndarray] = {}
    for field in rules.fields.values():
        columns[field.name] = pair_agreement(field, codes, left, right)
    return pd.DataFrame(columns)


def _clamp(p: float) -> float:
    return min(max(p, PROBABILITY_FLOOR), 1 - PROBABILITY_FLOOR)


def u_from_frequencies(rules: Rules, codes: dict[str, pd.Series], sample_pairs: int = U_SAMPLE_PAIRS,
                       seed: int = 0) -> dict[str, float]:
    """u per field: the probability that two distinct random records agree (splink's u from random pairs),
    exactly sum c(c-1) / (n(n-1)) over the value counts c; NDI dates on ``sample_pairs`` seeded random pairs."""
    n = _record_count(codes)
    if n < 2:
        raise PartyError("estimating m and u needs at least two records")
    u: dict[str, float] = {}
    sampled: pd.DataFrame | None = None
    for field in rules.fields.values():
        if field.encoder == "dob_ndi":
            if sampled is None:
                rng = np.random.default_rng(seed)
                left = rng.integers(0, n, sample_pairs)
                right = (left + rng.integers(1, n, sample_pairs)) % n      # never the same record
                sampled = field_agreement(rules, codes, left, right)
            u[field.name] = _clamp(float(sampled[field.name].mean()))
        else:
            column = codes[field.name]
            counts = column[column != ""].value_counts().to_numpy(dtype=np.float64)
            u[field.name] = _clamp(float((counts * (counts - 1)).sum() / (n * (n - 1.0))))
    return u


# -- training pairs ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Key:
    """A blocking key: records i, j are blocked together when left[i] == right[j] (right None: left[j])."""

    left: np.ndarray
    right: np.ndarray | None = None


def _blocking_keys(rules: Rules, codes: dict[str, pd.Series]) -> list[_Key]:
    """One key per field; NDI dates: month+day, month+year, month+year+-1 (and the swap): the agreement events."""
    keys: list[_Key] = []
    for field in rules.fields.values():
        if field.encoder != "dob_ndi":
            keys.append(_Key(integer_codes(codes[field.name])))
            continue
        day, month, year = date_numbers(codes, field.name)
        next_year = np.where(year == MISSING, MISSING, year + 1)
        keys += [_Key(_combine(month, day)), _Key(_combine(month, year)),
                 _Key(_combine(month, year), _combine(month, next_year))]
        if field.transposed:
            keys.append(_Key(_combine(day, month, year), _combine(month, day, year)))
    return keys


def _sorted_blocks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Records with a known value sorted by it; each distinct value's first position and count."""
    known = np.flatnonzero(values != MISSING)
    order = known[np.argsort(values[known], kind="stable")]
    distinct, start, size = np.unique(values[order], return_index=True, return_counts=True)
    return order, distinct, start, size


def _block_layout(keys: list[_Key]) -> dict[str, np.ndarray]:
    """Every block of every key in flat arrays, so that pair number t (numbered block by block) maps to its
    two records without a loop."""
    records: list[np.ndarray] = []
    columns: dict[str, list[np.ndarray]] = {name: [] for name in
                                            ("start_left", "start_right", "width", "pairs", "symmetric", "key")}
    for index, key in enumerate(keys):
        offset = sum(map(len, records))
        order, distinct, start, size = _sorted_blocks(key.left)
        if key.right is None:                   # pairs within a block
            right_base, right_start, width = offset, start, size
            pairs = size * (size - 1) // 2
            records.append(order)
        else:                                   # left records of a value x right records of the same value
            right_order, right_distinct, right_start, right_size = _sorted_blocks(key.right)
            _, li, ri = np.intersect1d(distinct, right_distinct, assume_unique=True, return_indices=True)
            start, right_start, width = start[li], right_start[ri], right_size[ri]
            pairs = size[li] * width
            right_base = offset + len(order)
            records += [order, right_order]
        keep = pairs > 0
        columns["start_left"].append(start[keep] + offset)
        columns["start_right"].append(right_start[keep] + right_base)
        columns["width"].append(width[keep])
        columns["pairs"].append(pairs[keep])
        columns["symmetric"].append(np.full(int(keep.sum()), key.right is None))
        columns["key"].append(np.full(int(keep.sum()), index))
    table = {name: np.concatenate(parts) for name, parts in columns.items()}
    table["records"] = np.concatenate(records)
    table["cumulative"] = np.concatenate([[0], np.cumsum(table["pairs"])])
    return table


def _pairs_at(table: dict[str, np.ndarray], t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Records (i, j) and block of blocked pair number t."""
    block = np.searchsorted(table["cumulative"], t, side="right") - 1
    local = t - table["cumulative"][block]
    # symmetric block: pairs (a, b), a < b, numbered b(b-1)/2 + a
    b = ((1 + np.sqrt(1 + 8 * local.astype(np.float64))) // 2).astype(np.int64)
    b -= b * (b - 1) // 2 > local
    b += (b + 1) * b // 2 <= local
    a = local - b * (b - 1) // 2
    symmetric = table["symmetric"][block]
    width = table["width"][block]
    first = np.where(symmetric, a, local // width)
    second = np.where(symmetric, b, local % width)
    records = table["records"]
    return records[table["start_left"][block] + first], records[table["start_right"][block] + second], block


def _canonical(keys: list[_Key], i: np.ndarray, j: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Whether each drawn copy (i, j, key) is its pair's canonical copy: from the first key that blocks the
    pair, and for a key that blocks it both ways, the copy with i < j.  Keeps each pair once."""
    first = np.full(len(i), len(keys))
    both_ways = np.zeros(len(i), dtype=bool)
    for index in range(len(keys) - 1, -1, -1):
        left, right = keys[index].left, keys[index].right
        if right is None:
            forward = backward = (left[i] == left[j]) & (left[i] != MISSING)
        else:
            forward = (left[i] == right[j]) & (left[i] != MISSING)
            backward = (left[j] == right[i]) & (left[j] != MISSING)
        hit = forward | backward
        first = np.where(hit, index, first)
        both_ways = np.where(hit, forward & backward & (right is not None), both_ways)
    return (key == first) & (~both_ways | (i < j))


def _block_cap(pairs: np.ndarray, max_pairs: int) -> int:
    """The largest C >= 1 with sum(min(pairs, C)) <= max_pairs (every block contributes at most C draws)."""
    low, high = 1, int(pairs.max())
    while low < high:
        middle = (low + high + 1) // 2
        if np.minimum(pairs, middle).sum() <= max_pairs:
            low = middle
        else:
            high = middle - 1
    return low


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated arange(start, start + length) for each block."""
    ends = np.cumsum(lengths)
    return np.repeat(starts - (ends - lengths), lengths) + np.arange(ends[-1] if len(ends) else 0)


def training_pairs(rules: Rules, codes: dict[str, pd.Series], max_pairs: int = 1_000_000,
                   seed: int = 0) -> TrainingPairs:
    """Pairs i < j of the querier's own records blocked on each field separately (union, each pair once),
    with the number of blocked pairs each stands for.

    Blocks hold all pairs that agree on some field (module docstring).  When they hold more than
    ``max_pairs`` pairs (counted per key, before de-duplication), no block may dominate: each contributes
    at most C pairs, C the largest cap keeping the total within ``max_pairs``; a block of P > C pairs gets
    C seeded draws, so each of its pairs is kept with probability pi = 1 - (1 - 1/P)^C and weighs 1/pi
    (Horvitz-Thompson).  A pair blocked by several keys is kept only through the first of them.
    """
    if max_pairs < 1:
        raise PartyError("max_pairs must be at least 1")
    keys = _blocking_keys(rules, codes)
    table = _block_layout(keys)
    pairs = table["pairs"]
    if not len(pairs):
        return TrainingPairs(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    cap = int(pairs.max()) if pairs.sum() <= max_pairs else _block_cap(pairs, max_pairs)
    whole = pairs <= cap
    sampled = np.flatnonzero(~whole)
    rng = np.random.default_rng(seed)
    draws = np.repeat(table["cumulative"][sampled], cap) + \
        (rng.random(len(sampled) * cap) * np.repeat(pairs[sampled], cap)).astype(np.int64)
    drawn = np.concatenate([_ranges(table["cumulative"][:-1][whole], pairs[whole]), np.unique(draws)])
    i, j, block = _pairs_at(table, drawn)
    keep = (i != j) & _canonical(keys, i, j, table["key"][block])
    i, j, block = i[keep], j[keep], block[keep]
    weight = np.ones(len(i))
    partial = ~whole[block]                     # inclusion probability 1 - (1 - 1/P)^C
    weight[partial] = -1.0 / np.expm1(cap * np.log1p(-1.0 / pairs[block[partial]]))
    return TrainingPairs(np.minimum(i, j), np.maximum(i, j), weight)


# -- EM ------------------------------------------------------------------------------------------------
def estimate_m_u(agreement: pd.DataFrame, u: dict[str, float], iterations: int = 100, tolerance: float = 1e-6,
                 initial_m: float = 0.9, initial_lambda: float = 1e-3, *, weight: float | np.ndarray = 1.0,
                 total_pairs: float | None = None) -> EMResult:
    """EM for m and the match proportion with u fixed (Winkler 1988; splink), over distinct agreement
    patterns with counts.  Each row of ``agreement`` stands for ``weight`` pairs (a number or one per
    row, ``TrainingPairs.weight``); with ``total_pairs`` the pairs not in ``agreement`` are added as the
    all-disagree pattern.  Stops when no m changes by more than ``tolerance`` and the match proportion by
    no more than ``tolerance`` relative.  Fields whose m did not exceed u are clamped to u * M_ABOVE_U
    (the compiled rule needs 0 < u < m < 1) and listed."""
    names = list(agreement.columns)
    if not names or set(names) - set(u):
        raise PartyError("estimate_m_u needs a u for every agreement column")
    if len(names) > 62:
        raise PartyError("at most 62 fields")
    bits = agreement.to_numpy(dtype=bool).astype(np.int64) @ (np.int64(1) << np.arange(len(names), dtype=np.int64))
    patterns, inverse = np.unique(bits, return_inverse=True)
    counts = np.bincount(inverse.ravel(), weights=np.broadcast_to(np.asarray(weight, np.float64), bits.shape),
                         minlength=len(patterns))
    if total_pairs is not None and total_pairs > counts.sum():
        patterns, counts = np.append(patterns, 0), np.append(counts, total_pairs - counts.sum())
    agree = ((patterns[:, None] >> np.arange(len(names))) & 1).astype(np.float64)
    disagree = 1 - agree
    u_vector = np.array([u[name] for name in names])
    non_match = agree @ np.log(u_vector) + disagree @ np.log1p(-u_vector)
    m = np.full(len(names), float(initial_m))
    proportion = float(initial_lambda)
    converged, iteration = False, 0
    for iteration in range(1, iterations + 1):
        log_match = np.log(proportion) + agree @ np.log(m) + disagree @ np.log1p(-m)
        log_non_match = np.log1p(-proportion) + non_match
        posterior = np.exp(log_match - np.logaddexp(log_match, log_non_match))
        expected = counts * posterior
        matches = expected.sum()
        if matches <= 0:
            break
        new_m = np.clip(expected @ agree / matches, PROBABILITY_FLOOR, 1 - PROBABILITY_FLOOR)
        new_proportion = min(max(matches / counts.sum(), 1e-15), 1 - PROBABILITY_FLOOR)
        change = max(float(np.max(np.abs(new_m - m))), abs(new_proportion - proportion) / proportion)
        m, proportion = new_m, new_proportion
        if change <= tolerance:
            converged = True
            break
    not_above_u = tuple(name for name, m_f, u_f in zip(names, m, u_vector) if m_f <= u_f)
    m = np.minimum(np.maximum(m, u_vector * M_ABOVE_U), 1 - PROBABILITY_FLOOR)
    return EMResult(m=dict(zip(names, map(float, m))), u={name: float(u[name]) for name in names},
                    match_proportion=proportion, iterations=iteration, converged=converged,
                    pairs=len(agreement), total_pairs=float(counts.sum()), not_above_u=not_above_u)


# -- a rules file with the estimates -------------------------------------------------------------------
def _significant(value: float) -> float:
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}")


def estimate_rules(rules_source: str | Path | dict, frame: pd.DataFrame | str | Path, threshold: float | None,
                   *, max_pairs: int = 1_000_000, seed: int = 0) -> tuple[dict, EMResult]:
    """The rules document with ``[rule]`` replaced by ``[rule.fellegi_sunter]`` holding m and u estimated
    on ``frame`` (the querier's own table) and ``threshold`` (default: the file's Fellegi-Sunter threshold).
    Every other table ([[field]], [[blocking]], ...) is kept as it was."""
    rules = load_rules(rules_source)                # validates the fields (and the file's current rule)
    document = copy.deepcopy(rules_source) if isinstance(rules_source, dict) else \
        tomllib.loads(Path(rules_source).read_text())
    if threshold is None:
        existing = document.get("rule", {}).get("fellegi_sunter", {}).get("threshold")
        if existing is None:
            raise PartyError(f"{rules.source} has no Fellegi-Sunter threshold: give one with --threshold "
                             "(a log2 weight, e.g. 8)")
        threshold = existing
    threshold = float(threshold)
    if not math.isfinite(threshold):
        raise PartyError("the threshold must be a finite number")
    if not isinstance(frame, pd.DataFrame):
        frame = read_table(frame)
    codes = rules.codes(frame)
    n = len(frame)
    u = u_from_frequencies(rules, codes, seed=seed)
    pairs = training_pairs(rules, codes, max_pairs=max_pairs, seed=seed)
    if not len(pairs.left):
        raise PartyError("no two records of the input agree on any field: EM has nothing to learn from")
    agreement = field_agreement(rules, codes, pairs.left, pairs.right)
    result = estimate_m_u(agreement, u, weight=pairs.weight, total_pairs=n * (n - 1) / 2)
    m_out = {name: _significant(value) for name, value in result.m.items()}
    u_out = {name: _significant(value) for name, value in result.u.items()}
    useless = [name for name in m_out if not u_out[name] < m_out[name] < 1]
    if useless:
        raise PartyError(f"field(s) {', '.join(useless)} agree in nearly every pair of records and cannot "
                         "tell matches apart: remove them from the rules file")
    document["rule"] = {"fellegi_sunter": {"m": m_out, "u": u_out, "threshold": threshold}}
    load_rules(document)            # the written file must load: refuses an unreachable or too-low threshold
    return document, result


def rules_text(document: dict, result: EMResult, records: int) -> str:
    """The rules file as TOML, headed by a comment saying where m and u came from."""
    header = (f"# m and u estimated with EM (party estimate) on {records:,} records: {result.pairs:,} training "
              f"pairs, {result.iterations} iterations{'' if result.converged else ' (not converged)'}.\n"
              "# Both parties must use these m, u and threshold: the holder edits only column names and "
              "date formats.\n")
    return header + tomli_w.dumps(document)
