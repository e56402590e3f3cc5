"""Days since the person's first event (El Emam & Arbuckle, ch. 5; El Emam et al. 2012, DSFC)."""
from __future__ import annotations

import pandas as pd
import pytest

from deid_core.longitudinal.dates import days_since_first

BOB = ["2001-04-08", "2002-05-07", "2002-08-12", "2003-07-27", "2003-08-11"]


def _frame() -> pd.DataFrame:
    df = pd.DataFrame({"pid": ["bob"] * 5 + ["ann"] * 2, "d": BOB + ["2010-01-31", "2010-01-01"],
                       "birth": ["1990-04-08"] * 5 + ["2009-12-31"] * 2,
                       "admit": ["0", "1", "0", "1", "0", "no", "yes"]})
    return df.iloc[[3, 0, 5, 2, 6, 4, 1]]  # rows out of order


def test_book_dates_as_days_since_first():
    # the book's dated sequence: intervals 394, 97, 349, 15 -> days 0, 394, 491, 840, 855
    s = days_since_first(_frame(), person="pid", date="d")
    df = _frame().assign(days=s)
    assert df.loc[df.pid == "bob"].sort_values("d")["days"].tolist() == [0, 394, 491, 840, 855]
    assert df.loc[df.pid == "ann"].sort_values("d")["days"].tolist() == [0, 30]
    assert s.index.tolist() == _frame().index.tolist() and s.name == "d_days"


def test_anchor_column_and_anchor_event():
    df = _frame()
    birth = days_since_first(df, person="pid", date="d", anchor="birth")
    assert birth[df.pid == "ann"].sort_values().tolist() == [1, 31]
    ev = days_since_first(df, person="pid", date="d", anchor_event="admit")
    bob = df.assign(days=ev).loc[df.pid == "bob"].sort_values("d")["days"].tolist()
    assert bob == [-394, 0, 97, 446, 461]  # first flagged event is 2002-05-07
    assert df.assign(days=ev).loc[df.pid == "ann"].sort_values("d")["days"].tolist() == [0, 30]


def test_missing_and_bad_dates():
    df = pd.DataFrame({"pid": ["a", "a", "b"], "d": ["2020-01-05", None, "2020-02-01"], "f": ["0", "0", "1"]})
    s = days_since_first(df, person="pid", date="d")
    assert s.isna().tolist() == [False, True, False]
    assert days_since_first(df, person="pid", date="d", anchor_event="f").isna().tolist() == [True, True, False]
    with pytest.raises(ValueError, match="'2020-13-01' is not an ISO date"):
        days_since_first(df.assign(d=["2020-13-01", "2020-01-01", "2020-01-01"]), person="pid", date="d")
    with pytest.raises(ValueError, match="date column 'x'"):
        days_since_first(df, person="pid", date="x")
    with pytest.raises(ValueError, match="not both"):
        days_since_first(df, person="pid", date="d", anchor="d", anchor_event="f")
