"""Dates: "generalize intervals to maintain order" (El Emam & Arbuckle, ch. 5, "Generalizing Intervals to Maintain Order").

Per sequence (e.g. a patient's claims, sorted by date): the first date is
the anchor, the rest become intervals in days. The anchor is generalized
(default: to its month) and each interval ≥ 2 days to a bin
``[w·m + 1, w·m + w]`` (default w = 7, m = (d − 1) // w); a value is drawn
uniformly inside each generalized value and the dates are rebuilt
cumulatively, so order is kept. Intervals of 0 or 1 day are kept (consecutive
days stay together). The draw is injectable so the book's vector is testable:
Bob's 2001/04/08, 2002/05/07, 2002/08/12, 2003/07/27, 2003/08/11 with draws
2001/04/23, 398, 96, 345, 20 -> 2001/04/23, 2002/05/26, 2002/08/30,
2003/08/10, 2003/08/30.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from ..errors import DeidInputError

Draw = Callable[[np.ndarray, np.ndarray], np.ndarray]


def uniform_draw(rng: np.random.Generator) -> Draw:
    """Uniform integer in [lo, hi] (inclusive), vectorized."""
    return lambda lo, hi: rng.integers(lo, hi + 1)


def interval_bins(days: np.ndarray, width: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Bin ``[w·m + 1, w·m + w]`` of each interval; 0 and 1 are their own bins (kept)."""
    m = (days - 1) // width
    lo, hi = width * m + 1, width * m + width
    keep = days <= 1
    return np.where(keep, days, lo), np.where(keep, days, hi)


def anchor_bounds(anchor: pd.Series, level: str = "month") -> tuple[np.ndarray, np.ndarray]:
    """First and last day (as day numbers since the epoch) of the anchor's generalized value."""
    if level == "day":
        lo = anchor
        hi = anchor
    elif level == "month":
        lo = anchor.dt.to_period("M").dt.start_time
        hi = anchor.dt.to_period("M").dt.end_time.dt.normalize()
    elif level == "year":
        lo = anchor.dt.to_period("Y").dt.start_time
        hi = anchor.dt.to_period("Y").dt.end_time.dt.normalize()
    else:
        raise DeidInputError(f"anchor level must be day, month or year, got {level!r}")
    return _days(lo), _days(hi)


def _days(s: pd.Series) -> np.ndarray:
    return (s.to_numpy(dtype="datetime64[ns]").astype("datetime64[D]")).astype(np.int64)


def generalize_intervals(dates: pd.Series, groups: pd.Series | None = None, *, anchor: str = "month",
                         width: int = 7, draw: Draw | None = None, rng: np.random.Generator | None = None,
                         anchor_draw: Draw | None = None) -> pd.Series:
    """De-identified dates (same index as ``dates``), order kept within each group.

    ``anchor_draw`` draws anchors (default: ``draw``), ``draw`` draws the
    intervals; both default to uniform draws from ``rng``.
    """
    d = pd.to_datetime(dates, errors="coerce", format="ISO8601")
    if d.isna().any():
        bad = dates[d.isna()].iloc[0]
        raise DeidInputError(f"column {dates.name!r}: value {bad!r} is not an ISO date (missing dates are not allowed here)")
    draw = draw or uniform_draw(rng or np.random.default_rng())
    anchor_draw = anchor_draw or draw
    g = pd.Series(0 if groups is None else groups.to_numpy(), index=dates.index)
    frame = pd.DataFrame({"g": g.to_numpy(), "d": d.to_numpy()}, index=dates.index)
    order = frame.sort_values(["g", "d"], kind="stable")
    day = _days(order["d"])
    first = ~order["g"].duplicated().to_numpy()
    intervals = np.diff(day, prepend=day[0])
    intervals[first] = 0
    alo, ahi = anchor_bounds(order["d"][first], anchor)
    anchors = np.asarray(anchor_draw(alo, ahi), dtype=np.int64)
    rest = ~first
    lo, hi = interval_bins(intervals[rest], width)
    drawn = np.zeros(len(day), dtype=np.int64)
    drawn[rest] = np.asarray(draw(lo, hi), dtype=np.int64)
    drawn[first] = anchors
    # cumulative rebuild within each group: anchor + sum of drawn intervals
    gid = np.cumsum(first) - 1
    out_days = pd.Series(drawn).groupby(gid).cumsum().to_numpy()
    out = pd.Series(out_days.astype("datetime64[D]"), index=order.index).reindex(dates.index)
    return out.dt.strftime("%Y-%m-%d").rename(dates.name)


def op_dates_intervals(df: pd.DataFrame, step: Mapping[str, Any], ctx: dict) -> pd.DataFrame:
    """Policy op: ``{"op": "dates_intervals", "column": c, "group": patient, "anchor": "month", "width": 7}``."""
    c = step["column"]
    grp = step.get("group")
    for col in [c] + ([grp] if grp else []):
        if col not in df.columns:
            raise DeidInputError(f"unknown column {col!r}: not in the input")
    seed = step.get("seed")
    rng = np.random.default_rng(seed)
    out = generalize_intervals(df[c].astype(object), df[grp].astype(object) if grp else None,
                               anchor=step.get("anchor", "month"), width=int(step.get("width", 7)), rng=rng)
    df[c] = out.astype("category")
    return df
