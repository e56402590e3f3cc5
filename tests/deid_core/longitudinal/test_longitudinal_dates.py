"""Dates of longitudinal data (El Emam & Arbuckle, ch. 5, "Dates"): days since the person's first event
(El Emam et al. 2012, DSFC) and one ordered timeline per person (birth first, death last, connected dates)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from deid_core.longitudinal.dates import days_since_first
from deid_core.transform.dates import generalize_intervals, generalize_timeline

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


# ---------------------------------------------------------------- one ordered timeline per person (ch. 5)

def _day(s: str) -> int:
    return int(np.datetime64(s, "D").astype(np.int64))


def _fixed(values):
    """An injected draw returning ``values`` and recording the bounds it was asked for."""
    seen = []

    def draw(lo, hi):
        seen.append((lo.tolist(), hi.tolist()))
        return np.array(values if not isinstance(values, str) else [_day(values)] * len(lo))
    return draw, seen


def test_birth_is_the_anchor_book_infant():
    """Ch. 5, "A Different Anchor": born 2012/01/15 (released, generalized to the year, as 2012/07/23), first
    service 2012/01/18. Anchored at birth, the service follows the released birth (3 days -> [1-7])."""
    df = pd.DataFrame({"pid": ["baby"] * 2, "service": ["2012-01-18", "2012-03-02"],
                       "dob": ["2012-01-15", "2012-01-15"]})
    anchor, seen_a = _fixed("2012-07-23")
    draw, seen = _fixed([3, 45])
    out = generalize_timeline(df, ["service"], person="pid", birth="dob", anchor="year", draw=draw,
                              anchor_draw=anchor)
    assert seen_a == [([_day("2012-01-01")], [_day("2012-12-31")])]  # the birth year, not the service's month
    assert seen == [([1, 43], [7, 49])]  # birth -> first service 3 days, then 44 days
    assert out["dob"].tolist() == ["2012-07-23"] * 2
    assert out["service"].tolist() == ["2012-07-26", "2012-09-09"]
    # anchored at the first service (month), the service could be drawn in January, before the released birth
    plain = generalize_intervals(df["service"], df["pid"], anchor="month", rng=np.random.default_rng(0))
    assert plain.iloc[0] < "2012-07-23"


def test_admission_discharge_death_and_a_connected_log_date_book_bob():
    """Bob's admissions (ch. 5, Table 5-3) with discharges 0, 2, 1, 5, 0 days later, death 2003/09/01, and a
    log date connected to the admission. One timeline: the book's anchor (2001/04/23) and first interval (398)
    give the book's 2002/05/26; length of stay and time since the last service are generalized intervals;
    death is last; the log date keeps its exact offset from its admission."""
    admit = ["2001-04-08", "2002-05-07", "2002-08-12", "2003-07-27", "2003-08-11"]
    df = pd.DataFrame({"pid": ["bob"] * 5, "admit": admit,
                       "discharge": ["2001-04-08", "2002-05-09", "2002-08-13", "2003-08-01", "2003-08-11"],
                       "logged": ["2001-04-09", "2002-05-07", "2002-08-12", "2003-07-28", "2003-08-11"],
                       "dod": [None, None, None, None, "2003-09-01"]}).iloc[[3, 0, 4, 2, 1]]  # rows out of order
    before = df.copy()
    anchor, _ = _fixed("2001-04-23")
    draw, seen = _fixed([0, 398, 3, 96, 1, 345, 6, 9, 0, 17])
    out = generalize_timeline(df, ["admit", "discharge"], person="pid", death="dod", connected={"logged": "admit"},
                              draw=draw, anchor_draw=anchor).sort_values("admit")
    # intervals 0, 394, 2, 95, 1, 348, 5, 10, 0, 21 (death): 0 and 1 kept, the rest in week bins
    assert seen == [([0, 393, 1, 92, 1, 344, 1, 8, 0, 15], [0, 399, 7, 98, 1, 350, 7, 14, 0, 21])]
    assert out["admit"].tolist() == ["2001-04-23", "2002-05-26", "2002-09-02", "2003-08-14", "2003-08-29"]
    assert out["discharge"].tolist() == ["2001-04-23", "2002-05-29", "2002-09-03", "2003-08-20", "2003-08-29"]
    assert out["logged"].tolist() == ["2001-04-24", "2002-05-26", "2002-09-02", "2003-08-15", "2003-08-29"]
    assert out["dod"].tolist()[-1] == "2003-09-15" and out["dod"].nunique() == 1  # one death, on every row
    assert df.equals(before)


def test_timeline_keeps_every_order_of_a_persons_dates():
    """Property: on random data every pair of one person's dates (birth, admissions, discharges, death) keeps
    its order, equal dates stay equal, and a connected date keeps its offset."""
    rng = np.random.default_rng(11)
    n = 400
    pid = rng.integers(0, 40, n)
    birth = _day("1950-01-01") + rng.integers(0, 20000, 40)
    admit = birth[pid] + rng.integers(0, 3000, n)
    discharge = admit + rng.choice([0, 1, 2, 3, 9, 40], n)
    death = np.array([discharge[pid == p].max() + rng.integers(0, 30) if rng.random() < 0.5 else -1
                      for p in range(40)])
    iso = lambda d: np.datetime_as_string(np.asarray(d).astype("datetime64[D]"))  # noqa: E731
    df = pd.DataFrame({"pid": pid.astype(str), "dob": iso(birth[pid]), "admit": iso(admit),
                       "discharge": iso(discharge), "log": iso(admit + rng.integers(0, 3, n)),
                       "dod": np.where(death[pid] >= 0, iso(np.maximum(death[pid], 0)), None)})
    out = generalize_timeline(df, ["admit", "discharge"], person="pid", birth="dob", death="dod",
                              connected={"log": "admit"}, rng=np.random.default_rng(2))
    days = lambda f, c: pd.to_datetime(f[c]).to_numpy().astype("datetime64[D]").astype(np.int64)  # noqa: E731
    cols = ["dob", "admit", "discharge", "dod"]
    for p in np.unique(pid):
        rows = pid == p
        a = np.concatenate([days(df[rows], c) for c in cols if df.loc[rows, c].notna().all()])
        b = np.concatenate([days(out[rows], c) for c in cols if df.loc[rows, c].notna().all()])
        assert (np.sign(a[:, None] - a[None, :]) == np.sign(b[:, None] - b[None, :])).all()
    assert (days(out, "log") - days(out, "admit") == days(df, "log") - days(df, "admit")).all()
    assert out["dod"].isna().equals(df["dod"].isna())


def test_timeline_refuses_inconsistent_dates():
    df = pd.DataFrame({"pid": ["a", "a"], "d": ["2020-01-05", "2020-02-01"], "dob": ["2020-01-10"] * 2,
                       "dod": ["2020-01-20"] * 2, "log": ["2020-01-05", None]})
    with pytest.raises(ValueError, match=r"person 'a': d 2020-01-05 is before dob 2020-01-10"):
        generalize_timeline(df, ["d"], person="pid", birth="dob")
    with pytest.raises(ValueError, match=r"person 'a': dod 2020-01-20 is before d 2020-02-01"):
        generalize_timeline(df, ["d"], person="pid", death="dod")
    with pytest.raises(ValueError, match="different dates in column 'dob'"):
        generalize_timeline(df.assign(dob=["2000-01-01", "2000-01-02"]), ["d"], person="pid", birth="dob")
    with pytest.raises(ValueError, match="row 2: connected date 'd' has no 'log' date"):
        generalize_timeline(df, ["log"], person="pid", connected={"d": "log"})
    with pytest.raises(ValueError, match="unknown column 'x'"):
        generalize_timeline(df, ["x"], person="pid")
