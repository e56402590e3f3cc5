"""Medical codes: suppression, shuffling, ATC levels (El Emam & Arbuckle, ch. 10)."""
from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from deid_core.hierarchy import Hierarchy
from deid_core.longitudinal.codes import atc_rows, shuffle_codes, suppress_codes
from deid_core.spec import SUPPRESSED


def _claims() -> pd.DataFrame:
    rows = [  # person, age group, sex, place, code group, code, description
        ("p1", "30-39", "M", "inpatient", "410", "410.1", "MI"),       # alone with 410 in his class
        ("p1", "30-39", "M", "inpatient", "411", "411.1", "ICS"),
        ("p1", "30-39", "M", "inpatient", "410", "410.9", "MI"),
        ("p2", "30-39", "M", "inpatient", "411", "411.1", "ICS"),
        ("p2", "30-39", "M", "inpatient", "411", "411.81", "ACO"),
        ("p3", "30-39", "M", "inpatient", "411", "411.89", "other"),
        ("p3", "30-39", "M", "outpatient", "410", "410.0", "MI"),       # another class (place of care)
        ("p4", "30-39", "M", "outpatient", "410", "410.0", "MI"),
        ("p5", "30-39", "M", "inpatient", "411", "411.1", "ICS"),
    ]
    return pd.DataFrame(rows, columns=["pid", "age", "sex", "place", "grp", "dx", "desc"])


def test_suppression_counts_distinct_persons_in_class():
    df = _claims()
    r = suppress_codes(df, person="pid", code="dx", group="grp", classes=["age", "sex", "place"], k=2,
                       connected=["desc"])
    # p1's two 410 claims: one person, two rows -> suppressed with the description; outpatient 410 has p3, p4
    assert r.frame["dx"].tolist() == [SUPPRESSED, "411.1", SUPPRESSED, "411.1", "411.81", "411.89", "410.0",
                                      "410.0", "411.1"]
    assert r.frame["desc"].tolist()[:3] == [SUPPRESSED, "ICS", SUPPRESSED]
    assert (r.suppressed_rows, r.suppressed_persons, r.groups) == (2, 1, 1)
    assert r.frame["grp"].tolist() == df["grp"].tolist()  # only named columns change
    assert df.equals(_claims())
    # k = 4: the inpatient 411 group has p1, p2, p3, p5 -> kept; outpatient 410 (2 persons) goes
    r4 = suppress_codes(df, person="pid", code="dx", group="grp", classes=["age", "sex", "place"], k=4)
    assert r4.frame["dx"].tolist()[6:8] == [SUPPRESSED, SUPPRESSED] and r4.frame["dx"].iloc[1] == "411.1"


def test_suppression_bad_input():
    with pytest.raises(ValueError, match="k 0"):
        suppress_codes(_claims(), person="pid", code="dx", classes=["age"], k=0)
    with pytest.raises(ValueError, match="class column 'zip'"):
        suppress_codes(_claims(), person="pid", code="dx", classes=["zip"], k=2)


def test_book_deck_is_shuffled_uniformly():
    # four 30-39 men in ischemic heart disease group 411: {411.1, 411.1, 411.81, 411.89}
    deck = pd.DataFrame({"pid": list("abcd"), "age": "30-39", "sex": "M", "grp": "411",
                         "dx": ["411.1", "411.1", "411.81", "411.89"]})
    seen = Counter()
    for seed in range(1200):
        out = shuffle_codes(deck, code="dx", keys=["age", "sex", "grp"], seed=seed)
        assert sorted(out["dx"]) == sorted(deck["dx"])
        seen[tuple(out["dx"])] += 1
    assert ("411.81", "411.1", "411.89", "411.1") in seen  # the book's dealt deck is a possible outcome
    assert len(seen) == 12  # 4!/2! distinct arrangements, each about 1/12 of the time
    assert min(seen.values()) > 60 and max(seen.values()) < 140


def test_shuffle_keeps_groups_and_connected_columns():
    df = _claims()
    out = shuffle_codes(df, code="dx", keys=["age", "sex", "place", "grp"], connected=["desc"], seed=1)
    assert (out.groupby(["place", "grp"])["dx"].agg(sorted) == df.groupby(["place", "grp"])["dx"].agg(sorted)).all()
    pairs = set(zip(df["dx"], df["desc"]))
    assert set(zip(out["dx"], out["desc"])) <= pairs
    assert out["pid"].tolist() == df["pid"].tolist()
    assert shuffle_codes(df, code="dx", keys=["grp"], seed=1).equals(shuffle_codes(df, code="dx", keys=["grp"],
                                                                                   seed=1))


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from("xyz"), st.text("0123", max_size=3)),
                     min_size=1, max_size=50), seed=st.integers(0, 2**32 - 1))
def test_shuffle_preserves_each_group_multiset(rows, seed):
    df = pd.DataFrame(rows, columns=["sex", "grp", "dx"])
    out = shuffle_codes(df, code="dx", keys=["sex", "grp"], seed=seed)
    for key, g in df.groupby(["sex", "grp"]):
        assert Counter(out.loc[g.index, "dx"]) == Counter(g["dx"])


def test_atc_levels():
    rows = atc_rows(["C01DA02", "C01DA08", "A10BA02", "N02"])
    assert rows[0] == ["C01DA02", "C01DA", "C01D", "C01", "C", "*"]
    assert rows[3] == ["N02", "N02", "N02", "N02", "N", "*"]
    h = Hierarchy(rows, name="atc")  # the layout the ICD and CPT builders return
    assert h.height == 5
    with pytest.raises(ValueError, match="not an ATC code"):
        atc_rows(["C1DA02"], name="drug")
