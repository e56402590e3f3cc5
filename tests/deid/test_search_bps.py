"""BPS and Directed (Benitez, Loukides & Malin 2010 §2.4): boundary policies, non-dominated filter, BPS cheaper than Directed."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import deid_core as dc
from deid_core.algorithm import (SubtreeProblem, bps, directed, halfway, non_dominated, safe_harbor_risk, search_subtree,
                                 verify_subtree)
from deid_core.cli import main
from deid_core.spec import parse_spec

RACES = ["White", "Black", "Asian", "Amer-Indian", "Other"]
AGES = np.arange(0, 101)


def synthetic_census(n: int = 3000, seed: int = 0, state_size: float = 5.7e6,
                     races: list[str] = RACES) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Gender × Race × Age population for one state (census-table shape, like PCT12 A–G) and a sample of it.

    Race shares and an ageing pyramid are made up but realistic (ages 0–100;
    "100" stands for 100+); the sample draws records in proportion to the
    population, so every record's cell exists in the population table.
    """
    rng = np.random.default_rng(seed)
    race_p = np.array([0.79, 0.16, 0.012, 0.003, 0.035])[: len(races)]
    race_p = race_p / race_p.sum()
    age_p = np.exp(-((AGES / 70.0) ** 4)) * (1 + 0.1 * rng.random(len(AGES)))
    age_p /= age_p.sum()
    cells = pd.MultiIndex.from_product([["F", "M"], races, AGES.astype(str)], names=["sex", "race", "age"]).to_frame(index=False)
    p = np.einsum("i,j,k->ijk", [0.51, 0.49], race_p, age_p).ravel()
    cells["count"] = np.maximum(rng.poisson(p * state_size), 1)
    draw = rng.choice(len(cells), size=n, p=cells["count"] / cells["count"].sum())
    data = cells.loc[draw, ["sex", "race", "age"]].reset_index(drop=True)
    return data, cells


SPEC = {"columns": {"sex": "quasi", "race": "quasi", "age": "quasi"}, "types": {"age": "age"}}


@pytest.fixture(scope="module")
def census():
    data, pop = synthetic_census(n=2000, seed=1)
    spec = parse_spec(SPEC)
    thr = safe_harbor_risk(data, pop, spec)
    return data, pop, spec, thr


def test_halfway_generalizes_half_of_the_differing_bits():
    rng = np.random.default_rng(0)
    lo, hi = np.ones(9, dtype=bool), np.zeros(9, dtype=bool)
    hi[0] = lo[0] = True
    cur = halfway(lo, hi, np.ones(9), rng)
    assert (cur >= hi).all() and (cur <= lo).all() and (lo != cur).sum() == 4


def test_non_dominated_keeps_the_most_specific_incomparable_policies():
    a, b, c = np.array([1, 0, 0], bool), np.array([1, 1, 0], bool), np.array([0, 0, 1], bool)
    got = {tuple(x) for x in non_dominated([a, b, c, b])}
    assert got == {tuple(b), tuple(c)}


def test_bit_algorithms_on_a_threshold_predicate():
    """Acceptable = at most 5 bits set: every result is a boundary policy."""
    rng = np.random.default_rng(3)
    ok = lambda bits: int(bits.sum()) <= 5
    for algo in (lambda: bps(12, ok, 10, np.ones(12), rng), lambda: directed(12, ok, 10, rng)):
        sols = algo()
        assert len(sols) == 10 and all(s.sum() == 5 for s in sols)


def is_boundary(problem: SubtreeProblem, bits: np.ndarray) -> bool:
    """Risk ≤ T and some immediate child (one more split kept) above T."""
    if not problem.acceptable(bits):
        return False
    for j in np.flatnonzero(~bits):
        child = bits.copy()
        child[j] = True
        if not problem.acceptable(child):
            return True
    return False


def test_bps_results_are_boundary_policies_and_cheaper_than_directed(census):
    data, pop, spec, thr = census
    table = dc.encode_table(data, spec, pop)
    res = {}
    for method in ("bps", "directed"):
        prob = SubtreeProblem(table, thr)
        res[method] = search_subtree(prob, method, iterations=25, seed=2).to_dict()
        assert res[method]["boundary_policies_found"] == 25
        for pol in res[method]["policies"]:
            assert is_boundary(prob, np.array([c == "1" for c in pol["bits"]]))
    assert res["bps"]["nodes_evaluated"] * 3 < res["directed"]["nodes_evaluated"]
    assert res["bps"]["non_dominated"] >= 15
    # the Safe Harbor threshold is met by the found policies, which keep ages >= 90 apart in some of them
    assert all(p["risk"] <= thr for p in res["bps"]["policies"])


def test_policies_meet_threshold_when_applied_from_scratch(census):
    data, pop, spec, thr = census
    table = dc.encode_table(data, spec, pop)
    prob = SubtreeProblem(table, thr)
    res = search_subtree(prob, "bps", iterations=5, seed=0).to_dict()
    for pol in res["policies"]:
        bits = np.array([c == "1" for c in pol["bits"]])
        risk, out = verify_subtree(prob, spec, data, pop, bits)
        assert risk == pytest.approx(pol["risk"], rel=1e-9) and risk <= thr
        for q, m in pol["mapping"].items():  # released values are the mapping's
            assert set(out[q].astype(str)) <= set(data[q].astype(str)) | set(m.values())


def test_cli_bps_with_population(tmp_path, census, capsys):
    data, pop, _, thr = census
    (tmp_path / "d.csv").write_text(data.to_csv(index=False))
    (tmp_path / "p.csv").write_text(pop.to_csv(index=False))
    (tmp_path / "s.toml").write_text('[columns]\nsex = "quasi"\nrace = "quasi"\nage = "quasi"\n[types]\nage = "age"\n')
    out, rel = tmp_path / "r.json", tmp_path / "rel.csv"
    rc = main(["search", "--input", str(tmp_path / "d.csv"), "--spec", str(tmp_path / "s.toml"), "--method", "bps",
               "--population", str(tmp_path / "p.csv"), "--iterations", "5", "--out", str(out), "--apply-best", str(rel)])
    assert rc == 0, capsys.readouterr().err
    r = json.loads(out.read_text())
    assert r["threshold"] == pytest.approx(thr) and r["threshold_source"] == "safe harbor"
    assert r["policies"] and all(p["reassessed_risk"] <= thr and "mapping" in p for p in r["policies"])
    assert rel.exists()
    rc = main(["search", "--input", str(tmp_path / "d.csv"), "--spec", str(tmp_path / "s.toml"), "--method", "directed",
               "--population", str(tmp_path / "p.csv"), "--k", "3", "--out", str(tmp_path / "x.json")])
    assert rc == 2 and not (tmp_path / "x.json").exists()
