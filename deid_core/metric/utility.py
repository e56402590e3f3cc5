"""Data utility for chosen analyses, original vs released (El Emam & Arbuckle, *Anonymizing Health Data*,
ch. 13, "Workload-Aware De-Identification": means, standard deviations, covariance matrices and basic
regression models, each compared by the mean squared error before/after, and simple cross-tabulations;
ch. 2, "The Impact of Missingness": complete case analysis loses ``1 − (1 − p)^m`` of the records when
each of m variables misses a share p at random; docs/masking.md, "Utility").

The two tables need not have the same rows (a subsample, suppressed records): every statistic is computed
on each table on its own. Generalized values are read as numbers as :func:`.numeric.to_number` does
(``30-39`` -> 34.5); a missing or suppressed cell is missing.
"""
from __future__ import annotations

import math
from itertools import combinations
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import DeidInputError, ParameterError, literal
from .missingness import missing_mask
from .numeric import to_number

MISSING_LABEL = "(missing)"


def complete_case_loss(p: float, m: int) -> float:
    """Expected share of records a complete case analysis drops: m variables each missing a share p at random."""
    return 1.0 - (1.0 - p) ** m


def _mse(before: np.ndarray, after: np.ndarray) -> float | None:
    ok = np.isfinite(before) & np.isfinite(after)
    return float(np.mean((after[ok] - before[ok]) ** 2)) if ok.any() else None


def _num(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def numbers(df: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """The columns read as numbers (suppressed or unreadable cells -> NaN)."""
    return pd.DataFrame({c: to_number(df[c]) for c in columns}, index=df.index)


_CODE_LIKE = r"^[+-]?0\d"
"""A leading zero before another digit (``02139``, ``007``, ``0389``): the value is a code, not a quantity."""


def numeric_columns(df: pd.DataFrame, candidates: Sequence[str]) -> list[str]:
    """The candidates whose every present value reads as a number (at least two values), except columns
    holding any code-like value with a leading zero (ZIP codes, ICD-9 ``0389``): their mean means nothing."""
    out = []
    for c in candidates:
        present = ~missing_mask(df, [c])[:, 0]
        x = to_number(df[c])[present]
        text = df[c][present].astype(str).str.strip()
        if present.sum() >= 2 and x.notna().all() and not text.str.contains(_CODE_LIKE, regex=True).any():
            out.append(c)
    return out


def moments(before: pd.DataFrame, after: pd.DataFrame) -> dict:
    """Mean and SD per numeric column, original vs released, and the MSE over the columns."""
    rows = {c: {"mean_before": _num(before[c].mean()), "mean_after": _num(after[c].mean()),
                "sd_before": _num(before[c].std()), "sd_after": _num(after[c].std())} for c in before.columns}
    mb, ma = before.mean().to_numpy(float), after.mean().to_numpy(float)
    sb, sa = before.std().to_numpy(float), after.std().to_numpy(float)
    return {"columns": rows, "mse_means": _mse(mb, ma), "mse_sds": _mse(sb, sa)}


def covariance(before: pd.DataFrame, after: pd.DataFrame) -> dict:
    """Covariance matrices (pairwise-complete, as pandas computes them) and the MSE of their entries."""
    cb, ca = before.cov(), after.cov()
    return {"before": cb.round(10).to_dict(), "after": ca.round(10).to_dict(),
            "mse": _mse(cb.to_numpy(float).ravel(), ca.to_numpy(float).ravel()),
            "correlation_before": before.corr().round(10).to_dict(), "correlation_after": after.corr().round(10).to_dict()}


def parse_formula(text: str) -> tuple[str, list[str]]:
    """``y ~ x1 + x2`` -> ("y", ["x1", "x2"])."""
    lhs, sep, rhs = text.partition("~")
    xs = [t.strip() for t in rhs.split("+")]
    if not sep or not lhs.strip() or not all(xs):
        raise ParameterError(f"{{formulas}}: expected y~x1+x2, got {literal(repr(text))}", "formulas")
    return lhs.strip(), xs


def ols(num: pd.DataFrame, y: str, xs: Sequence[str]) -> dict:
    """Ordinary least squares with an intercept on the complete cases (numpy ``lstsq``): coefficients,
    standard errors ``√(σ̂² diag((XᵀX)⁻¹))``, R² and the records used."""
    data = num[[y, *xs]].dropna().to_numpy(float)
    n, p = len(data), len(xs) + 1
    names = ["(intercept)", *xs]
    if n <= p:
        return {"n": n, "coefficients": dict.fromkeys(names), "std_errors": dict.fromkeys(names), "r2": None}
    X = np.column_stack([np.ones(n), data[:, 1:]])
    beta, _, rank, _ = np.linalg.lstsq(X, data[:, 0], rcond=None)
    resid = data[:, 0] - X @ beta
    sigma2 = float(resid @ resid) / (n - rank)
    se = np.sqrt(np.clip(np.diag(np.linalg.pinv(X.T @ X)) * sigma2, 0, None))
    tss = float(((data[:, 0] - data[:, 0].mean()) ** 2).sum())
    return {"n": n, "coefficients": dict(zip(names, map(float, beta))), "std_errors": dict(zip(names, map(float, se))),
            "r2": 1 - float(resid @ resid) / tss if tss > 0 else None}


def regression(before: pd.DataFrame, after: pd.DataFrame, formula: str) -> dict:
    """The same OLS model on both tables: coefficients, the MSE of the coefficients, and for each coefficient
    whether the released estimate lies inside the original's 95 % confidence interval (the same inference)."""
    y, xs = parse_formula(formula)
    b, a = ols(before, y, xs), ols(after, y, xs)
    names = list(b["coefficients"])
    cb = np.array([np.nan if b["coefficients"][k] is None else b["coefficients"][k] for k in names])
    ca = np.array([np.nan if a["coefficients"][k] is None else a["coefficients"][k] for k in names])
    inside = {}
    for i, k in enumerate(names):
        se = b["std_errors"][k]
        inside[k] = (None if se is None or not np.isfinite(ca[i])
                     else bool(abs(ca[i] - cb[i]) <= 1.959964 * se))
    return {"formula": f"{y} ~ {' + '.join(xs)}", "before": b, "after": a, "mse": _mse(cb, ca),
            "after_within_before_ci95": inside}


def _labels(s: pd.Series, miss: np.ndarray) -> pd.Series:
    return s.astype(object).where(~miss, MISSING_LABEL).astype(str)


def _cramers_v(counts: pd.Series) -> float | None:
    """Cramér's V from the non-empty cells of a contingency table (``counts`` indexed by (row, column)):
    χ² = n (Σ n_ij² / (n_i· n_·j) − 1), without building the dense table (two columns of dates or codes
    would give millions of empty cells)."""
    n = float(counts.sum())
    rows, cols = counts.groupby(level=0).sum(), counts.groupby(level=1).sum()
    if n == 0 or min(len(rows), len(cols)) < 2:
        return None
    ni = rows.reindex(counts.index.get_level_values(0)).to_numpy(float)
    nj = cols.reindex(counts.index.get_level_values(1)).to_numpy(float)
    chi2 = n * (float((counts.to_numpy(float) ** 2 / (ni * nj)).sum()) - 1.0)
    return math.sqrt(max(chi2, 0.0) / (n * (min(len(rows), len(cols)) - 1)))


def _onto_released(before: pd.Series, after: pd.Series) -> pd.Series | None:
    """The original values recoded to the released category their rows became most often (a full-domain
    generalization maps each value to one category); None when the tables' rows do not pair up."""
    if len(before) != len(after):
        return None
    b, a = before.astype(object).to_numpy(), after.astype(object).to_numpy()
    pairs = pd.DataFrame({"b": b, "a": a}).dropna()
    if pairs.empty:
        return None
    target = pairs.groupby("b", sort=False)["a"].agg(lambda v: v.value_counts().index[0])
    return pd.Series(b, index=before.index).map(target).where(pd.notna(b), None)


def _tvd_on_released_categories(before: pd.DataFrame, after: pd.DataFrame, c1: str, c2: str) -> float | None:
    """The total variation distance with the original recoded to the released categories (rows paired by
    position): what suppression and recoding beyond the categories changed; None when rows do not pair."""
    recoded = {}
    for c in (c1, c2):
        mapped = _onto_released(before[c], after[c])
        if mapped is None:
            return None
        recoded[c] = mapped
    frame = pd.DataFrame(recoded)
    miss = missing_mask(after, [c1, c2])
    tabs = []
    for df, m in ((frame, frame.isna().to_numpy()), (after, miss)):
        cells = pd.DataFrame({"x": _labels(df[c1], m[:, 0]).to_numpy(), "y": _labels(df[c2], m[:, 1]).to_numpy()})
        tabs.append(cells.groupby(["x", "y"], sort=False).size())
    p, q = (t / t.sum() for t in tabs)
    p, q = p.align(q, fill_value=0.0)
    return min(1.0, float(0.5 * np.abs(p - q).sum()))


def crosstab(before: pd.DataFrame, after: pd.DataFrame, c1: str, c2: str) -> dict:
    """Distortion of the cross-tabulation of two categorical columns.

    ``tvd``: total variation distance ½ Σ |p − q| between the joint distributions over the union of cells
    (missing and suppressed cells as one more category), 0 = the same table, 1 = no cell in common; a
    generalized value counts as a different cell. Cramér's V before/after (missing cells left out)
    compares the strength of the association, which survives a recoding of the categories.  Only the
    non-empty cells are counted (sparse), whatever the columns' cardinality. ``tvd_released_categories``:
    the same distance with each original value recoded to the released category its rows became (rows
    paired by position; None when the tables differ in length), so generalization alone gives 0 and only
    suppression and other changes count.
    """
    out = {"columns": [c1, c2]}
    tabs = []
    for df in (before, after):
        miss = missing_mask(df, [c1, c2])
        cells = pd.DataFrame({"x": _labels(df[c1], miss[:, 0]).to_numpy(), "y": _labels(df[c2], miss[:, 1]).to_numpy()})
        tabs.append(cells.groupby(["x", "y"], sort=False).size())
    p, q = (t / t.sum() for t in tabs)
    p, q = p.align(q, fill_value=0.0)
    out["tvd"] = min(1.0, float(0.5 * np.abs(p - q).sum()))
    out["tvd_released_categories"] = _tvd_on_released_categories(before, after, c1, c2)
    for name, t in zip(("before", "after"), tabs):
        kept = ((t.index.get_level_values(0) != MISSING_LABEL) & (t.index.get_level_values(1) != MISSING_LABEL))
        out[f"cramers_v_{name}"] = _cramers_v(t[kept])
        out[f"cells_{name}"] = int(len(t))
    return out


def complete_cases(before: pd.DataFrame, after: pd.DataFrame, columns: Sequence[str]) -> dict:
    """Complete case analysis over ``columns``: records lost in each table, and the book's
    ``1 − (1 − p)^m`` with p the released table's average share of missing cells per column."""
    m = len(columns)
    mb, ma = missing_mask(before, columns), missing_mask(after, columns)
    p_after = float(ma.mean()) if ma.size else 0.0
    p_before = float(mb.mean()) if mb.size else 0.0
    return {"columns": list(columns), "m": m,
            "missing_share_per_column_before": dict(zip(columns, map(float, mb.mean(0)))) if len(before) else {},
            "missing_share_per_column_after": dict(zip(columns, map(float, ma.mean(0)))) if len(after) else {},
            "lost_before": float(mb.any(1).mean()) if len(before) else 0.0,
            "lost_after": float(ma.any(1).mean()) if len(after) else 0.0,
            "p_before": p_before, "p_after": p_after,
            "expected_lost_before": complete_case_loss(p_before, m),
            "expected_lost_after": complete_case_loss(p_after, m)}


def utility(original: pd.DataFrame, released: pd.DataFrame, numeric: Sequence[str], categorical: Sequence[str],
            pairs: Sequence[tuple[str, str]] | None = None, formulas: Sequence[str] = ()) -> dict:
    """Every analysis of this module on ``original`` vs ``released`` (see the module docstring)."""
    for c in [*numeric, *categorical, *(x for pr in (pairs or []) for x in pr)]:
        for name, df in (("original", original), ("released", released)):
            if c not in df.columns:
                raise DeidInputError(f"unknown column {c!r}: not in the {name} table")
    for f in formulas:
        y, xs = parse_formula(f)
        bad = [v for v in (y, *xs) if v not in numeric]
        if bad:
            raise ParameterError(f"{{formulas}} {literal(repr(f))}: {literal(repr(bad[0]))} is not one of the numeric "
                                 f"columns ({literal(', '.join(numeric))})", "formulas")
    nb, na = numbers(original, numeric), numbers(released, numeric)
    pairs = list(combinations(categorical, 2)) if pairs is None else list(pairs)
    columns = list(dict.fromkeys([*numeric, *categorical]))
    return {
        "records": {"original": len(original), "released": len(released)},
        "numeric": list(numeric), "categorical": list(categorical),
        "moments": moments(nb, na) if numeric else {},
        "covariance": covariance(nb, na) if len(numeric) > 1 else {},
        "regressions": [regression(nb, na, f) for f in formulas],
        "crosstabs": [crosstab(original, released, a, b) for a, b in pairs],
        "complete_cases": complete_cases(original, released, columns),
    }
