"""Information loss: book missingness vector, ARX's non-uniform entropy, precision, numeric utility."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from deid_core.metric import (average_class_size, discernibility, missingness, missingness_change,
                              non_uniform_entropy, numeric_utility, precision, to_number)
from deid_core.spec import SUPPRESSED, load_spec
from deid_core.transform import full_domain_policy
from deid_testdata import ADULT_QIS, adult_spec_toml


def test_book_missingness_vector():
    """El Emam & Arbuckle, ch. 2 (suppression with natural missingness): 100 records, 2 QIs; natural missingness in QI1 for records 3,5,7; suppression of QI2
    in records 5,10,18 -> record 3% -> 5% (loss 2%), cell 1.5% -> 3% (loss 1.5%)."""
    before = pd.DataFrame({"q1": ["a"] * 100, "q2": ["b"] * 100}).astype(object)
    before.loc[[2, 4, 6], "q1"] = np.nan  # records 3, 5, 7 (1-based)
    after = before.copy()
    after.loc[[4, 9, 17], "q2"] = SUPPRESSED  # records 5, 10, 18
    ch = missingness_change(before, after, ["q1", "q2"])
    assert ch["before"]["record"] == pytest.approx(0.03) and ch["before"]["cell"] == pytest.approx(0.015)
    assert ch["after"]["record"] == pytest.approx(0.05) and ch["after"]["cell"] == pytest.approx(0.03)
    assert ch["loss"]["record"] == pytest.approx(0.02) and ch["loss"]["cell"] == pytest.approx(0.015)


ARX_NODE = {"sex": 1, "age": 2, "race": 1, "marital-status": 1, "education": 3, "native-country": 2,
            "workclass": 2, "occupation": 1}


def test_non_uniform_entropy_matches_arx(adult_df, tmp_path):
    """ARX 3.x, Adult, 5-anonymity, 0% suppression: node (1,2,1,1,3,2,2,1) has non-uniform entropy
    382871.41 (log2, summed over attributes) — ARX's reference number."""
    spec_path = tmp_path / "a.toml"
    spec_path.write_text(adult_spec_toml())
    spec = load_spec(spec_path)
    out, _ = full_domain_policy(spec.hierarchies, ARX_NODE).apply(adult_df)
    nue = non_uniform_entropy(adult_df, out, ADULT_QIS)
    assert nue["bits"] == pytest.approx(382871.41, abs=0.01)
    assert 0 < nue["percent"] < 100
    top = adult_df.copy()
    for q in ADULT_QIS:
        top[q] = "*"
    assert non_uniform_entropy(adult_df, top, ADULT_QIS)["percent"] == pytest.approx(100)
    assert non_uniform_entropy(adult_df, adult_df, ADULT_QIS)["bits"] == 0


def test_suppressed_cells_count_as_top_in_entropy_and_n_in_discernibility():
    before = pd.DataFrame({"a": ["x", "x", "y", "z"]})
    after = before.copy()
    after.loc[3, "a"] = SUPPRESSED
    nue = non_uniform_entropy(before, after, ["a"])
    assert nue["bits"] == pytest.approx(np.log2(4 / 1))
    # classes {x,x},{y}; suppressed record counts N = 4
    assert discernibility(after, ["a"]) == 2 ** 2 + 1 ** 2 + 4
    assert average_class_size(after, ["a"]) == pytest.approx(3 / 2)
    assert missingness(after, ["a"]) == {"record": 0.25, "cell": 0.25, "records_missing": 1, "cells_missing": 1}


def test_precision_and_height():
    after = pd.DataFrame({"a": ["1", SUPPRESSED], "b": ["x", "y"]})
    p = precision({"a": 1, "b": 0}, {"a": 2, "b": 1}, after)
    # a: record 1 at 1/2, record 2 suppressed at 1; b: 0 -> 1 − (1.5)/(2·2)
    assert p == {"precision": pytest.approx(1 - 1.5 / 4), "height": 1}


def test_numeric_utility_reads_intervals():
    assert to_number(pd.Series(["30-39", "90+", "<18", "42", "x"])).tolist()[:4] == [34.5, 90.0, 18.0, 42.0]
    before = pd.DataFrame({"age": ["31", "38", "52", "95"], "w": ["1", "2", "3", "4"]})
    after = pd.DataFrame({"age": ["30-39", "30-39", "50-59", "90+"], "w": ["1", "2", "3", "4"]})
    u = numeric_utility(before, after, ["age", "w"])
    assert u["columns"]["age"]["mean_before"] == pytest.approx(54.0)
    assert u["columns"]["age"]["mean_after"] == pytest.approx((34.5 * 2 + 54.5 + 90) / 4)
    assert u["columns"]["age"]["corr_before_after"] > 0.99
    assert set(u) == {"columns", "correlation_before", "correlation_after"}
