"""Numeric utility: mean, SD and correlations before/after for chosen columns (El Emam & Arbuckle,
ch. 13, "Degrees of Loss"); generalized values are read as numbers: ``a-b`` -> midpoint, ``90+`` -> 90,
``<b`` -> b."""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np
import pandas as pd

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
