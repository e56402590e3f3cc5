"""ARX's default "Loss" (Kohlmayer et al., ARX ``MetricMDNMLoss`` with gs-factor 0.5; docs/deid_search.md).

Per QI ``x_q = (Σ_r share_r − N/|dom|) / (N − N/|dom|)`` with ``share`` the fraction of the hierarchy's
leaves under the released value (1 for a suppressed record), aggregated over QIs as
``exp(mean(ln(1 + x_q))) − 1``.
"""
from __future__ import annotations

import numpy as np


def leaf_shares(level_map: np.ndarray, cardinality: int, codes: np.ndarray) -> np.ndarray:
    """Per record: the share of the hierarchy's leaves under its released value (1 when missing).

    ``level_map`` is a hierarchy's leaf -> level-code map with its trailing missing slot,
    ``codes`` the records' codes at that level (``-1`` = missing).
    """
    under = np.bincount(level_map[:-1], minlength=cardinality).astype(float) / (len(level_map) - 1)
    return np.where(codes >= 0, under[np.maximum(codes, 0)], 1.0)


def geometric_loss(per_qi: np.ndarray, n: int, domains: np.ndarray) -> np.ndarray:
    """Per-QI share totals (last axis) -> the aggregated loss in [0, 1]."""
    lo = n / domains
    x = np.clip((per_qi - lo) / np.maximum(n - lo, 1e-300), 0, None)
    return np.expm1(np.log1p(x).mean(axis=-1))
