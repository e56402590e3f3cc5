"""docs/deid.md, "Measures" test vectors, exact numbers."""
from __future__ import annotations

import math

import numpy as np
import pytest

from deid_core.risk import (PR_BREACH, attack_assessment, conditional_threshold, encode_table,
                            k_for_threshold, meets, per_record, pr_acquaintance, summarize)
from deid_core.spec import ReleaseSpec, parse_spec

from deid_testdata import LIU2016_DATA, LIU2016_POPULATION, LIU2016_SAFE_HARBOR_LEVELS, LIU2016_SPEC


@pytest.fixture
def liu2016_table():
    return encode_table(LIU2016_DATA.astype("category"), parse_spec(LIU2016_SPEC), LIU2016_POPULATION)


def test_liu2016_tables_I_II_instance_disclosure(liu2016_table):
    """Liu et al. 2016 §3.1–3.2: q = 1/3,1/3,1/3,1/6,1/6,1/6; r = 1,1,1,.5,.5,.5; R = 0.75, Q = 0.25."""
    cl = liu2016_table.classes(LIU2016_SAFE_HARBOR_LEVELS)
    pr = per_record(cl)
    assert np.allclose(pr["journalist"], [1 / 3] * 3 + [1 / 6] * 3)
    assert np.allclose(pr["instance_disclosure"], [1, 1, 1, 0.5, 0.5, 0.5])
    s = summarize(cl)
    assert s["instance_disclosure"]["R"] == pytest.approx(0.75, abs=1e-12)
    assert s["instance_disclosure"]["Q"] == pytest.approx(0.25, abs=1e-12)
    assert s["instance_disclosure"]["max_r"] == 1.0
    assert s["instance_disclosure"]["max_q"] == pytest.approx(1 / 3)
    # 3-anonymous: prosecutor max 1/3 (Liu et al. 2016 §3.1), 2 ECs
    assert s["k_min"] == 3 and s["equivalence_classes"] == 2
    assert s["prosecutor"]["max"] == pytest.approx(1 / 3)
    # Benitez, Loukides & Malin 2010 eq. (1) with gamma = 1: 3·1/3 + 3·1/6 = 1.5; normalized 0.25; marketer = Σ f_j/F_j / N
    assert s["population_risk"]["sum"] == pytest.approx(1.5)
    assert s["population_risk"]["normalized"] == pytest.approx(0.25)
    assert s["marketer"] == pytest.approx((3 / 3 + 3 / 6) / 6)
    assert s["journalist"] == pytest.approx({"max": 1 / 3, "average": 0.25})


def test_liu2016_original_detail(liu2016_table):
    """Zip5 + DOB: five records unique in the population, the last has risk 1/2 (Helen or Irene)."""
    pr = per_record(liu2016_table.classes())
    assert np.allclose(pr["journalist"], [1, 1, 1, 1, 1, 0.5])


def test_population_is_reaggregated_not_looked_up(liu2016_table):
    """Generalizing the population (groupby-sum along the same hierarchy): year of birth only -> F = 3 and 6."""
    cl = liu2016_table.classes({"zip": 5, "dob": 4})
    assert sorted(set(cl.F)) == [3.0, 6.0]


def test_acquaintance_book_example():
    """El Emam & Arbuckle, ch. 3 (prevalence of a birth): ρ = 0.027 -> Pr(acquaintance) = 0.8716; conditional threshold 0.1/0.87 = 0.115."""
    p = pr_acquaintance(0.027)
    assert round(p, 4) == 0.8716
    assert round(conditional_threshold(0.1, round(p, 2)), 3) == 0.115
    assert round(conditional_threshold(0.1, p), 3) == 0.115


def test_attempt_book_example():
    """El Emam & Arbuckle, ch. 2 (Pr(attempt)): Pr(attempt) = 0.3, threshold 0.1 -> Pr(re-id | attempt) ≤ 0.33."""
    assert round(conditional_threshold(0.1, 0.3), 2) == 0.33


def test_breach_constant():
    assert PR_BREACH == 0.27


@pytest.mark.parametrize("t,k", [(0.5, 2), (0.33, 4), (0.2, 5), (0.1, 10), (0.091, 11), (0.09, 12), (0.05, 20)])
def test_threshold_to_k(t, k):
    """docs/deid.md, "Measures": a risk meets a threshold at or below it, so k = ⌈1/t⌉ (0.09 → 12: 1/11 = 0.0909
    is above 0.09; the book's k = 11 is the threshold 0.091)."""
    assert k_for_threshold(t) == k == math.ceil(1 / t)
    assert meets(1 / k, t)
    assert not meets(1 / (k - 1), t) if k > 1 else True


def test_no_tolerance_above_the_threshold():
    assert not meets(1 / 11, 0.09) and not meets(0.0501, 0.05) and meets(0.05, 0.05) and meets(1 / 20, 0.05)


def test_attack_model_public_and_non_public(liu2016_table):
    s = summarize(liu2016_table.classes(LIU2016_SAFE_HARBOR_LEVELS))
    pub = attack_assessment(s, ReleaseSpec(type="public", threshold=0.09))
    assert list(pub["attacks"]) == ["T4"] and pub["overall_risk"] == pytest.approx(1 / 3)
    assert not pub["meets_threshold"]
    priv = attack_assessment(s, ReleaseSpec(type="non-public", threshold=0.1, pr_attempt=0.3, prevalence=0.027))
    assert set(priv["attacks"]) == {"T1", "T2", "T3"}
    # strict average: max 1/3 > 0.33 cut -> the strict average is the max
    assert priv["attacks"]["T2"]["pr_reid"] == pytest.approx(pr_acquaintance(0.027) / 3)
    assert priv["attacks"]["T3"]["pr_reid"] == pytest.approx(0.27 / 3)
    assert priv["overall_risk"] == pytest.approx(pr_acquaintance(0.027) / 3)
    # a release meeting 0.1 under Pr(T2) = 0.87 keeps its maximum under the cut 0.33 (classes of 4 or more) and
    # its average under 0.1 / 0.87: k = 4 with an average cap, not k(0.1) = 10
    assert priv["k_equivalent"] == 4
    assert priv["average_at_most"] == pytest.approx(0.1 / pr_acquaintance(0.027))


def test_full_subtree_policy_risk_and_population_reaggregation(liu2016_table):
    """A full-subtree policy (Benitez, Loukides & Malin 2010 §2.2): merge only the two 00202 birth dates of May/Sep 1935."""
    t = liu2016_table
    m = t.subtree_map("dob", {"1935-05-13": "1935-05/09", "1935-09-26": "1935-05/09"})
    cl = t.classes({"dob": m})
    assert sorted(cl.f.tolist()) == [1, 1, 1, 1, 2, 2]
    # population: 1935-05-13 (1) + 1935-09-26 (2) -> 3 people share the merged value
    assert sorted(cl.F.tolist()) == [1, 1, 1, 1, 3, 3]
    assert summarize(cl)["prosecutor"]["max"] == 1.0


def test_disclosed_key_risk_from_data_and_population():
    """Blocking keys in the clear: prosecutor 1/f from the data; Skinner-Elliott for sample uniques."""
    from deid_core.risk.buckets import disclosed_key_risk, skinner_elliott
    data = disclosed_key_risk(["a"] * 20 + ["b"] * 30)
    assert data["method"] == "data" and data["max"] == pytest.approx(1 / 20) and data["average"] == pytest.approx(2 / 50)
    # 3 uniques and 2 pairs in a sample of 7 from 700: theta = 0.01*3 / (0.01*3 + 2*0.99*2)
    assert skinner_elliott(3, 2, 0.01) == pytest.approx(0.03 / (0.03 + 3.96))
    # 3 uniques and 1 pair in 5 of 50: theta = 0.3 / (0.3 + 1.8) for the uniques, 0.1 / 2 for the pair
    mixed = disclosed_key_risk(list("abcdd"), population=50)
    assert mixed["max"] == pytest.approx(0.3 / 2.1) and mixed["classes"] == 4
    assert mixed["average"] == pytest.approx((3 * 0.3 / 2.1 + 2 * 0.05) / 5)
    # a sample unique never gets less than the sampling fraction
    assert disclosed_key_risk(list("abcddee"), population=700)["max"] == pytest.approx(0.01)
    # an identifier is unique for everyone: no population size makes it safe
    assert disclosed_key_risk([str(i) for i in range(1000)], population=10**8)["max"] == 1.0
    # common keys: pi / f
    assert disclosed_key_risk(["x"] * 50 + ["y"] * 50, population=10**4)["max"] == pytest.approx(0.01 / 50)
    with pytest.raises(ValueError):
        disclosed_key_risk(["a", "b"], population=1)


def test_keyed_bucket_risk_is_at_least_the_identifier_risk():
    """An identifier hashed into B buckets of a population N: never below (1 - e^-lam)/lam, lam = (N-1)/B."""
    from deid_core.risk.buckets import hashed_bucket_risk, keyed_bucket_risk
    labels = [i % 300 for i in range(400)]     # 100 pairs: the sample estimate alone would say 0.0003
    risk = keyed_bucket_risk(labels, 300_000, population=10_000_000)
    assert risk["max"] == pytest.approx(hashed_bucket_risk(10_000_000, 300_000)) and 0.02 < risk["max"] < 0.04
    assert keyed_bucket_risk(labels, 300_000)["max"] == 1.0     # from the data alone: 200 unique buckets
    coarse = keyed_bucket_risk([i % 4 for i in range(400)], 4, population=10_000_000)
    assert coarse["max"] == pytest.approx(hashed_bucket_risk(10_000_000, 4))
