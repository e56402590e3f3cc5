"""Cross-checks against pycanon on the Adult data (30,162 records, 8 QIs, ARX hierarchies).

pycanon's ``average_rir`` is the mean over *classes* of 1/|EC|; ours is the
mean over *records* of 1/f_j (= #ECs/N, B:1419–1438). We compare each with
the matching quantity.
"""
from __future__ import annotations

import numpy as np
import pytest
from pycanon import anonymity, metrics as pc_metrics

from deid_core.metrics import discernibility
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


@pytest.mark.parametrize("levels", NODES, ids=["original", "arx-ola-node", "mixed"])
def test_k_and_average_risk_match_pycanon(adult_setup, levels):
    df, spec, table = adult_setup
    out, _ = full_domain_policy(spec.hierarchies, levels).apply(df)
    plain = out[ADULT_QIS].astype(str)
    cl = table.classes(levels)
    s = summarize(cl)
    k = anonymity.k_anonymity(plain, ADULT_QIS)
    assert s["k_min"] == k
    assert s["prosecutor"]["max"] == pytest.approx(pc_metrics.max_rir(plain, ADULT_QIS))
    stats = pc_metrics.sizes_ec(plain, ADULT_QIS)
    assert s["equivalence_classes"] == stats["n_ec"]
    # record average (ours) = #ECs / N; class average (pycanon) = mean_j 1/f_j
    assert s["prosecutor"]["average"] == pytest.approx(stats["n_ec"] / len(df), rel=1e-12)
    assert float(np.mean(1.0 / cl.ec_sizes)) == pytest.approx(pc_metrics.average_rir(plain, ADULT_QIS), rel=1e-12)
    # discernibility Σ f_j² (no suppression here)
    assert discernibility(out, ADULT_QIS) == pytest.approx(pc_metrics.discernability_metric(plain, plain, ADULT_QIS))


def test_adult_original_numbers(adult_setup):
    """Fixed facts of the ARX Adult file: 30,162 records, 18,109 ECs with the 8 QIs, many uniques."""
    _, _, table = adult_setup
    s = summarize(table.classes())
    assert s["records"] == 30162 and s["equivalence_classes"] == 18109 and s["k_min"] == 1
