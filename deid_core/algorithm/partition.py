"""Recursive partitioning for same-disease data (Liu et al. 2016, §3.3).

Top-down binary splits, as in a decision tree and in Mondrian (LeFevre et al. 2006): a subset S of at least
``2 × min_size`` records is split at the value s of QI j that minimizes
``R_j(s) / v_j`` — the average instance-disclosure risk of S after the split
(``R = (1/|S|) Σ_sides n_i · n_i/N_i``, Liu et al. 2016 §3.2) over the variance of
j in S (values on a unit scale) — among the splits leaving both sides with
at least ``min_size`` records (and, optionally, each side's population
count N at least ``min_population``). Each final subset is one equivalence class,
generalized per QI to its most detailed common value (the lowest hierarchy
level at which all its records agree); ``N_i`` is the population re-counted
at those levels.

Resolved ambiguities (Figure 1 is not in our copy of the paper): values are
ordered numerically, as dates, or in hierarchy order, and put on a unit scale
by their numeric / day / rank value; a QI with zero variance in S is not
split; ties go to the first QI in spec order, then the smaller value; the
population is narrowed to S's common generalization as the recursion goes
down (the paper's "reduce P to the relevant segment"). As in the paper each
subset is one class with its own N_i, although split points that are not
hierarchy boundaries can give two subsets the same (or nested) released
values; :func:`summary` reports the released classes merged on equal values
next to the subsets. ``disjoint=True`` admits only splits whose two sides get
disjoint hierarchy nodes on the split QI (strict, but with data-driven split
points it rarely finds one below ``*``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import DeidInputError, ParameterError
from ..hierarchy import Hierarchy
from ..metric.entropy import non_uniform_entropy
from ..risk.encoding import EncodedTable, encode_table
from ..risk.population import release_class_sizes, validate_population
from ..spec import Spec
from .baseline import safe_harbor_release
from .result import SearchResult


def unit_values(h: Hierarchy) -> np.ndarray:
    """Per leaf: its position on a unit scale (numbers, else ISO dates in days, else hierarchy order)."""
    s = pd.Series(h.leaves, dtype=object)
    x = pd.to_numeric(s, errors="coerce")
    if x.isna().any():
        d = pd.to_datetime(s, errors="coerce", format="ISO8601")
        x = (d - pd.Timestamp("1900-01-01")).dt.days if d.notna().all() else pd.Series(np.arange(len(s)), dtype=float)
    x = x.to_numpy(dtype=float)
    span = x.max() - x.min()
    return (x - x.min()) / span if span > 0 else np.zeros_like(x)


@dataclass
class Subset:
    """One released equivalence class: its records, per-QI levels and values, and instance-disclosure risk."""

    rows: np.ndarray
    levels: dict[str, int]
    values: dict[str, str]
    population: float

    @property
    def n(self) -> int:
        return len(self.rows)

    @property
    def r(self) -> float:
        return self.n / self.population


class Partitioner:
    """Liu et al. 2016 §3.3 on an encoded table with a population."""

    def __init__(self, table: EncodedTable, min_size: int, min_population: float = 0.0, disjoint: bool = False) -> None:
        if table.population is None:
            raise ParameterError("{method} partition needs {population} (instance-disclosure risk uses N_i)", "method",
                                 "population")
        if min_size < 1:
            raise DeidInputError(f"minimum subset size must be positive, got {min_size}")
        if any((table.codes[q] < 0).any() for q in table.qis):
            raise ParameterError("{method} partition needs every QI value present (missing values cannot be ordered)",
                                 "method")
        self.t, self.m, self.min_pop, self.disjoint = table, int(min_size), float(min_population), disjoint
        self.qis = list(table.qis)
        self.h = [table.hierarchies[q] for q in self.qis]
        # level codes (levels × records) and (levels × population rows) per QI
        self.dc = [np.stack([h.level_map(l)[table.codes[q]] for l in range(h.height + 1)]) for q, h in zip(self.qis, self.h)]
        self.pc = [np.stack([h.level_map(l)[table.population.codes[q]] for l in range(h.height + 1)]) for q, h in zip(self.qis, self.h)]
        self.cnt = table.population.counts
        self.x = [unit_values(h)[table.codes[q]] for q, h in zip(self.qis, self.h)]
        self.splits_tried = 0

    def _common_levels(self, codes: list[np.ndarray]) -> np.ndarray:
        """Most detailed level at which each prefix of ``codes`` (levels × records) agrees, per QI: (QIs × records)."""
        out = []
        for c in codes:
            same = np.minimum.accumulate(c, axis=1) == np.maximum.accumulate(c, axis=1)
            out.append(np.argmax(same, axis=0))  # the top level always agrees
        return np.stack(out)

    def _population(self, rows: np.ndarray, levels: np.ndarray, pcs: list[np.ndarray], cnt: np.ndarray) -> float:
        """Population count of the class of ``rows`` generalized to ``levels`` (``pcs``/``cnt``: the population
        segment's level codes and counts)."""
        r0 = rows[0]
        hit = pcs[0][levels[0]] == self.dc[0][levels[0], r0]
        for i in range(1, len(levels)):
            hit &= pcs[i][levels[i]] == self.dc[i][levels[i], r0]
        return max(float(cnt[hit].sum()), float(len(rows)))  # never below n (the rule of :meth:`deid_core.risk.EncodedTable.classes`)

    def _narrow(self, rows: np.ndarray, levels: np.ndarray, pop: np.ndarray) -> np.ndarray:
        r0 = rows[0]
        hit = np.ones(len(pop), dtype=bool)
        for i, l in enumerate(levels):
            hit &= self.pc[i][l, pop] == self.dc[i][l, r0]
        return pop[hit]

    def best_split(self, rows: np.ndarray, pop: np.ndarray) -> tuple[float, np.ndarray, np.ndarray] | None:
        """(score R_j(s)/v_j, left rows, right rows) of the best admissible split of ``rows``, or None."""
        n, best = len(rows), None
        pcs, cnt = [p[:, pop] for p in self.pc], self.cnt[pop]
        for j in range(len(self.qis)):
            xj = self.x[j][rows]
            v = float(xj.var())
            if v <= 0:
                continue
            order = rows[np.argsort(xj, kind="stable")]
            xs = self.x[j][order]
            cuts = np.flatnonzero(xs[:-1] != xs[1:]) + 1  # left size
            cuts = cuts[(cuts >= self.m) & (n - cuts >= self.m)]
            if not len(cuts):
                continue
            pre = self._common_levels([c[:, order] for c in self.dc])
            suf = self._common_levels([c[:, order[::-1]] for c in self.dc])
            for c in cuts:
                left, right = order[:c], order[c:]
                lj = max(pre[j, c - 1], suf[j, n - c - 1])
                if self.disjoint and self.dc[j][lj, left[0]] == self.dc[j][lj, right[0]]:
                    continue  # the sides' released values on j would overlap (one contains the other)
                self.splits_tried += 1
                nl = self._population(left, pre[:, c - 1], pcs, cnt)
                nr = self._population(right, suf[:, n - c - 1], pcs, cnt)
                if min(nl, nr) < self.min_pop:
                    continue
                score = (c * c / nl + (n - c) ** 2 / nr) / n / v
                if best is None or score < best[0] - 1e-15:
                    best = (score, left, right)
        return best

    def run(self) -> list[Subset]:
        """Partition all records; each subset has ≥ ``min_size`` records (unless the data has fewer)."""
        out: list[Subset] = []
        stack = [(np.arange(self.t.n), np.arange(len(self.cnt)))]
        while stack:
            rows, pop = stack.pop()
            levels = self._common_levels([c[:, rows] for c in self.dc])[:, -1]
            pop = self._narrow(rows, levels, pop)
            split = self.best_split(rows, pop) if len(rows) >= 2 * self.m else None
            if split is None:
                r0 = rows[0]
                out.append(Subset(np.sort(rows), {q: int(l) for q, l in zip(self.qis, levels)},
                                  {q: str(h.labels(int(l))[self.dc[i][l, r0]]) for i, (q, h, l) in enumerate(zip(self.qis, self.h, levels))},
                                  self._population(rows, levels, [p[:, pop] for p in self.pc], self.cnt[pop])))
                continue
            stack += [(split[2], pop), (split[1], pop)]
        return out


def release(df: pd.DataFrame, qis: list[str], subsets: list[Subset]) -> pd.DataFrame:
    """The data with each record's QIs replaced by its subset's values (local recoding)."""
    out = df.copy()
    for q in qis:
        vals = np.empty(len(df), dtype=object)
        for s in subsets:
            vals[s.rows] = s.values[q]
        out[q] = pd.Categorical(vals)
    return out


def summary(subsets: list[Subset]) -> dict:
    """Liu et al. 2016 Table IV columns on the released classes: number of ECs, max r_i, R = (1/|D|) Σ n_i r_i.

    Subsets that end up with identical released values are one class in the
    release (their records add up against the same population count).
    """
    frame = pd.DataFrame({"key": [tuple(sorted(s.values.items())) for s in subsets],
                          "n": [s.n for s in subsets], "N": [s.population for s in subsets]})
    ec = frame.groupby("key", sort=False).agg(n=("n", "sum"), N=("N", "max"))
    r = (ec["n"] / np.maximum(ec["N"], ec["n"])).to_numpy()
    n = ec["n"].to_numpy(dtype=float)
    return {"equivalence_classes": int(len(ec)), "subsets": len(subsets), "max_r": float(r.max()),
            "R": float((n * r).sum() / n.sum()), "min_subset": int(frame["n"].min())}


def search_partition(df: pd.DataFrame, spec: Spec, pop: pd.DataFrame, min_size: int,
                     min_population: float = 0.0) -> tuple[SearchResult, pd.DataFrame]:
    """Partition ``df`` (population ``pop``) into subsets of at least ``min_size`` records; the release,
    its instance-disclosure summary and non-uniform entropy, and the Safe Harbor release's for comparison."""
    t0 = time.perf_counter()
    table = encode_table(df, spec, pop)
    pop = validate_population(pop, table.qis)
    part = Partitioner(table, min_size, min_population)
    subsets = part.run()
    out = release(df, part.qis, subsets)
    summ = summary(subsets)
    sh_out, sh_pop, kept = safe_harbor_release(df, pop, spec)
    f, g, n_ec = release_class_sizes(sh_out, sh_pop, kept)
    policy = {"risk": summ["max_r"], "information_loss": non_uniform_entropy(df, out, part.qis)["bits"],
              "suppressed_records": 0, "summary": summ, "subsets": [
                  {"size": s.n, "population": s.population, "r": s.r, "levels": s.levels, "values": s.values}
                  for s in subsets]}
    return SearchResult("partition", [policy], part.splits_tried, time.perf_counter() - t0, {
        "min_size": min_size, "risk_measure": "instance disclosure max r_i (Liu et al. 2016 §3.2)",
        "loss": "non-uniform entropy (bits)",
        "safe_harbor": {"equivalence_classes": n_ec, "max_r": float((f / g).max()), "R": float((f / g).mean())},
    }), out
