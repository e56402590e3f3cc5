"""Patient-level classes: distinct persons, not rows (El Emam & Arbuckle, ch. 4)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from deid_core.longitudinal.persons import (complete_knowledge, complete_knowledge_k, level1_table,
                                            patient_risk)


def _visits() -> pd.DataFrame:
    # PID 10: three identical visits (a row-level "class of 3" that is one person)
    rows = [("10", "M", "1975", "2009/01", "K7G"), ("10", "M", "1975", "2009/01", "K7G"),
            ("10", "M", "1975", "2009/01", "K7G"),
            ("11", "F", "1980", "2009/01", "K7D"), ("12", "F", "1980", "2008/11", "K7D"),
            ("12", "F", "1980", "2009/01", "K7D"), ("13", "M", "1975", "2009/04", "K7G")]
    return pd.DataFrame(rows, columns=["pid", "sex", "yob", "date", "postal"])


def test_classes_count_persons_not_rows():
    r = patient_risk(_visits(), person="pid", level1=["sex", "yob"], threshold=0.4)
    assert r.persons == 4 and r.events == 7
    assert r.per_person.loc["10", "class_size"] == 2  # persons 10 and 13, not 4 rows
    assert r.per_person["risk"].tolist() == [0.5, 0.5, 0.5, 0.5]
    assert r.max_risk == 0.5 and r.average_risk == 0.5 and r.k == 2
    assert r.high_risk_proportion == 1.0
    assert r.summary()["events"] == 7


def test_single_person_with_many_rows_has_risk_one():
    df = _visits()
    df.loc[df.pid == "13", "yob"] = "1976"
    r = patient_risk(df, person="pid", level1=["sex", "yob"])
    assert r.per_person.loc["10", "risk"] == 1.0  # row counting would say 1/3


def test_level1_must_be_fixed_per_person():
    df = _visits()
    df.loc[1, "sex"] = "F"
    with pytest.raises(ValueError, match=r"person '10' has different level-1 values in column 'sex'"):
        patient_risk(df, person="pid", level1=["sex", "yob"])


@pytest.mark.parametrize("person,level1,msg", [("id", ["sex"], "person column 'id'"),
                                                ("pid", ["age"], "level-1 column 'age'")])
def test_missing_columns(person, level1, msg):
    with pytest.raises(ValueError, match=msg):
        patient_risk(_visits(), person=person, level1=level1)


def test_empty_table_refused():
    with pytest.raises(ValueError, match="no rows"):
        patient_risk(_visits().iloc[:0], person="pid", level1=["sex"])


def test_level1_table_events():
    t = level1_table(_visits(), person="pid", level1=["sex"])
    assert t["events"].to_dict() == {"10": 3, "11": 1, "12": 2, "13": 1}
    assert t["sex"].to_dict() == {"10": "M", "11": "F", "12": "F", "13": "M"}


def _three_visit_patients() -> pd.DataFrame:
    # Book ch. 4, Figure 4-3 narrative: two three-visit patients with the same dates and postal
    # codes as sets, but paired differently with each other; one-visit patients 3 and 4 match.
    rows = [("1", "1975", "2009/01", "K7D"), ("1", "1975", "2009/01", "K7G"), ("1", "1975", "2009/04", "K7G"),
            ("2", "1975", "2009/01", "K7G"), ("2", "1975", "2009/01", "K7G"), ("2", "1975", "2009/04", "K7D"),
            ("3", "1980", "2009/02", "K7A"), ("4", "1980", "2009/02", "K7A"), ("5", "1980", "2009/03", "K7A")]
    return pd.DataFrame(rows, columns=["pid", "yob", "date", "postal"])


def test_complete_knowledge_exact_is_stricter_than_approximate():
    df = _three_visit_patients()
    kw = dict(person="pid", level1=["yob"], level2=["date", "postal"])
    approx = complete_knowledge(df, **kw)
    exact = complete_knowledge(df, exact=True, **kw)
    assert approx.per_person["class_size"].to_dict() == {"1": 2, "2": 2, "3": 2, "4": 2, "5": 1}
    assert exact.per_person["class_size"].to_dict() == {"1": 1, "2": 1, "3": 2, "4": 2, "5": 1}
    assert complete_knowledge_k(df, **kw) == 1
    # the order of a person's rows does not matter
    shuffled = df.sample(frac=1.0, random_state=3)
    again = complete_knowledge(shuffled, exact=True, **kw).per_person.loc[list("12345")]
    assert again["class_size"].tolist() == [1, 1, 2, 2, 1]


def test_complete_knowledge_groups_by_number_of_events():
    df = pd.DataFrame({"pid": ["a", "a", "b"], "yob": ["1"] * 3, "d": ["x"] * 3})
    r = complete_knowledge(df, person="pid", level1=["yob"], level2=["d"])
    assert r.per_person["class_size"].tolist() == [1, 1]  # {x, x} vs {x}


def test_missing_values_are_a_value():
    df = pd.DataFrame({"pid": ["a", "b", "c"], "yob": [None, None, "1"]})
    r = patient_risk(df, person="pid", level1=["yob"])
    assert r.per_person["class_size"].tolist() == [2, 2, 1]


def test_vectorized_on_many_persons():
    rng = np.random.default_rng(0)
    pid = rng.integers(0, 20_000, 200_000).astype(str)
    df = pd.DataFrame({"pid": pid, "dx": rng.integers(0, 50, len(pid)).astype(str)})
    df["sex"] = (pd.Series(pid).str[-1].astype(int) % 2).astype(str)
    r = complete_knowledge(df, person="pid", level1=["sex"], level2=["dx"])
    assert r.persons == len(np.unique(pid)) and r.events == 200_000


@pytest.mark.parametrize("exact", [False, True])
def test_complete_knowledge_matches_sorted_signatures(exact):
    rng = np.random.default_rng(5)
    pid = rng.integers(0, 300, 1500).astype(str)
    df = pd.DataFrame({"pid": pid, "dx": rng.integers(0, 3, len(pid)).astype(str),
                       "los": rng.integers(0, 2, len(pid)).astype(str)})
    df["sex"] = df["pid"].map(lambda p: "FM"[int(p) % 2])
    got = complete_knowledge(df, person="pid", level1=["sex"], level2=["dx", "los"], exact=exact).per_person
    sig = {}
    for p, g in df.groupby("pid", sort=False):
        if exact:
            sig[p] = (g["sex"].iloc[0], tuple(sorted(zip(g["dx"], g["los"]))))
        else:
            sig[p] = (g["sex"].iloc[0], tuple(sorted(g["dx"])), tuple(sorted(g["los"])))
    sizes = pd.Series(sig).map(pd.Series(sig).value_counts())
    assert got["class_size"].to_dict() == sizes.to_dict()
