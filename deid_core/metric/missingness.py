"""Missingness and the suppression marker (El Emam & Arbuckle, Anonymizing Health Data, ch. 2,
"Information Loss Metrics"): record = share of records with any missing QI cell; cell = share of
missing QI cells; loss = after − before. A cell is missing when it is NaN or the suppression marker."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..spec import SUPPRESSED


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
