"""Cross-checks on the Adult data (30,162 records, 8 QIs, ARX hierarchies).

The reference is an independent, deliberately naive computation: a pandas
``groupby`` of the generalized QI strings (the same quantities pycanon's
``k_anonymity``, ``max_rir``, ``sizes_ec``, ``average_rir`` and
``discernability_metric`` compute; the numbers below were also checked against
pycanon 1.3 once, which is not a test dependency because it pins old pandas).
The class average of 1/|EC| and our record average of 1/f_j (= #ECs / N,
El Emam & Arbuckle, ch. 4 "average risk") are compared each with its own quantity.
"""
from __future__ import annotations

import numpy as np
import pytest

from deid_core.metric import discernibility
from deid_core.risk import encode_table, summarize
from deid_core.spec import load_spec
from deid_core.transform import full_domain_policy
from deid_testdata import ADULT_QIS

NODES = [
    {},  # original data
    {"sex": 1, "age": 2, "race": 1, "marital-status": 1, "education": 3, "native-country": 2, "workclass": 2, "occupation": 1},
    {"age": 1, "native-country": 1, "education": 1},
]


@pytest.fixture(scope="module")
def adult_setup(adult_df, tmp_path_factory):
    from deid_testdata import adult_spec_toml
    p = tmp_path_factory.mktemp("spec") / "adult.toml"
    p.write_text(adult_spec_toml())
    spec = load_spec(p)
    return adult_df, spec, encode_table(adult_df, spec)


def reference_class_sizes(plain, qis) -> np.ndarray:
    """Equivalence-class sizes by a plain groupby on the released strings."""
    return plain.groupby(qis, observed=True, dropna=False).size().to_numpy()


@pytest.mark.parametrize("levels", NODES, ids=["original", "arx-ola-node", "mixed"])
def test_k_and_average_risk_match_a_groupby_reference(adult_setup, levels):
    df, spec, table = adult_setup
    out, _ = full_domain_policy(spec.hierarchies, levels).apply(df)
    plain = out[ADULT_QIS].astype(str)
    cl = table.classes(levels)
    s = summarize(cl)
    sizes = reference_class_sizes(plain, ADULT_QIS)
    assert s["k_min"] == sizes.min()
    assert s["prosecutor"]["max"] == pytest.approx(1.0 / sizes.min())
    assert s["equivalence_classes"] == len(sizes)
    # record average (ours) = #ECs / N; class average = mean_j 1/f_j
    assert s["prosecutor"]["average"] == pytest.approx(len(sizes) / len(df), rel=1e-12)
    assert float(np.mean(1.0 / cl.ec_sizes)) == pytest.approx(float(np.mean(1.0 / sizes)), rel=1e-12)
    # discernibility Σ f_j² (no suppression here)
    assert discernibility(out, ADULT_QIS) == pytest.approx(float(np.sum(sizes.astype(float) ** 2)))


def test_adult_original_numbers(adult_setup):
    """Fixed facts of the ARX Adult file: 30,162 records, 18,109 ECs with the 8 QIs, many uniques."""
    _, _, table = adult_setup
    s = summarize(table.classes())
    assert s["records"] == 30162 and s["equivalence_classes"] == 18109 and s["k_min"] == 1
