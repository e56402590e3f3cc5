"""Dates: "generalize intervals to maintain order" (El Emam & Arbuckle, ch. 5, "Generalizing Intervals to Maintain Order").

Per sequence (a person's dates, sorted): the first date is the anchor, the
rest become intervals in days. The anchor is generalized (default: to its
month) and each interval ≥ 2 days to a bin ``[w·m + 1, w·m + w]`` (default
w = 7, m = (d − 1) // w); a value is drawn uniformly inside each generalized
value and the dates are rebuilt cumulatively, so order is kept. Intervals of
0 or 1 day are kept (consecutive days stay together). The draw is injectable
so the book's vector is testable: Bob's 2001/04/08, 2002/05/07, 2002/08/12,
2003/07/27, 2003/08/11 with draws 2001/04/23, 398, 96, 345, 20 ->
2001/04/23, 2002/05/26, 2002/08/30, 2003/08/10, 2003/08/30.

Longitudinal data (same chapter, "A Different Anchor" and "Connected Dates";
:func:`generalize_timeline`):

* **one timeline per person**: every date column of the events (e.g.
  admission *and* discharge) is a point of the person's sequence, so length
  of stay and time since the last service are generalized intervals too and
  every order between two of the person's dates is kept (equal dates stay
  equal);
* **birth anchors**: with a birth-date column the sequence starts at birth
  (the anchor is the generalized date of birth, the first interval is from
  birth to the first service), so no service precedes the released birth;
* **death is last**: a death-date column ends the sequence (interval from the
  last service), so no service follows the released death;
* **connected dates** (a log date written with the service) move by exactly
  the shift of the date they are connected to, on the same row.

Choices where the book is silent: the birth anchor is generalized at the same
level as any anchor; a birth after a service, or a death before one, is an
error (the released order could not be consistent); a missing date stays
missing and is not a point of the timeline; a connected date whose own date is
missing on its row is an error (it would have no shift to take).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from ..longitudinal.dates import parse_days

Draw = Callable[[np.ndarray, np.ndarray], np.ndarray]

#: Position of a point among a person's points on the same day: birth first, death last.
_BIRTH, _EVENT, _DEATH = 0, 1, 2


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


def _iso(days: np.ndarray) -> np.ndarray:
    """Day numbers (float, NaN = missing) as ISO strings (NaN stays missing)."""
    out = np.full(len(days), np.nan, dtype=object)
    ok = ~np.isnan(days)
    out[ok] = np.datetime_as_string(days[ok].astype(np.int64).astype("datetime64[D]"), unit="D")
    return out


def _per_person(day: np.ndarray, pcode: np.ndarray, n: int, column: str, pids: pd.Index) -> np.ndarray:
    """One date per person from a column that must hold the same date on all of the person's rows (NaN: none)."""
    out = np.full(n, np.nan)
    ok = ~np.isnan(day)
    out[pcode[ok]] = day[ok]
    differs = ok & (day != out[pcode])
    if differs.any():
        raise DeidInputError(f"person {pids[pcode[np.flatnonzero(differs)[0]]]!r} has different dates in column "
                             f"{column!r}: a birth or death date is one per person")
    return out


def generalize_timeline(df: pd.DataFrame, dates: Sequence[str], *, person: str | None = None,
                        birth: str | None = None, death: str | None = None,
                        connected: Mapping[str, str] | None = None, anchor: str = "month", width: int = 7,
                        draw: Draw | None = None, anchor_draw: Draw | None = None,
                        rng: np.random.Generator | None = None) -> pd.DataFrame:
    """A copy of ``df`` whose date columns are de-identified as one ordered timeline per person.

    ``dates``: the event date columns (every non-missing cell is a point of its person's timeline);
    ``person``: the person column (None: the whole table is one sequence); ``birth`` / ``death``: per-person
    date columns that open / close the timeline; ``connected``: ``{column: date column}``, a date moved by the
    same number of days as the date of its row. ``anchor_draw`` draws the anchors in one call, ``draw`` all
    intervals in one call (defaults: uniform draws from ``rng``). Dates are ISO text in and out.
    """
    connected = dict(connected or {})
    if width < 1:
        raise DeidInputError(f"interval width {width} is below 1")
    cols = list(dates) + [c for c in (person, birth, death) if c] + list(connected) + list(connected.values())
    for c in cols:
        if c not in df.columns:
            raise DeidInputError(f"unknown column {c!r}: not in the input")
    for c, main in connected.items():
        if main not in dates:
            raise DeidInputError(f"connected date {c!r} must follow one of the timeline's date columns, not {main!r}")
    if person is not None:
        if df[person].isna().any():
            raise DeidInputError(f"person column {person!r} has empty values")
        pcode, pids = pd.factorize(df[person])
    else:
        pcode, pids = np.zeros(len(df), dtype=np.int64), pd.Index(["(all rows)"])
    n = len(pids)
    day = {c: parse_days(df[c]) for c in dict.fromkeys(cols) if c != person}
    # points: (person, rank, day, column index, row); persons' birth and death are one point each
    parts = []
    for j, c in enumerate(dates):
        ok = np.flatnonzero(~np.isnan(day[c]))
        parts.append((pcode[ok], np.full(len(ok), _EVENT), day[c][ok], np.full(len(ok), j), ok))
    for rank, c in ((_BIRTH, birth), (_DEATH, death)):
        if c:
            per = _per_person(day[c], pcode, n, c, pids)
            ok = np.flatnonzero(~np.isnan(per))
            parts.append((ok, np.full(len(ok), rank), per[ok], np.full(len(ok), -1), np.full(len(ok), -1)))
    g, rank, d, col, row = (np.concatenate(x) for x in zip(*parts))
    order = np.lexsort((row, col, d, rank, g))
    g, rank, d, col, row = g[order], rank[order], d[order].astype(np.int64), col[order], row[order]
    first = np.ones(len(g), dtype=bool)
    first[1:] = g[1:] != g[:-1]
    intervals = np.diff(d, prepend=d[:1])
    intervals[first] = 0
    if (intervals < 0).any():
        i = int(np.flatnonzero(intervals < 0)[0])
        name = {_BIRTH: birth, _DEATH: death}
        when = _iso(d[i - 1:i + 1].astype(float))
        raise DeidInputError(f"person {pids[g[i]]!r}: {name.get(rank[i]) or dates[col[i]]} {when[1]} is before "
                             f"{name.get(rank[i - 1]) or dates[col[i - 1]]} {when[0]} (the date of birth comes "
                             "first and the date of death last)")
    draw = draw or uniform_draw(rng or np.random.default_rng())
    anchor_draw = anchor_draw or draw
    alo, ahi = anchor_bounds(pd.Series(d[first].astype("datetime64[D]")), anchor)
    drawn = np.zeros(len(d), dtype=np.int64)
    drawn[first] = np.asarray(anchor_draw(alo, ahi), dtype=np.int64)
    lo, hi = interval_bins(intervals[~first], width)
    drawn[~first] = np.asarray(draw(lo, hi), dtype=np.int64)
    new = pd.Series(drawn).groupby(np.cumsum(first)).cumsum().to_numpy()  # anchor + drawn intervals
    out = df.copy()
    moved: dict[str, np.ndarray] = {}
    for j, c in enumerate(dates):
        at = col == j
        v = np.full(len(df), np.nan)
        v[row[at]] = new[at]
        moved[c] = v
    for rank_c, c in ((_BIRTH, birth), (_DEATH, death)):
        if c:
            per = np.full(n, np.nan)
            per[g[rank == rank_c]] = new[rank == rank_c]
            moved[c] = per[pcode]
    for c, main in connected.items():
        bad = ~np.isnan(day[c]) & np.isnan(day[main])
        if bad.any():
            raise DeidInputError(f"row {int(np.flatnonzero(bad)[0]) + 1}: connected date {c!r} has no {main!r} "
                                 "date to move with")
        moved[c] = moved[main] + (day[c] - day[main])
    for c, v in moved.items():
        out[c] = pd.Series(_iso(v), index=df.index, dtype=object)
    return out


def generalize_intervals(dates: pd.Series, groups: pd.Series | None = None, *, anchor: str = "month",
                         width: int = 7, draw: Draw | None = None, rng: np.random.Generator | None = None,
                         anchor_draw: Draw | None = None) -> pd.Series:
    """De-identified dates (same index as ``dates``), order kept within each group (one date column:
    :func:`generalize_timeline`)."""
    frame = pd.DataFrame({"d": dates.to_numpy(dtype=object)})
    if groups is not None:
        frame["g"] = groups.to_numpy(dtype=object)
    out = generalize_timeline(frame, ["d"], person="g" if groups is not None else None, anchor=anchor, width=width,
                              draw=draw, anchor_draw=anchor_draw, rng=rng)["d"]
    return pd.Series(out.to_numpy(), index=dates.index, name=dates.name)


def step_columns(step: Mapping[str, Any]) -> list[str]:
    """Every column a ``dates_intervals`` step changes: its dates, birth, death and connected dates."""
    cols = list(step.get("columns") or [step.get("column")])
    cols += [step[k] for k in ("birth", "death") if step.get(k)]
    return [c for c in cols + list(step.get("connected") or {}) if c is not None]


def op_dates_intervals(df: pd.DataFrame, step: Mapping[str, Any], ctx: dict) -> pd.DataFrame:
    """Policy op: ``{"op": "dates_intervals", "column": c (or "columns": [admit, discharge]), "group": person,
    "birth": dob, "death": dod, "connected": {log_date: c}, "anchor": "month", "width": 7, "seed": s}``."""
    dates = list(step.get("columns") or ([step["column"]] if step.get("column") else []))
    if not dates:
        raise DeidInputError("policy step 'dates_intervals' needs 'column' or 'columns'")
    connected = step.get("connected") or {}
    if not isinstance(connected, Mapping):
        raise DeidInputError("policy step 'dates_intervals': 'connected' must map a date column to its date column")
    out = generalize_timeline(df, dates, person=step.get("group"), birth=step.get("birth"), death=step.get("death"),
                              connected=connected, anchor=step.get("anchor", "month"), width=int(step.get("width", 7)),
                              rng=np.random.default_rng(step.get("seed")))
    for c in step_columns(step):
        out[c] = out[c].astype("category")
    return out
