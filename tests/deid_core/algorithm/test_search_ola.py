"""OLA: predictive tagging vs exhaustive search, losses vs metrics.py, Adult vs ARX."""
from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import deid_core as dc
from deid_core.algorithm import (ACCEPTABLE, Criterion, FullDomainProblem, Lattice, full_domain_release_policy, minimal_nodes,
                                 nodes_at, ola, reassess, search_ola)
from deid_core.metric import non_uniform_entropy
from deid_core.spec import load_spec, parse_spec
from deid_testdata import ADULT_QIS, adult_spec_toml


def small_table(seed: int, n: int = 400) -> tuple[pd.DataFrame, dc.Spec]:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "age": rng.integers(18, 80, n).astype(str),
        "zip": rng.choice(["02139", "02138", "02141", "02142", "03101", "03102", "10001"], n),
        "sex": rng.choice(["F", "M"], n),
    })
    spec = parse_spec({"columns": {"age": "quasi", "zip": "quasi", "sex": "quasi"},
                       "hierarchies": {"age": {"builder": "interval", "widths": [5, 10, 20]},
                                       "zip": {"builder": "prefix", "levels": 3}}})
    return df, spec


def exhaustive(problem: FullDomainProblem) -> tuple[float, list[tuple]]:
    """Best loss over every acceptable node, and the nodes reaching it."""
    nodes = list(itertools.product(*(range(h + 1) for h in problem.heights)))
    losses = {nd: problem.loss(nd) for nd in nodes if problem.acceptable(nd)}
    best = min(losses.values())
    return best, [nd for nd, v in losses.items() if v == pytest.approx(best, rel=1e-12)]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("kind,value,supp", [("k", 3, 0.0), ("k", 5, 0.04), ("max", 0.2, 0.02), ("average", 0.1, 0.05)])
@pytest.mark.parametrize("loss", ["nue", "geometric"])
def test_ola_equals_exhaustive_optimum(seed, kind, value, supp, loss):
    df, spec = small_table(seed)
    t = dc.encode_table(df, spec)
    crit = (Criterion.build(len(df), k=value, max_suppression=supp) if kind == "k"
            else Criterion.build(len(df), threshold=value, measure=kind, max_suppression=supp))
    res = search_ola(FullDomainProblem(t, crit, loss)).to_dict()
    best, argbest = exhaustive(FullDomainProblem(t, crit, loss))
    top = res["policies"][0]
    assert top["information_loss"] == pytest.approx(best, rel=1e-12)
    assert tuple(top["levels"].values()) in argbest
    assert res["nodes_evaluated"] < res["lattice_size"]
    losses = [p["information_loss"] for p in res["policies"]]
    assert losses == sorted(losses)
    for pol in res["policies"]:  # every reported policy meets the criterion when applied, re-assessed from scratch
        out, _ = full_domain_release_policy(spec, list(pol["levels"]), pol["levels"], pol["suppression_k"]).apply(df)
        check = reassess(out, list(pol["levels"]), crit)
        assert check["meets"] and check["suppressed_records"] == pol["suppressed_records"]



@pytest.mark.parametrize("release", [{"type": "public", "threshold": 0.2},
                                     {"type": "non-public", "threshold": 0.05, "pr_attempt": 0.3}])
def test_optimal_release_is_the_least_loss_release_meeting_the_attack_model(release):
    """deid_core.optimal_release (what deid search and party link-release call): the exhaustive optimum
    under the attack-model criterion, and its release re-assessed from scratch meets the threshold."""
    df, spec = small_table(2)
    spec = replace(spec, release=replace(spec.release, **release))
    found = dc.optimal_release(df, spec, max_suppression=0.05)
    crit = Criterion.for_release(len(df), spec.release, spec.release.threshold, 0.05)
    best, argbest = exhaustive(FullDomainProblem(dc.encode_table(df, spec), crit, "nue"))
    assert found.criterion == crit and tuple(found.best["levels"].values()) in argbest
    assert found.best["information_loss"] == pytest.approx(best, rel=1e-12)
    out = found.apply(df)
    assert found.reassess(out)["meets"]
    released = replace(spec, hierarchies={}, levels={}, record_suppression=False)
    assert dc.assess(out, released).attack["meets_threshold"]
    k5 = dc.optimal_release(df, spec, k=5, loss="geometric", top=3)
    assert k5.search.policies == search_ola(FullDomainProblem(dc.encode_table(df, spec), Criterion.build(len(df), k=5),
                                                              "geometric"), top=3).policies
    none = dc.optimal_release(df, spec, k=len(df) + 1)
    assert none.policy is None and none.best is None
    with pytest.raises(dc.DeidInputError, match="no policy meets the threshold"):
        none.apply(df)

def test_ola_on_a_linked_output_with_missing_values():
    """A left-join output (party join) has empty cells where no record matched: OLA takes the
    EncodedTable.classes path (missing = its own value) and still equals exhaustive search."""
    df, _ = small_table(5, n=300)
    rng = np.random.default_rng(5)
    df["region"] = np.where(rng.random(len(df)) < 0.25, None, rng.choice(["north", "south", "east"], len(df)))
    df["hcn"] = [f"id{i}" for i in range(len(df))]
    spec = parse_spec({"columns": {"hcn": "direct", "age": "quasi", "zip": "quasi", "region": "quasi"},
                       "hierarchies": {"age": {"builder": "interval", "widths": [10, 20]},
                                       "zip": {"builder": "prefix", "levels": 2}}})
    t = dc.encode_table(df, spec)
    crit = Criterion.build(len(df), k=3, max_suppression=0.05)
    prob = FullDomainProblem(t, crit, "nue")
    assert not prob.fast
    res = search_ola(prob).to_dict()
    best, argbest = exhaustive(FullDomainProblem(t, crit, "nue"))
    assert res["policies"][0]["information_loss"] == pytest.approx(best)
    pol = res["policies"][0]
    out, _ = full_domain_release_policy(spec, prob.qis, pol["levels"], pol["suppression_k"]).apply(df)
    assert "hcn" not in out.columns and reassess(out, prob.qis, crit)["meets"]


def test_predictive_tagging_finds_all_minimal_nodes_of_a_monotone_predicate():
    rng = np.random.default_rng(7)
    heights = (2, 3, 1, 2)
    for _ in range(20):
        gens = rng.integers(0, np.array(heights) + 1, size=(3, len(heights)))  # acceptable = above one of these
        pred = lambda nd: bool(((np.array(nd) >= gens).all(axis=1)).any())
        calls = []
        lat = Lattice(heights)
        got = ola(lat, lambda nd: calls.append(nd) or pred(nd))
        every = [nd for nd in lat.all_nodes() if pred(nd)]
        want = [nd for nd in every if not any(o != nd and all(a <= b for a, b in zip(o, nd)) for o in every)]
        assert sorted(got) == sorted(want) == sorted(minimal_nodes(lat))
        assert len(calls) == len(set(calls)) < lat.size
        assert all((lat.tags[nd] == ACCEPTABLE) == pred(nd) for nd in lat.all_nodes() if lat.tags[nd])
        assert all(lat.tags[nd] == ACCEPTABLE for nd in every)


def test_nodes_at_enumerates_one_height():
    got = sorted(nodes_at((0, 1, 0), (2, 2, 1), 2))
    assert got == sorted(n for n in itertools.product(range(3), range(1, 3), range(2)) if n[0] + n[1] - 1 + n[2] == 2)


def test_fast_loss_equals_metrics_non_uniform_entropy():
    """Equal without suppression. With suppression metrics.py reads the value -> generalized value map off
    the kept records only, while the search (like ARX's precomputed cardinalities) counts every input
    record under a generalized value, so the search's loss can only be larger."""
    df, spec = small_table(3)
    t = dc.encode_table(df, spec)
    crit = Criterion.build(len(df), k=4, max_suppression=0.1)
    prob = FullDomainProblem(t, crit, "nue")
    for node in [(0, 0, 0), (1, 1, 0), (2, 2, 1), (3, 0, 1)]:
        res = prob.evaluate(node)
        levels = dict(zip(prob.qis, node))
        out, _ = full_domain_release_policy(spec, prob.qis, levels, res.suppress_k).apply(df)
        ref = non_uniform_entropy(df, out, prob.qis)["bits"]
        if res.suppressed:
            assert prob.loss(node) >= ref - 1e-9
        else:
            assert prob.loss(node) == pytest.approx(ref, rel=1e-9)
        nosupp = full_domain_release_policy(spec, prob.qis, levels, 0).apply(df)[0]
        assert prob.lower_bounds(np.array([node]))[0] == pytest.approx(non_uniform_entropy(df, nosupp, prob.qis)["bits"])
        check = reassess(out, prob.qis, crit)
        assert check["suppressed_records"] == res.suppressed


ARX_NODE = (1, 2, 1, 1, 3, 2, 2, 1)


@pytest.fixture(scope="module")
def adult_table(adult_df, tmp_path_factory):
    p = tmp_path_factory.mktemp("spec") / "a.toml"
    p.write_text(adult_spec_toml())
    spec = load_spec(p)
    return spec, dc.encode_table(adult_df, spec)


def test_adult_5_anonymity_finds_arx_node_with_few_checks(adult_df, adult_table):
    """ARX: 5-anonymity, 0% suppression, non-uniform entropy -> (1,2,1,1,3,2,2,1), 382871.41, 142 nodes checked."""
    spec, t = adult_table
    crit = Criterion.build(len(adult_df), k=5)
    res = search_ola(FullDomainProblem(t, crit, "nue")).to_dict()
    best = res["policies"][0]
    assert tuple(best["levels"][q] for q in ADULT_QIS) == ARX_NODE
    assert best["information_loss"] == pytest.approx(382871.41, abs=0.01)
    assert res["lattice_size"] == 6480
    assert res["nodes_evaluated"] <= 2 * 142
    for pol in res["policies"]:  # every reported policy meets the criterion when applied
        out, _ = full_domain_release_policy(spec, ADULT_QIS, pol["levels"], pol["suppression_k"]).apply(adult_df)
        assert reassess(out, ADULT_QIS, crit)["meets"]
