"""An adversary who knows m of the n quasi-identifiers (El Emam & Arbuckle, ch. 7, "Covering Designs"):
``deid assess --known`` and ``deid search --known`` against brute force over every m-subset (real
``python -m deid_core.cli`` subprocesses for the command line)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from deid_core.algorithm import optimal_release
from deid_core.assess import assess, assess_known
from deid_core.io import read_table
from deid_core.risk.known_subsets import known_qis
from deid_core.spec import load_spec
from deid_testdata import ADULT, ADULT_QIS

from deid_testdata import REPO


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "deid_core.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=REPO)


def brute(frame: pd.DataFrame, qis, m: int) -> tuple[float, float, int]:
    """(max over m-subsets of the max 1/f, of the average 1/f, the smallest class) by pandas groupby."""
    mx, avg, kmin = 0.0, 0.0, 1 << 62
    for sub in combinations(qis, m):
        f = frame.groupby(list(sub), dropna=False, observed=True)[list(sub)[0]].transform("size").to_numpy()
        mx, avg, kmin = max(mx, float((1 / f).max())), max(avg, float((1 / f).mean())), min(kmin, int(f.min()))
    return mx, avg, kmin


@pytest.fixture(scope="module")
def adult(adult_df):
    return adult_df


def test_exact_design_equals_brute_force_over_every_subset(adult, tmp_path, adult_spec_path):
    spec = load_spec(adult_spec_path)
    a = assess(adult, spec, levels={"age": 2, "native-country": 1})
    k = known_qis(spec.quasi, 2)
    assert len(k.design) == 28  # C(8, 2): block = m measures every pair
    r = assess_known(adult, spec, None, a, k)
    mx, avg, kmin = brute(a.output, ADULT_QIS, 2)
    assert r["worst"]["prosecutor"]["max"] == pytest.approx(mx)
    assert r["worst"]["prosecutor"]["average"] == pytest.approx(avg)
    assert r["worst"]["k_min"] == kmin
    shares = [b["high_risk_share"] for b in r["blocks"]]
    assert shares == sorted(shares, reverse=True)  # the book's order: most high-risk records first


def test_larger_blocks_overestimate_but_never_exceed_all_qis(adult, adult_spec_path):
    spec = load_spec(adult_spec_path)
    a = assess(adult, spec, levels={"age": 3, "education": 2, "native-country": 2})
    exact = assess_known(adult, spec, None, a, known_qis(spec.quasi, 2))["worst"]["prosecutor"]
    k = known_qis(spec.quasi, 2, block=4)
    assert len(k.design) < 28 and len(k.design) >= k.design.lower_bound
    cover = assess_known(adult, spec, None, a, k)["worst"]["prosecutor"]
    for m in ("max", "average"):
        assert exact[m] - 1e-12 <= cover[m] <= a.summary["prosecutor"][m] + 1e-12


def test_assess_known_cli(tmp_path, adult_spec_path):
    out = tmp_path / "r.json"
    p = cli("assess", "--input", ADULT / "adult.csv", "--spec", adult_spec_path, "--levels", "age=2",
            "--known", "3", "--block", "4", "--report", out)
    assert p.returncode == 0, p.stderr
    k = json.loads(out.read_text())["known"]
    assert (k["m"], k["n"], k["block_size"]) == (3, 8, 4)
    assert k["design"]["blocks"] == len(k["blocks"]) >= k["design"]["schonheim_bound"] == 14
    assert k["design"]["all_t_subsets"] == 56
    covered = {frozenset(c) for b in k["blocks"] for c in combinations(b["qis"], 3)}
    assert len(covered) == 56  # every triple of QIs lies in a block
    assert k["threshold"]["overall_risk"] == max(b["prosecutor"]["strict_average"] for b in k["blocks"]) *\
        k["threshold"]["attacks"]["T3"]["pr_t"]


@pytest.mark.parametrize("args,msg", [
    (["--known", "9"], "--known 9 must lie in 1..8"),
    (["--known", "2", "--block", "1"], "--block 1 must lie in 2..8"),
    (["--block", "3"], "--block needs --known"),
    (["--known", "2", "--design-seconds", "-1"], "--design-seconds"),
])
def test_assess_known_bad_input_exits_2_with_one_line(adult, tmp_path, adult_spec_path, args, msg):
    out, small = tmp_path / "r.json", tmp_path / "small.csv"
    adult.head(300).to_csv(small, index=False)
    p = cli("assess", "--input", small, "--spec", adult_spec_path, "--report", out, *args)
    assert p.returncode == 2 and msg in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not out.exists()


def test_search_ola_known_meets_k_on_every_subset_with_less_loss(adult, tmp_path, adult_spec_path):
    out, rel = tmp_path / "r.json", tmp_path / "best.csv"
    p = cli("search", "--input", ADULT / "adult.csv", "--spec", adult_spec_path, "--method", "ola", "--k", "5",
            "--known", "2", "--top", "1", "--report", out, "--out", rel)
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    best = r["policies"][0]
    assert r["known"]["design"]["blocks"] == 28 and best["suppressed_records"] == 0
    assert r["best_reassessed"]["meets"] and r["best_reassessed"]["blocks"] == 28
    released = read_table(rel)
    assert brute(released, ADULT_QIS, 2)[2] >= 5  # every pair of QIs: classes of at least 5
    assert all(a["op"] != "suppress_records" for a in r["best_policy"]["steps"])
    # an adversary who knows every QI needs more generalization: the all-QI optimum loses more
    full = optimal_release(adult, load_spec(adult_spec_path), k=5, measure="max")
    assert best["information_loss"] < full.best["information_loss"]


def test_search_bps_known_risk_is_the_max_over_blocks(tmp_path, adult_spec_path):
    out = tmp_path / "r.json"
    p = cli("search", "--input", ADULT / "adult.csv", "--spec", adult_spec_path, "--method", "bps", "--known", "2",
            "--block", "3", "--threshold", "0.02", "--iterations", "3", "--report", out)
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    assert r["known"]["design"]["blocks"] == 11  # C(8, 3, 2) greedy meets the Schönheim bound
    assert r["policies"] and all(pol["reassessed_risk"] <= 0.02 + 1e-12 for pol in r["policies"])
    assert all(pol["risk"] == pytest.approx(pol["reassessed_risk"]) for pol in r["policies"])


@pytest.mark.parametrize("args,msg", [
    (["--method", "partition", "--k", "5", "--known", "2"], "--known applies to --method ola, bps, directed"),
    (["--method", "ola", "--k", "5", "--known", "2", "--max-suppression", "0.1"], "without suppression"),
])
def test_search_known_bad_input_exits_2(adult, tmp_path, adult_spec_path, args, msg):
    out, small = tmp_path / "r.json", tmp_path / "small.csv"
    adult.head(300).to_csv(small, index=False)
    p = cli("search", "--input", small, "--spec", adult_spec_path, "--report", out, *args)
    assert p.returncode == 2 and msg in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not out.exists()


CLAIMS = pd.DataFrame({
    "member_id": ["p1", "p1", "p2", "p2", "p3", "p3", "p4", "p5", "p5", "p6"],
    "sex": ["F", "F", "F", "F", "M", "M", "M", "M", "M", "F"],
    "birth_year": ["1950", "1950", "1950", "1950", "1960", "1960", "1960", "1960", "1960", "1950"],
    "dx": ["411", "250", "411", "401", "250", "401", "401", "250", "411", "250"],
    "los": ["2", "1", "2", "3", "1", "1", "1", "2", "2", "1"],
})
CLAIMS_SPEC = """[columns]
member_id = "direct"
sex = "quasi"
birth_year = "quasi"
dx = "quasi"
los = "quasi"
[release]
type = "public"
threshold = 0.5
[longitudinal]
person = "member_id"
level1 = ["sex", "birth_year"]
level2 = ["dx", "los"]
"""


def test_longitudinal_known_counts_persons(tmp_path):
    data, spec_path, out = tmp_path / "c.csv", tmp_path / "c.toml", tmp_path / "r.json"
    CLAIMS.to_csv(data, index=False)
    spec_path.write_text(CLAIMS_SPEC)
    p = cli("assess", "--input", data, "--spec", spec_path, "--known", "2", "--report", out)
    assert p.returncode == 0, p.stderr
    k = json.loads(out.read_text())["known"]
    # brute force: per pair of QIs, a person's class is their row class with the fewest distinct persons
    worst = 0.0
    for sub in combinations(["sex", "birth_year", "dx", "los"], 2):
        persons = CLAIMS.groupby(list(sub))["member_id"].transform("nunique")
        worst = max(worst, float((1 / persons.groupby(CLAIMS["member_id"]).min()).max()))
    assert k["worst"]["prosecutor"]["max"] == pytest.approx(worst)
    assert all(b["persons"] == 6 for b in k["blocks"])
    assert np.isclose(k["threshold"]["overall_risk"], worst)
