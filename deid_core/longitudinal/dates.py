"""Dates relative to a person's first event (El Emam & Arbuckle, ch. 5, "Dates"; El Emam et al. 2012, Table 3).

The Heritage Health Prize release replaced claim dates by "days since first
claim" (DSFC): the intervals between a person's events are kept, the calendar
position is not. :func:`days_since_first` computes it per person, or relative
to an anchor: a per-row anchor date column (e.g. birth date, so children are
anchored at birth) or a flag column marking each person's anchor events (the
earliest flagged event is day 0). Interval generalization that keeps order
(anchored at birth, death last, connected dates moved together) is
:func:`deid_core.transform.dates.generalize_timeline`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from .integer_codes import require_columns
from .persons import person_codes

_TRUE = {"1", "true", "yes", "y", "t"}


def parse_days(values: pd.Series) -> np.ndarray:
    """ISO dates as day numbers (float, NaN for empty cells); a non-empty value that is not a date is an error."""
    d = pd.to_datetime(values, errors="coerce", format="ISO8601")
    bad = d.isna() & values.notna() & (values.astype(str).str.strip() != "")
    if bad.any():
        raise DeidInputError(f"column {values.name!r}: value {values[bad].iloc[0]!r} is not an ISO date")
    out = np.full(len(values), np.nan)
    ok = d.notna().to_numpy()
    out[ok] = d[ok].to_numpy(dtype="datetime64[ns]").astype("datetime64[D]").astype(np.int64)
    return out


def days_since_first(df: pd.DataFrame, *, person: str, date: str, anchor: str | None = None,
                     anchor_event: str | None = None) -> pd.Series:
    """Days from the person's reference date to each row's ``date`` (nullable Int64, index of ``df``).

    Reference: the person's earliest ``date`` (default); the row's ``anchor``
    date column; or the person's earliest ``date`` among rows whose
    ``anchor_event`` flag is true (1/true/yes). Rows with no date, and persons
    without an anchor event, get a missing value.
    """
    if anchor is not None and anchor_event is not None:
        raise DeidInputError("give an anchor date column or an anchor event column, not both")
    pcode, _ = person_codes(df, person)
    require_columns(df, [date] + [c for c in (anchor, anchor_event) if c], "date")
    day = parse_days(df[date])
    if anchor is not None:
        ref = parse_days(df[anchor])
    else:
        base = day
        if anchor_event is not None:
            flag = df[anchor_event].astype(str).str.strip().str.lower().isin(_TRUE).to_numpy()
            base = np.where(flag, day, np.nan)
        ref = pd.Series(base).groupby(pcode).transform("min").to_numpy()
    return pd.Series(day - ref, index=df.index, name=f"{date}_days").round().astype("Int64")
