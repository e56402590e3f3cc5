"""Loss measured on the equivalence classes of a released table: discernibility (``Σ_j f_j²`` over
the classes of non-suppressed records plus N per suppressed record, as ARX and pycanon count it) and
the average class size (El Emam & Arbuckle, ch. 2, "Information Loss Metrics")."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..risk.equivalence_classes import ec_sizes_of
from .missingness import missing_mask


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
