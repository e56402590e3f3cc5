"""Truncating long tails of claims (El Emam & Arbuckle, ch. 5; El Emam et al. 2012)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from deid_core.longitudinal.truncate import (bin_labels, claim_count_column, plan_bins, plan_percentile,
                                             truncate_claims)

# Table 5-7: persons per bin of five claims
TABLE_5_7 = {"[1-5]": 100, "[6-10]": 50, "[11-15]": 40, "[16-20]": 30, "[21-25]": 7, "[26-30]": 4, "[31-35]": 11}


def _counts() -> np.ndarray:
    rng = np.random.default_rng(0)
    parts = [rng.integers(5 * i + 1, 5 * i + 6, n) for i, n in enumerate(TABLE_5_7.values())]
    return np.concatenate(parts)


def test_table_5_7_plan():
    counts = _counts()
    new, unmet = plan_bins(counts, k=10, width=5, rng=np.random.default_rng(1))
    moved = new != counts
    assert moved.sum() == 4 and (counts[moved] >= 26).all() and (counts[moved] <= 30).all()
    assert ((new[moved] >= 21) & (new[moved] <= 25)).all()
    after = pd.Series(bin_labels(new)).value_counts().to_dict()
    assert after == {"[1-5]": 100, "[6-10]": 50, "[11-15]": 40, "[16-20]": 30, "[21-25]": 11, "[31-35]": 11}
    assert unmet == ()


def test_cascade_and_unmet_lowest_bin():
    # 3 persons at [11-15], 2 at [6-10], 4 at [1-5], k = 10: everybody ends in [1-5], which stays below k
    counts = np.array([12, 13, 15, 7, 9, 1, 2, 3, 5])
    new, unmet = plan_bins(counts, k=10, rng=np.random.default_rng(0))
    assert (new <= 5).all() and (new[5:] == counts[5:]).all()
    assert unmet == ("[1-5]",)


def _claims() -> pd.DataFrame:
    counts = _counts()
    pid = np.repeat([f"m{i:03d}" for i in range(len(counts))], counts)
    rng = np.random.default_rng(2)
    dx = rng.choice(["401", "250", "V70"], size=len(pid))
    dx = dx.astype(object)
    dx[np.flatnonzero(pid == "m228")[5]] = "999.1"  # a person of the [26-30] bin (loses >= 1 claim): a unique code
    return pd.DataFrame({"member": pid, "dx": dx, "prov": rng.choice(["a", "b"], size=len(pid))})


def test_truncate_claims_table_5_7():
    df = _claims()
    t = truncate_claims(df, person="member", level2=["dx", "prov"], k=10, seed=3)
    assert t.bins_before.to_dict() == TABLE_5_7
    assert t.bins_after.to_dict() == {**TABLE_5_7, "[21-25]": 11, "[26-30]": 0}
    assert t.removed_persons == 4
    before = df.groupby("member").size()
    after = t.frame.groupby("member").size()
    assert t.removed_claims == int((before - after.reindex(before.index)).sum()) == len(df) - len(t.frame)
    assert ((after[before.between(26, 30)] >= 21) & (after[before.between(26, 30)] <= 25)).all()
    # the rarest claims go first: m228's unique code is removed
    assert not t.frame["dx"].str.startswith("999").any()
    assert t.summary()["removed_claims_proportion"] == t.removed_claims / len(df)
    assert df.equals(_claims())  # input untouched


def test_percentile_top_coding():
    counts = np.arange(1, 101)
    new, cutoff = plan_percentile(counts, 95)
    assert cutoff == 95 and new.max() == 95 and (new[:95] == counts[:95]).all()
    df = _claims()
    t = truncate_claims(df, person="member", level2=["dx"], method="percentile", percentile=99)
    assert t.frame.groupby("member").size().max() == t.cutoff


@pytest.mark.parametrize("kw,msg", [({"k": 0}, "k 0"), ({"method": "cap"}, "method"),
                                    ({"level2": ["cpt"]}, "level-2 column 'cpt'"),
                                    ({"method": "percentile", "percentile": 0}, "percentile")])
def test_bad_input(kw, msg):
    args = {"person": "member", "level2": ["dx"], **kw}
    with pytest.raises(ValueError, match=msg):
        truncate_claims(_claims(), **args)


def test_claim_count_column_is_a_level1_qi():
    df = pd.DataFrame({"m": ["a"] * 6 + ["b"] * 2})
    assert claim_count_column(df, person="m").tolist() == ["[6-10]"] * 6 + ["[1-5]"] * 2
