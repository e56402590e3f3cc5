"""Sweeney's precision of a full-domain node: ``1 − (1/(N·|Q|)) Σ_q Σ_r level(r,q)/height_q`` with
suppressed cells at full height; "height" = Σ_q level_q of the node."""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from .missingness import is_marker


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
