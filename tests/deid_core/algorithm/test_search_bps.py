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
               "--population", str(tmp_path / "p.csv"), "--iterations", "5", "--report", str(out), "--out", str(rel)])
    assert rc == 0, capsys.readouterr().err
    r = json.loads(out.read_text())
    assert r["threshold"] == pytest.approx(thr) and r["threshold_source"] == "safe harbor"
    assert r["policies"] and all(p["reassessed_risk"] <= thr and "mapping" in p for p in r["policies"])
    assert rel.exists()
    rc = main(["search", "--input", str(tmp_path / "d.csv"), "--spec", str(tmp_path / "s.toml"), "--method", "directed",
               "--population", str(tmp_path / "p.csv"), "--k", "3", "--report", str(tmp_path / "x.json")])
    assert rc == 2 and not (tmp_path / "x.json").exists()


# ---------------------------------------------------------------- [longitudinal]: risk over persons

def _claims() -> pd.DataFrame:
    """4 persons x 4 claims (two dx, each twice): every row class holds 2 rows of 1 person."""
    rows = [(f"p{i}", sex, yob, dx) for i, (sex, yob) in enumerate([("F", "1950"), ("F", "1951"), ("M", "1950"),
                                                                     ("M", "1951")], 1) for dx in "AABB"]
    return pd.DataFrame(rows, columns=["pid", "sex", "yob", "dx"])


CLAIMS_SPEC = {"columns": {"pid": "direct", "sex": "quasi", "yob": "quasi", "dx": "quasi"},
               "longitudinal": {"person": "pid", "level1": ["sex", "yob"], "level2": ["dx"]}}


def test_subtree_risk_counts_persons_with_longitudinal():
    from deid_core.longitudinal.persons import person_index
    df = _claims()
    spec = parse_spec(CLAIMS_SPEC)
    rows = SubtreeProblem(dc.encode_table(df, spec), 0.5)
    persons = SubtreeProblem(dc.encode_table(df, spec), 0.5, person_index(df, "pid", ["sex", "yob"]))
    keep_all = np.ones(rows.n_bits, dtype=bool)
    assert (rows.risk(keep_all), persons.risk(keep_all)) == (0.5, 1.0)  # 16 rows in pairs / 4 lone persons
    assert search_subtree(rows, "bps", 5).policies[0]["information_loss"] == 0.0  # the data as is
    assert safe_harbor_risk(df, None, spec) == 0.5
    assert safe_harbor_risk(df, None, spec, persons.persons) == 1.0
    for method in ("bps", "directed"):
        res = search_subtree(persons, method, 20, seed=1)
        # merging the two birth years, or the two sexes, pairs every person up: 1/2 each
        assert sorted(p["bits"] for p in res.policies) == ["011", "101"], method
        assert {(p["risk"], p["information_loss"], p["suppressed_persons"]) for p in res.policies} == {(0.5, 1 / 3, 0)}
        assert res.extra["units"] == "persons" and res.extra["persons"] == 4
        risk, out = verify_subtree(persons, spec, df, None, np.array([1, 0, 1], dtype=bool))
        assert risk == 0.5 and set(out["yob"]) == {"1950-1951"}


def test_cli_bps_with_longitudinal_counts_persons(tmp_path, capsys):
    import tomli_w
    df = _claims()
    df.to_csv(tmp_path / "claims.csv", index=False)
    (tmp_path / "rows.toml").write_text(tomli_w.dumps({"columns": CLAIMS_SPEC["columns"]}))
    (tmp_path / "persons.toml").write_text(tomli_w.dumps(CLAIMS_SPEC))
    res = {}
    for name in ("rows", "persons"):
        rc = main(["search", "--input", str(tmp_path / "claims.csv"), "--spec", str(tmp_path / f"{name}.toml"),
                   "--method", "bps", "--threshold", "0.5", "--iterations", "10",
                   "--report", str(tmp_path / f"{name}.json"),
                   "--out", str(tmp_path / f"{name}.csv")])
        assert rc == 0, capsys.readouterr().err
        res[name] = json.loads((tmp_path / f"{name}.json").read_text())
    assert res["rows"]["policies"][0]["information_loss"] == 0.0 and "units" not in res["rows"]
    best = res["persons"]["policies"][0]
    assert (best["information_loss"], best["reassessed_risk"], res["persons"]["units"]) == (1 / 3, 0.5, "persons")
    released = dc.read_table(tmp_path / "persons.csv").assign(pid=df["pid"])
    persons_in_class = released.groupby(["sex", "yob", "dx"], observed=True)["pid"].transform("nunique")
    assert persons_in_class.min() == 2 and "pid" not in dc.read_table(tmp_path / "persons.csv").columns
    # default threshold: the Safe Harbor release's risk, over persons too (nothing here is a Safe Harbor kind)
    rc = main(["search", "--input", str(tmp_path / "claims.csv"), "--spec", str(tmp_path / "persons.toml"),
               "--method", "directed", "--iterations", "5", "--report", str(tmp_path / "sh.json")])
    assert rc == 0, capsys.readouterr().err
    sh = json.loads((tmp_path / "sh.json").read_text())
    assert (sh["threshold_source"], sh["threshold"], sh["policies"][0]["risk"]) == ("safe harbor", 1.0, 1.0)
