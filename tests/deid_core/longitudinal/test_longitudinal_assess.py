"""``assess`` with ``[longitudinal]`` counts persons: with one row per person it gives exactly the row-level
numbers; with a person's rows repeated it does not count the copies (El Emam & Arbuckle, ch. 4)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from deid_core import assess, load_spec
from deid_core.spec import LongitudinalSpec


@pytest.fixture
def adult_person(adult_df, adult_spec_path):
    spec = load_spec(adult_spec_path)
    df = adult_df.assign(pid=[f"p{i}" for i in range(len(adult_df))])
    lg = LongitudinalSpec(person="pid", level1=("sex", "race"), level2=tuple(q for q in spec.quasi
                                                                             if q not in ("sex", "race")))
    return df, spec, replace(spec, columns={**spec.columns, "pid": "direct"}, longitudinal=lg)


def test_one_row_per_person_gives_the_row_numbers(adult_person):
    df, spec, lspec = adult_person
    rows = assess(df.drop(columns=["pid"]), spec, levels={"age": 2, "education": 3})
    persons = assess(df, lspec, levels={"age": 2, "education": 3})
    for key in ("k_min", "prosecutor", "equivalence_classes"):
        assert persons.summary[key] == rows.summary[key], key
    assert persons.summary["persons"] == persons.summary["events"] == len(df)


def test_repeated_rows_of_a_person_are_not_counted_twice(adult_person):
    df, spec, lspec = adult_person
    once = assess(df, lspec, levels={"age": 2})
    tripled = pd.concat([df, df.iloc[:5000], df.iloc[:5000]], ignore_index=True)  # copies of the same claims
    again = assess(tripled, lspec, levels={"age": 2})
    assert again.summary["persons"] == len(df) and again.summary["events"] == len(df) + 10_000
    assert again.summary["k_min"] == once.summary["k_min"]
    assert again.summary["prosecutor"] == once.summary["prosecutor"]
    counted_rows = assess(tripled.drop(columns=["pid"]), spec, levels={"age": 2})
    assert counted_rows.summary["prosecutor"]["average"] < once.summary["prosecutor"]["average"]
    assert np.array_equal(again.per_record["pid"].to_numpy(), df["pid"].to_numpy())


# ---------------------------------------------------------------- suppression of persons (--suppress)

def _suppress_case() -> tuple[pd.DataFrame, dict]:
    """k = 3 (threshold 0.34). Counted in rows every class holds 3 rows; counted in persons p1 and p7 stand
    alone on their repeated claims, and once p7 goes, (F, D) keeps only p5 and p6."""
    rows = ([("p1", "F", "A")] * 3 + [(p, "M", dx) for p in ("p2", "p3", "p4") for dx in ("B", "C")]
            + [("p5", "F", "D"), ("p6", "F", "D"), ("p7", "F", "D")] + [("p7", "F", "E")] * 3)
    spec = {"columns": {"pid": "direct", "sex": "quasi", "dx": "quasi"},
            "release": {"type": "non-public", "threshold": 0.34},
            "longitudinal": {"person": "pid", "level1": ["sex"], "level2": ["dx"]}}
    return pd.DataFrame(rows, columns=["pid", "sex", "dx"]), spec


def test_suppress_removes_whole_persons_whose_class_is_small_in_persons():
    from deid_core.spec import parse_spec
    df, raw = _suppress_case()
    rows = assess(df, parse_spec({k: v for k, v in raw.items() if k != "longitudinal"}), record_suppression=True)
    assert rows.summary["suppressed_records"] == 0 and rows.summary["k_min"] == 3  # row counting sees no small class
    copy = df.copy()
    a = assess(df, parse_spec(raw), record_suppression=True)
    gone = a.output["sex"].astype(str).eq("[suppressed]").to_numpy()
    assert sorted(df.loc[gone, "pid"].unique()) == ["p1", "p5", "p6", "p7"]  # p5, p6: after p7 left (F, D)
    assert (a.output.loc[gone, ["sex", "dx"]].astype(str) == "[suppressed]").all().all()
    assert (a.summary["suppressed_persons"], a.summary["suppressed_records"]) == (4, 9)
    assert (a.summary["persons"], a.summary["k_min"]) == (7, 3)  # the 3 persons left share both classes
    assert a.before["k_min"] == 1 and "suppressed_persons" in a.to_dict()
    step = [s for s in a.policy.steps if s["op"] == "suppress_records"][0]
    assert step == {"op": "suppress_records", "columns": ["sex", "dx"], "k": 3, "person": "pid"}
    assert a.policy.steps[-1] == {"op": "drop", "columns": ["pid"]}  # the person column is used, then dropped
    assert "pid" not in a.output.columns and df.equals(copy)  # the input is not modified


def test_person_suppression_is_the_largest_set_with_every_class_at_k():
    """Property: every class of the persons kept holds >= k of them, and putting any suppressed person back
    breaks that (so nobody is suppressed without need)."""
    from deid_core.longitudinal.persons import person_class_size, persons_to_suppress
    rng = np.random.default_rng(5)
    for _ in range(30):
        n_rows, n_persons, k = 60, 20, int(rng.integers(2, 5))
        pcode = rng.integers(0, n_persons, n_rows)
        cls = rng.integers(0, 6, n_rows)
        gone = persons_to_suppress(cls, pcode, n_persons, k)
        size = person_class_size(cls, pcode, n_persons, keep=~gone[pcode])
        present = np.bincount(pcode, minlength=n_persons) > 0
        assert (size[present & ~gone] >= k).all()
        for p in np.flatnonzero(gone):
            back = gone.copy()
            back[p] = False
            size = person_class_size(cls, pcode, n_persons, keep=~back[pcode])
            assert (size[present & ~back] < k).any()
