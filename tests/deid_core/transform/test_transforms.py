"""Hierarchies, dates, Safe Harbor, masking, policies."""
from __future__ import annotations

import hashlib
import hmac as std_hmac
import warnings

import numpy as np
import pandas as pd
import pytest

from deid_core.errors import DeidInputError, DeidWarning
from deid_core.hierarchy import Hierarchy, build_hierarchy, from_csv, icd_rows, interval_rows, prefix_rows
from deid_core.spec import HierarchySpec, parse_spec
from deid_core.transform import Policy
from deid_core.transform.dates import generalize_intervals, interval_bins
from deid_core.transform.masking import frequency_check, pseudonymize, randomize
from deid_core.transform.safe_harbor import RESTRICTED_ZIP3_2000, SAFE_HARBOR_KINDS, restricted_zip3, safe_harbor
from deid_testdata import ADULT

KEY = b"0123456789abcdef0123456789abcdef"


# ------------------------------------------------------------ hierarchies

def test_arx_csv_semicolon_layout():
    h = from_csv(ADULT / "adult_hierarchy_age.csv")
    assert h.height == 4 and h.rows()[0] == ["1", "0-4", "0-9", "0-19", "*"]
    s = pd.Series(["39", "50", None], dtype="category")
    # (the ARX file itself puts 50 in 45-49 / 40-49)
    assert h.generalize(s, 2).astype(object).tolist()[:2] == ["30-39", "40-49"]
    assert pd.isna(h.generalize(s, 2).iloc[2])


def test_value_missing_from_hierarchy_names_column_and_value():
    h = from_csv(ADULT / "adult_hierarchy_sex.csv")
    with pytest.raises(DeidInputError, match=r"column 'sex': value 'Unknown' is missing from its hierarchy"):
        h.encode(pd.Series(["Male", "Unknown"]), "sex")


def test_non_nesting_hierarchy_rejected():
    with pytest.raises(DeidInputError, match="two parents"):
        Hierarchy([["a", "x", "*"], ["b", "x", "*"], ["c", "y", "*"], ["a2", "y", "z"]])
    with pytest.raises(DeidInputError, match="two parents"):
        Hierarchy([["a", "x", "*"], ["b", "x", "+"]])


def test_interval_builder_top_code_and_widths():
    rows = {r[0]: r for r in interval_rows(["3", "37", "89", "90", "104"], [5, 10, 20], top_code=90)}
    assert rows["37"] == ["37", "35-39", "30-39", "20-39", "*"]
    assert rows["89"][1:4] == ["85-89", "80-89", "80-89"]
    assert rows["104"][1:] == ["90+", "90+", "90+", "*"]
    with pytest.raises(DeidInputError, match="multiple"):
        interval_rows(["1"], [5, 7])
    with pytest.raises(DeidInputError, match="not a number"):
        interval_rows(["1", "x"], [5])


def test_date_builder_levels_nest():
    h = build_hierarchy(HierarchySpec("dates"), ["2001-04-08", "2001-04-30", "2003-12-31"])
    assert h.rows()[0] == ["2001-04-08", "2001-04/W2", "2001-04", "2001-Q2", "2001", "2000-2004", "2000-2009", "*"]
    assert h.rows()[1][1] == "2001-04/W4"


def test_prefix_and_icd_builders():
    assert prefix_rows(["02139"])[0] == ["02139", "0213*", "021**", "02***", "0****", "*****"]
    r = {x[0]: x for x in icd_rows(["411.81", "E11.65", "250"])}
    assert r["411.81"] == ["411.81", "411.8", "411", "ICD9 390-459", "*"]
    assert r["E11.65"][1:4] == ["E11.6", "E11", "ICD10 E00-E90"]
    assert r["250"][3] == "ICD9 240-279"
    Hierarchy(icd_rows(["411.81", "411.1", "412", "E11.65", "E10"]))  # nests


# ------------------------------------------------------------ dates

def test_bob_dates_book_vector():
    """El Emam & Arbuckle, ch. 5, Table 5-1: Bob's dates -> 2001/04/23, 2002/05/26, 2002/08/30, 2003/08/10, 2003/08/30."""
    dates = pd.Series(["2001-04-08", "2002-05-07", "2002-08-12", "2003-07-27", "2003-08-11"], name="claim")
    seen = []

    def anchor_draw(lo, hi):
        seen.append(("anchor", lo.tolist(), hi.tolist()))
        return np.array([np.datetime64("2001-04-23", "D").astype(np.int64)])

    def draw(lo, hi):
        seen.append(("intervals", lo.tolist(), hi.tolist()))
        return np.array([398, 96, 345, 20])

    out = generalize_intervals(dates, draw=draw, anchor_draw=anchor_draw)
    assert out.tolist() == ["2001-04-23", "2002-05-26", "2002-08-30", "2003-08-10", "2003-08-30"]
    d = lambda s: int(np.datetime64(s, "D").astype(np.int64))  # noqa: E731
    assert seen[0] == ("anchor", [d("2001-04-01")], [d("2001-04-30")])  # anchor generalized to the month
    assert seen[1] == ("intervals", [393, 92, 344, 15], [399, 98, 350, 21])  # 394, 97, 349, 15 in week bins


def test_dates_keep_order_and_consecutive_days_per_patient():
    rng = np.random.default_rng(7)
    df = pd.DataFrame({"p": ["a"] * 4 + ["b"] * 3,
                       "d": ["2020-01-01", "2020-01-02", "2020-03-05", "2020-01-03", "2019-05-05", "2019-05-05", "2019-07-01"]})
    out = pd.to_datetime(generalize_intervals(df["d"], df["p"], rng=rng))
    a = out[df["p"] == "a"].sort_values()
    assert list(a.index) == [0, 1, 3, 2]  # order kept
    assert (out[1] - out[0]).days == 1  # consecutive days stay together
    assert out[4] == out[5]  # same-day stays same day
    assert interval_bins(np.array([0, 1, 2, 7, 8]))[0].tolist() == [0, 1, 1, 1, 8]


# ------------------------------------------------------------ Safe Harbor

SH_SPEC = {
    "columns": {"name": "direct", "ssn": "other", "phone": "other", "zip": "quasi", "age": "quasi",
                "admitted": "quasi", "dob": "quasi", "sex": "quasi", "dx": "sensitive"},
    "types": {"ssn": "ssn", "phone": "phone", "zip": "zip", "age": "age", "admitted": "date", "dob": "dob"},
}


def _sh_data():
    return pd.DataFrame({
        "name": ["Ann", "Bob", "Cy"], "ssn": ["1", "2", "3"], "phone": ["5", "6", "7"],
        "zip": ["03601", "02139", "10001"], "age": ["45", "90", "101"],
        "admitted": ["2010-02-03", "2011-12-31", "2012-06-01"], "dob": ["1925-05-01", "1950-01-01", "1936-12-31"],
        "sex": ["F", "M", "F"], "dx": ["a", "b", "c"],
    }).astype("category")


def test_safe_harbor_default_restricted_list():
    out, policy, info = safe_harbor(_sh_data(), parse_spec(SH_SPEC), reference_year=2026)
    assert list(out.columns) == ["zip", "age", "admitted", "dob", "sex", "dx"]
    assert out["zip"].astype(str).tolist() == ["000", "021", "100"]  # 036 is restricted (2000 census)
    assert out["age"].astype(str).tolist() == ["45", "90+", "90+"]
    assert out["admitted"].astype(str).tolist() == ["2010", "2011", "2012"]
    assert out["dob"].astype(str).tolist() == ["<=1936", "1950", "<=1936"]
    assert info["columns"]["ssn"] == {"kind": 7, "action": "removed"}
    assert info["columns"]["name"]["action"] == "removed"
    assert len(SAFE_HARBOR_KINDS) == 18 and len(RESTRICTED_ZIP3_2000) == 17
    again, _ = Policy.from_dict(policy.to_dict()).apply(_sh_data())  # re-appliable
    pd.testing.assert_frame_equal(again, out)


def test_safe_harbor_zip_population_table():
    zp = pd.DataFrame({"zip": ["02139", "02140", "10001", "03601"], "population": ["15000", "4000", "50000", "30000"]})
    assert restricted_zip3(zp) == ["021"]  # 19,000 <= 20,000
    out, _, info = safe_harbor(_sh_data(), parse_spec(SH_SPEC), zp, reference_year=2026)
    assert out["zip"].astype(str).tolist() == ["036", "000", "100"]
    with pytest.raises(DeidInputError, match="malformed ZIP population"):
        restricted_zip3(pd.DataFrame({"zip": ["1"], "people": [3]}))


# ------------------------------------------------------------ masking

def test_pseudonyms_are_keyed_hmac_sha256():
    s = pd.Series(["123-45-6789", "987-65-4321", "123-45-6789", None])
    p = pseudonymize(s, KEY, length=64)
    ref = std_hmac.new(KEY, b"pseudonym\x00123-45-6789", hashlib.sha256).hexdigest()
    assert p.iloc[0] == ref and p.iloc[2] == ref and p.iloc[1] != ref and pd.isna(p.iloc[3])
    assert pseudonymize(s, b"another key of 16+ bytes", 64).iloc[0] != ref
    with pytest.raises(DeidInputError, match="key"):
        pseudonymize(s, b"short")


def test_randomize_length_not_preserved_consistent_unique():
    names = pd.Series(["Al", "Bartholomew", "Christopher", "Di"] * 2)
    r1 = randomize(names, key=KEY, unique=True)
    r2 = randomize(pd.Series(["Christopher", "Al"]), key=KEY, unique=True)  # another table, same key
    assert r2.tolist() == [r1.iloc[2], r1.iloc[0]]
    assert r1.iloc[0] == r1.iloc[4] and r1.nunique() == 4
    many = pd.Series([f"name{i:05d}" for i in range(5000)])  # all 9 characters long
    tokens = randomize(many, key=KEY, unique=True)
    assert tokens.nunique() == 5000
    lengths = tokens.str.len()
    assert lengths.between(8, 14).all() and lengths.nunique() == 7  # length independent of the original's


def test_frequency_warning_for_dominant_value():
    skewed = pd.Series(["TOH"] * 90 + ["CHEO"] * 5 + ["Montfort"] * 5, name="hospital")
    with pytest.warns(DeidWarning, match="far from uniform"):
        res = frequency_check(pseudonymize(skewed, KEY))
    assert res["far_from_uniform"] and res["max_share"] == 0.9
    even = pd.Series(["a", "b", "c", "d"] * 50, name="x")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not frequency_check(even)["far_from_uniform"]


def test_policy_pseudonymize_step_reports_warning():
    df = pd.DataFrame({"hospital": ["TOH"] * 90 + ["CHEO"] * 10}).astype("category")
    out, ctx = Policy([{"op": "pseudonymize", "column": "hospital"}]).apply(df, key=KEY)
    assert out["hospital"].nunique() == 2 and "TOH" not in set(out["hospital"].astype(str))
    assert ctx["warnings"] and "far from uniform" in ctx["warnings"][0]


def test_policy_rejects_unknown_step():
    with pytest.raises(DeidInputError, match="unknown op"):
        Policy.from_dict({"format": "deid_core.policy", "steps": [{"op": "explode"}]})
