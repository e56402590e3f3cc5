"""Integer codes for columns and persons (shared by the longitudinal modules)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import DeidInputError


def require_columns(df: pd.DataFrame, columns: Sequence[str], role: str) -> None:
    """Raise a one-line error naming the first ``role`` column missing from ``df``."""
    for c in columns:
        if c not in df.columns:
            raise DeidInputError(f"{role} column {c!r} is not in the table")


def require_rows(df: pd.DataFrame) -> None:
    if len(df) == 0:
        raise DeidInputError("the table has no rows")


def factorize(values: pd.Series | np.ndarray) -> tuple[np.ndarray, pd.Index]:
    """Codes 0..u-1 (missing values are a value of their own) and the uniques."""
    if not isinstance(values, pd.Series):
        values = pd.Series(np.asarray(values, dtype=object))
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return codes.astype(np.int64), pd.Index(uniques)


def joint_codes(df: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """One code per distinct combination of ``columns`` (0 for every row when there are none)."""
    if not columns:
        return np.zeros(len(df), dtype=np.int64)
    key = np.zeros(len(df), dtype=np.int64)
    for c in columns:
        codes, uniques = factorize(df[c])
        key = key * max(len(uniques), 1) + codes
        key, _ = factorize(key)  # re-densify so the packed key never overflows
    return key
