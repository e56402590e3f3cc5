"""LOLA, longitudinal OLA (El Emam et al. 2012, Heritage Health Prize): the criterion k = α·F on the simulated
attack, suppression in persons, the least-loss acceptable node (exhaustive check), ``deid search --method lola``."""
from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from deid_core.algorithm.lattice import Lattice
from deid_core.algorithm.lola import lola_problem, lola_release
from deid_core.io import read_table
from deid_core.spec import parse_spec

from deid_testdata import CLAIMS_LONGITUDINAL_TOML as LONGITUDINAL_TOML, CLAIMS_SPEC_TOML as SPEC_TOML, REPO as ROOT, claims

SPEC = {
    "columns": {"pid": "direct", "sex": "quasi", "yob": "quasi", "dx": "quasi", "los": "quasi"},
    "hierarchies": {"yob": {"builder": "interval", "widths": [10, 20]}, "dx": {"builder": "prefix"},
                    "los": {"builder": "interval", "widths": [5, 10]}},
    "longitudinal": {"person": "pid", "level1": ["sex", "yob"], "level2": ["dx", "los"], "adversary_power": 2},
}

@pytest.mark.parametrize("iterations", [10_000, 60])  # census (>= 120 persons) and Monte Carlo
def test_lola_returns_the_least_loss_acceptable_node_exhaustive(iterations):
    df, spec = claims(), parse_spec(SPEC)
    kw = dict(max_suppression=0.05, iterations=iterations, seed=1)
    found = lola_release(df, spec, top=3, **kw)
    # every node of the (small) lattice evaluated from scratch with the same criterion
    problem = lola_problem(df, spec, **kw)
    lat = Lattice(problem.heights)
    ok = {node: problem.evaluate(node).acceptable for node in lat.all_nodes()}
    # monotone: every direct generalization of an acceptable node is acceptable (fixed seed, original knowledge)
    for node, good in ok.items():
        for i in range(len(node)):
            up = node[:i] + (node[i] + 1,) + node[i + 1:]
            if good and up in ok:
                assert ok[up], (node, up)
    acceptable = [n for n, good in ok.items() if good]
    assert 0 < len(acceptable) < lat.size
    loss = {n: problem.loss(n) for n in acceptable}
    # after a Monte-Carlo search the best node must also meet MaxSup on the census that picks the persons
    passing = [n for n in acceptable if problem.criterion.census or problem.high_risk_persons(n).mean() <= 0.05]
    best = min(passing, key=lambda n: (loss[n], sum(n)))
    assert found.search.extra["rejected_by_census"] == sum(loss[n] < loss[best] for n in acceptable)
    got = found.best
    assert tuple(got["levels"][q] for q in problem.qis) == best
    assert got["information_loss"] == pytest.approx(loss[best])
    assert found.search.nodes_evaluated < lat.size  # OLA's tagging skipped nodes
    assert [p["information_loss"] for p in found.search.policies] == sorted(p["information_loss"]
                                                                            for p in found.search.policies)
    r = found.search.to_dict()
    assert r["acceptable_nodes"] == len(acceptable) - r["rejected_by_census"]
    assert r["rejected_by_census"] == (1 if iterations == 60 else 0)  # this sample: one Monte-Carlo acceptance fails
    assert got["high_risk_proportion"] <= 0.05


def test_k_is_alpha_times_F_on_level1_classes():
    # every person has the same level-2 values, so a person's matching set is their level-1 class:
    # classes of 5, 12 and 30 persons; tau = 0.05 (F = 20)
    sizes = {"1950": 5, "1960": 12, "1970": 30}
    rows = [(f"{y}-{i}", "F", y, dx, "0") for y, s in sizes.items() for i in range(s) for dx in ("A1", "B1")]
    df = pd.DataFrame(rows, columns=["pid", "sex", "yob", "dx", "los"])
    spec = parse_spec(SPEC)
    for alpha, k, high in ((1.0, 20, 17), (0.5, 10, 5), (0.2, 4, 0)):  # the paper's example: F = 20, a = 20% -> k = 4
        problem = lola_problem(df, spec, sampling_fraction=alpha, max_suppression=0.0, iterations=1000)
        assert problem.criterion.k == pytest.approx(k)
        assert problem.high_risk_persons((0, 0, 0, 0)).sum() == high
        assert problem.evaluate((0, 0, 0, 0)).acceptable == (high == 0)
    # --k is the same criterion: tau = alpha / k
    assert lola_problem(df, spec, k=10, sampling_fraction=0.5).criterion.threshold == pytest.approx(0.05)


def test_suppression_is_counted_in_persons():
    df, spec = claims(), parse_spec(SPEC)
    found = lola_release(df, spec, max_suppression=0.1, iterations=10_000)
    best = found.best
    persons = df["pid"].nunique()
    assert found.search.extra["criterion"]["max_suppressed_persons"] == int(0.1 * persons)  # persons, not claims
    assert 0 < best["suppressed_persons"] <= int(0.1 * persons)
    out = found.apply(df)
    marked = out["sex"].astype(str).eq("[suppressed]").to_numpy()
    assert (out.loc[marked, found.qis].astype(str) == "[suppressed]").all().all()
    assert df.loc[marked, "pid"].nunique() == best["suppressed_persons"] == len(found.suppressed_persons)
    assert marked.sum() == best["suppressed_records"] > best["suppressed_persons"]  # several claims each
    # all of a suppressed person's claims are suppressed
    assert not df.loc[~marked, "pid"].isin(found.suppressed_persons).any()
    assert best["information_loss_with_suppression"] > best["information_loss"]
    # the reported risk counts matching sets up to floor(k) + 1 = 21 persons: an upper bound of the exact average
    assert found.search.extra["criterion"]["count_limit"] == 21
    assert 0 < best["attack_average_risk"] <= best["risk"] + 1e-12


def test_lola_refuses_a_qi_outside_the_two_levels_and_inconsistent_level1():
    spec = parse_spec({**SPEC, "longitudinal": {**SPEC["longitudinal"], "level2": ["dx"]}})
    with pytest.raises(ValueError, match="'los' is neither level1 nor level2"):
        lola_release(claims(), spec)
    df = claims()
    several = df["pid"].value_counts().index[0]  # a person with several claims
    df.loc[df.index[df["pid"] == several][1], "yob"] = "1800"
    with pytest.raises(ValueError, match="different level-1 values"):
        lola_release(df, parse_spec(SPEC))


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "deid_core.cli", "search", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_cli_lola_end_to_end(tmp_path):
    df = claims()
    df.to_csv(tmp_path / "claims.csv", index=False)
    (tmp_path / "spec.toml").write_text(SPEC_TOML + LONGITUDINAL_TOML)
    out, rel = tmp_path / "r.json", tmp_path / "best.csv"
    p = _cli("--input", str(tmp_path / "claims.csv"), "--spec", str(tmp_path / "spec.toml"), "--method", "lola",
             "--max-suppression", "0.05", "--iterations", "500", "--seed", "1", "--report", str(out),
             "--out", str(rel))
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    assert r["method"] == "lola" and r["nodes_evaluated"] > 0 and r["seconds"] > 0
    assert {"lattice_size", "minimal_nodes", "acceptable_nodes", "criterion", "best_policy", "seconds_total"} <= set(r)
    assert r["criterion"]["kind"] == "lola" and r["criterion"]["k"] == 20 and r["criterion"]["iterations"] == 500
    best = r["policies"][0]
    assert {"levels", "risk", "information_loss", "suppressed_records", "suppressed_persons"} <= set(best)
    api = lola_release(df, parse_spec(SPEC), max_suppression=0.05, iterations=500, seed=1)
    assert best["levels"] == api.best["levels"] and best["suppressed_persons"] == api.best["suppressed_persons"]
    released = read_table(rel)  # from the file, as a recipient would
    assert "pid" not in released.columns and len(released) == len(df)
    supp = released["sex"].isna().to_numpy()  # the suppression marker reads back as missing
    assert supp.sum() == best["suppressed_records"]
    assert df.loc[supp, "pid"].nunique() == best["suppressed_persons"]
    assert r["best_reassessed"]["suppressed_persons"] == best["suppressed_persons"]


def test_cli_lola_without_longitudinal_exits_2_with_one_line(tmp_path):
    claims(20).to_csv(tmp_path / "claims.csv", index=False)
    (tmp_path / "spec.toml").write_text(SPEC_TOML)
    out = tmp_path / "r.json"
    p = _cli("--input", str(tmp_path / "claims.csv"), "--spec", str(tmp_path / "spec.toml"), "--method", "lola",
             "--report", str(out), "--out", str(tmp_path / "o.csv"))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines() == [
        "deid: error: --method lola needs a [longitudinal] section in the spec (person, level1, level2)"]
    assert not out.exists() and not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("extra,msg", [
    (["--iterations", "0"], "--iterations: must be an integer >= 1"),
    (["--sampling-fraction", "1.5"], "outside (0, 1]"),
    (["--max-suppression", "-0.1"], "outside [0, 1]"),
])
def test_cli_lola_bad_options_exit_2_with_one_line(tmp_path, capsys, extra, msg):
    from deid_core.cli import main
    claims(20).to_csv(tmp_path / "claims.csv", index=False)
    (tmp_path / "spec.toml").write_text(SPEC_TOML + LONGITUDINAL_TOML)
    out = tmp_path / "r.json"
    rc = main(["search", "--input", str(tmp_path / "claims.csv"), "--spec", str(tmp_path / "spec.toml"),
               "--method", "lola", "--report", str(out), *extra])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and msg in err and not out.exists()


# ---------------------------------------------------------------- patient-level OLA ([longitudinal] set)

def _three_persons() -> pd.DataFrame:
    # p1 (3 identical claims) and p2 share a class; p3's 2 claims are a class of 2 records but 1 person
    rows = [("p1", "F", "1950", "A1", "0")] * 3 + [("p2", "F", "1950", "A1", "0")] + [("p3", "M", "1960", "B1", "3")] * 2
    return pd.DataFrame(rows, columns=["pid", "sex", "yob", "dx", "los"])


def test_ola_with_longitudinal_counts_classes_in_persons():
    from deid_core.algorithm.optimal import optimal_release
    df = _three_persons()
    rows_spec = parse_spec({k: v for k, v in SPEC.items() if k != "longitudinal"})
    assert set(optimal_release(df, rows_spec, k=2).best["levels"].values()) == {0}  # row counting: k = 2 holds
    found = optimal_release(df, parse_spec(SPEC), k=2)
    assert set(found.best["levels"].values()) != {0}  # p3 alone is a class of 1 person
    assert found.search.extra["units"] == "persons" and found.search.extra["persons"] == 3
    assert found.reassess(found.apply(df))["k_min"] >= 2
    # suppression in persons: floor(0.34 x 3 persons) = 1 person (p3, 2 records) may go
    found = optimal_release(df, parse_spec(SPEC), k=2, max_suppression=0.34)
    best = found.best
    assert set(best["levels"].values()) == {0}
    assert best["suppressed_persons"] == 1 and best["suppressed_records"] == 2
    out = found.apply(df)
    assert out["sex"].astype(str).eq("[suppressed]").tolist() == [False] * 4 + [True] * 2
    check = found.reassess(out)
    assert check["meets"] and check["suppressed_persons"] == 1 and check["k_min"] == 2


def test_cli_ola_with_longitudinal_suppresses_persons(tmp_path):
    from deid_core.cli import main
    df = claims()
    df.to_csv(tmp_path / "claims.csv", index=False)
    (tmp_path / "spec.toml").write_text(SPEC_TOML + LONGITUDINAL_TOML)
    out, rel = tmp_path / "r.json", tmp_path / "best.csv"
    assert main(["search", "--input", str(tmp_path / "claims.csv"), "--spec", str(tmp_path / "spec.toml"),
                 "--method", "ola", "--k", "3", "--max-suppression", "0.1", "--top", "1", "--report", str(out),
                 "--out", str(rel)]) == 0
    r = json.loads(out.read_text())
    best = r["policies"][0]
    persons = df["pid"].nunique()
    assert r["units"] == "persons" and r["criterion"]["max_suppressed_records"] == int(0.1 * persons)
    assert 0 < best["suppressed_persons"] <= int(0.1 * persons) and r["best_reassessed"]["meets"]
    released = read_table(rel)
    supp = released["sex"].isna().to_numpy()
    assert df.loc[supp, "pid"].nunique() == best["suppressed_persons"] and supp.sum() == best["suppressed_records"]
    kept = released.loc[~supp].assign(pid=df.loc[~supp, "pid"].to_numpy())
    qis = ["sex", "yob", "dx", "los"]
    persons_per_class = kept.groupby(qis, observed=True)["pid"].transform("nunique")
    assert persons_per_class.min() >= 3  # every remaining class holds at least 3 distinct persons


def test_ola_person_suppression_follows_persons_out_of_their_other_classes():
    """Suppressing p7 (alone on claim E) leaves (F, D) with p5 and p6 only: the node's suppression counts them
    too, so the release OLA picks still has every class at k = 3 persons when re-assessed from scratch."""
    from deid_core.algorithm.criterion import Criterion
    from deid_core.algorithm.full_domain import FullDomainProblem
    from deid_core.algorithm.optimal import optimal_release
    from deid_core.longitudinal.persons import person_index
    from deid_core.risk import encode_table
    rows = ([("p1", "F", "A")] * 3 + [(p, "M", dx) for p in ("p2", "p3", "p4") for dx in ("B", "C")]
            + [("p5", "F", "D"), ("p6", "F", "D"), ("p7", "F", "D")] + [("p7", "F", "E")] * 3)
    df = pd.DataFrame(rows, columns=["pid", "sex", "dx"])
    spec = parse_spec({"columns": {"pid": "direct", "sex": "quasi", "dx": "quasi"},
                       "longitudinal": {"person": "pid", "level1": ["sex"], "level2": ["dx"]}})
    problem = FullDomainProblem(encode_table(df, spec), Criterion.build(7, k=3, max_suppression=0.6),
                                persons=person_index(df, "pid", ["sex"]))
    res = problem.evaluate((0, 0))
    assert (res.suppressed, res.acceptable) == (4, True)  # p1, p7, then p5 and p6 (one pass would say 2)
    assert problem.suppressed_rows((0, 0), res.suppress_k).sum() == 9
    found = optimal_release(df, spec, k=3, max_suppression=0.6, top=4)
    bottom = [p for p in found.search.policies if p["levels"] == {"sex": 0, "dx": 0}]
    assert [(p["suppressed_persons"], p["suppressed_records"]) for p in bottom] == [(4, 9)]
    check = found.reassess(found.apply(df))
    assert check["meets"] and check["k_min"] >= 3
