"""Information loss and utility (El Emam & Arbuckle, ch. 2, "Information Loss Metrics";
ch. 13, "Degrees of Loss").

All functions compare a table *before* and *after* a transformation (same
rows, same order). A cell is missing when it is NaN or the suppression marker.

* missingness (ch. 2, "Information Loss Metrics"): record = share of records with any missing QI
  cell; cell = share of missing QI cells; loss = after − before.
* non-uniform entropy, ARX's variant (El Emam 2009; ARX
  ``MetricMDNUEntropy``): for each QI q and record r,
  ``log2( #input records whose value generalizes to r's generalized value /
  #input records with r's original value )``, summed over records and QIs
  (bits). A suppressed cell counts as generalized to the top (N records).
  Reported in bits and as a % of the maximum (everything at the top).
* discernibility: ``Σ_j f_j²`` over the classes of non-suppressed records,
  plus N for each suppressed record (as ARX and pycanon do).
* average EC size: kept records / number of ECs.
* precision (Sweeney): ``1 − (1/(N·|Q|)) Σ_q Σ_r level(r,q)/height_q``,
  suppressed cells at full height; "height" = Σ_q level_q of the node.
* numeric utility: mean, SD and correlations before/after for chosen
  columns; generalized values are read as numbers: ``a-b`` -> midpoint,
  ``90+`` -> 90, ``<b`` -> b.
"""
from __future__ import annotations

import re
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .spec import SUPPRESSED
from .transform import ec_sizes_of


def is_marker(s: pd.Series) -> np.ndarray:
    """Bool per cell: the suppression marker (through the categories when categorical)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        cats = s.cat.categories
        if SUPPRESSED not in cats:
            return np.zeros(len(s), dtype=bool)
        return s.cat.codes.to_numpy() == cats.get_loc(SUPPRESSED)
    return (s.astype(object) == SUPPRESSED).to_numpy()


def missing_mask(df: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """Bool matrix (records × columns): NaN or the suppression marker."""
    if not columns:
        return np.zeros((len(df), 0), dtype=bool)
    return np.column_stack([df[c].isna().to_numpy() | is_marker(df[c]) for c in columns])


def missingness(df: pd.DataFrame, columns: Sequence[str]) -> dict:
    """Record and cell missingness over the QI columns (fractions)."""
    m = missing_mask(df, columns)
    n = len(df)
    return {"record": float(m.any(axis=1).mean()) if n else 0.0,
            "cell": float(m.mean()) if m.size else 0.0,
            "records_missing": int(m.any(axis=1).sum()), "cells_missing": int(m.sum())}


def missingness_change(before: pd.DataFrame, after: pd.DataFrame, columns: Sequence[str]) -> dict:
    """Missingness before, after, and the loss (after − before) — El Emam & Arbuckle, ch. 2."""
    b, a = missingness(before, columns), missingness(after, columns)
    return {"before": b, "after": a, "loss": {"record": a["record"] - b["record"], "cell": a["cell"] - b["cell"]}}


def _codes(s: pd.Series) -> np.ndarray:
    """Integer code per cell, NaN -> 0 (missing is one value)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return s.cat.codes.to_numpy().astype(np.int64) + 1
    codes, _ = pd.factorize(s.astype(object), use_na_sentinel=True)
    return codes + 1


def _generalized_counts(o: np.ndarray, g: np.ndarray, supp: np.ndarray, n: int) -> np.ndarray:
    """Per record: how many *input* records have a value that generalizes to this record's value.

    Suppressed records: N. The value -> generalized value map is read off the
    non-suppressed records, so suppression never lowers the count of the
    records that remain (ARX estimates it from the input the same way).
    """
    count_o = np.bincount(o, minlength=o.max() + 1 if len(o) else 1)
    out = np.full(len(o), float(n))
    keep = ~supp
    if keep.any():
        pairs = pd.DataFrame({"o": o[keep], "g": g[keep]}).drop_duplicates()
        if pairs["o"].is_unique:  # a function, as in full-domain and full-subtree recoding
            gsum = np.bincount(pairs["g"].to_numpy(), weights=count_o[pairs["o"].to_numpy()], minlength=g.max() + 1)
            out[keep] = gsum[g[keep]]
        else:  # local recoding: fall back to the output frequencies, never below the original's
            out[keep] = np.maximum(np.bincount(g[keep])[g[keep]], count_o[o[keep]])
    return out


def non_uniform_entropy(before: pd.DataFrame, after: pd.DataFrame, columns: Sequence[str]) -> dict:
    """ARX's non-uniform entropy (bits) and its share of the maximum (see module doc)."""
    n = len(before)
    loss = maximum = 0.0
    per: dict[str, float] = {}
    for c in columns:
        o = _codes(before[c])
        supp = is_marker(after[c])
        gen = _generalized_counts(o, _codes(after[c]), supp, n)
        orig = np.bincount(o)[o].astype(float)
        col_loss = float(np.sum(np.log2(gen / orig)))
        per[c] = col_loss
        loss += col_loss
        maximum += float(np.sum(np.log2(n / orig)))
    return {"bits": loss, "max_bits": maximum, "percent": 100 * loss / maximum if maximum else 0.0, "per_column": per}


def discernibility(after: pd.DataFrame, columns: Sequence[str]) -> float:
    """``Σ f_j²`` over classes of non-suppressed records + N per suppressed record."""
    n = len(after)
    supp = missing_mask(after, columns).all(axis=1) if columns else np.zeros(n, dtype=bool)
    kept = after.loc[~supp, list(columns)]
    f = ec_sizes_of(kept, columns) if len(kept) else np.zeros(0)
    return float(np.sum(f.astype(float))) + float(n) * float(supp.sum())  # Σ_records f = Σ_j f_j²


def average_class_size(after: pd.DataFrame, columns: Sequence[str]) -> float:
    """Kept (not fully suppressed) records per equivalence class."""
    supp = missing_mask(after, columns).all(axis=1)
    kept = after.loc[~supp, list(columns)]
    if not len(kept):
        return 0.0
    f = ec_sizes_of(kept, columns)
    return float(len(kept) / np.sum(1.0 / f))


def precision(levels: Mapping[str, int], heights: Mapping[str, int], after: pd.DataFrame | None = None) -> dict:
    """Sweeney's precision of a full-domain node (suppressed cells at full height) and its total height."""
    qs = [q for q in heights if heights[q] > 0]
    if not qs:
        return {"precision": 1.0, "height": 0}
    n = len(after) if after is not None else 1
    total = 0.0
    for q in qs:
        lv = np.full(n, levels.get(q, 0) / heights[q])
        if after is not None:
            lv[is_marker(after[q])] = 1.0
        total += lv.sum()
    return {"precision": 1.0 - total / (n * len(qs)), "height": int(sum(levels.get(q, 0) for q in qs))}


_RANGE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*-\s*(-?\d+(?:\.\d+)?)\s*$")


def to_number(s: pd.Series) -> pd.Series:
    """Numeric reading of (possibly generalized) values: ``a-b`` -> midpoint, ``90+`` -> 90, ``<b`` -> b."""
    def conv(cats: pd.Index) -> list[float]:
        out = []
        for v in cats.astype(str):
            m = _RANGE.match(v)
            if m:
                out.append((float(m.group(1)) + float(m.group(2))) / 2)
                continue
            w = v.strip().rstrip("+").lstrip("<=").lstrip("<")
            try:
                out.append(float(w))
            except ValueError:
                out.append(np.nan)
        return out
    cat = s if isinstance(s.dtype, pd.CategoricalDtype) else s.astype("category")
    vals = np.append(np.asarray(conv(cat.cat.categories), dtype=float), np.nan)
    return pd.Series(vals[cat.cat.codes.to_numpy()], index=s.index, name=s.name)


def numeric_utility(before: pd.DataFrame, after: pd.DataFrame, columns: Sequence[str]) -> dict:
    """Mean and SD before/after per column, before–after correlation, and the correlation matrices."""
    if not columns:
        return {}
    b = pd.DataFrame({c: to_number(before[c]) for c in columns})
    a = pd.DataFrame({c: to_number(after[c]) for c in columns})
    out: dict = {"columns": {}}
    for c in columns:
        out["columns"][c] = {
            "mean_before": float(b[c].mean()), "mean_after": float(a[c].mean()),
            "sd_before": float(b[c].std()), "sd_after": float(a[c].std()),
            "corr_before_after": float(b[c].corr(a[c])) if a[c].notna().sum() > 1 else float("nan"),
        }
    if len(columns) > 1:
        out["correlation_before"] = b.corr().round(6).to_dict()
        out["correlation_after"] = a.corr().round(6).to_dict()
    return out
