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
