"""Non-uniform entropy, ARX's variant (El Emam et al. 2009; Kohlmayer et al., ARX ``MetricMDNUEntropy``).

For each QI q and record r: ``log2(#input records whose value generalizes to r's generalized value /
#input records with r's original value)``, summed over records and QIs (bits). A suppressed cell
counts as generalized to the top (N records). :func:`entropy_terms` is the one formula: the
DataFrame measure here (reports) and the per-level tables of :mod:`deid_core.metric.levels`
(searches) both use it.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from .missingness import is_marker


def frequencies(codes: np.ndarray) -> np.ndarray:
    """Per record: how many records carry its code (codes are non-negative integers)."""
    return np.bincount(codes)[codes]


def entropy_terms(generalized: "np.ndarray | float", original: np.ndarray) -> np.ndarray:
    """Per-record loss in bits: ``log2(generalized count / original count)``."""
    return np.log2(generalized / original)


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
    """ARX's non-uniform entropy (bits) and its share of the maximum (everything at the top)."""
    n = len(before)
    loss = maximum = 0.0
    per: dict[str, float] = {}
    for c in columns:
        o = _codes(before[c])
        supp = is_marker(after[c])
        gen = _generalized_counts(o, _codes(after[c]), supp, n)
        orig = frequencies(o).astype(float)
        col_loss = float(np.sum(entropy_terms(gen, orig)))
        per[c] = col_loss
        loss += col_loss
        maximum += float(np.sum(entropy_terms(n, orig)))
    return {"bits": loss, "max_bits": maximum, "percent": 100 * loss / maximum if maximum else 0.0, "per_column": per}
