"""The ``deid`` CLI: real subprocesses of ``python -m deid_core.cli`` and ``main``; exit 2 on bad input."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from deid_core.cli import main
from deid_testdata import ADULT, LIU2016_DATA, LIU2016_POPULATION, adult_spec_toml, run, sha


ARX_LEVELS = "sex=1,age=2,race=1,marital-status=1,education=3,native-country=2,workclass=2,occupation=1"


def test_assess_adult_subprocess(tmp_path):
    spec = tmp_path / "adult.toml"
    spec.write_text(adult_spec_toml(threshold=0.2, release="public"))
    data = ADULT / "adult.csv"
    before = sha(data)
    out, html, policy, released = tmp_path / "r.json", tmp_path / "r.html", tmp_path / "p.json", tmp_path / "o.csv"
    p = run("assess", "--input", str(data), "--spec", str(spec), "--report", str(out), "--html", str(html),
            "--levels", ARX_LEVELS, "--policy-out", str(policy), "--out", str(released))
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    assert r["records"] == 30162 and r["k_min"] == 5 and r["equivalence_classes"] == 48
    assert r["prosecutor"]["max"] == 0.2 and r["threshold"]["meets_threshold"] is True  # T4, max risk 1/5 vs 0.2
    assert r["before"]["k_min"] == 1 and r["before"]["equivalence_classes"] == 18109
    assert r["information_loss"]["non_uniform_entropy"]["bits"] == pytest.approx(382871.41, abs=0.01)
    steps = r["report"]["steps"]
    assert list(steps) == ["1_identifiers", "2_threshold", "3_attacks", "4_transformation", "5_evidence"]
    assert steps["5_evidence"]["reassess_between"][0] < steps["5_evidence"]["reassess_between"][1]
    page = html.read_text()
    assert page.count("data:image/png;base64,") == 2 and "5. Re-assessment of the release" in page
    assert sha(data) == before  # input never modified
    # the saved policy re-applies to another batch (here: the first 1,000 rows) with the same result
    batch = tmp_path / "batch.csv"
    pd.read_csv(data, sep=";", dtype=str, keep_default_na=False).head(1000).to_csv(batch, index=False)
    p2 = run("apply", "--input", str(batch), "--policy", str(policy), "--out", str(tmp_path / "b.csv"))
    assert p2.returncode == 0, p2.stderr
    full = pd.read_csv(released, dtype=str, keep_default_na=False)
    part = pd.read_csv(tmp_path / "b.csv", dtype=str, keep_default_na=False)
    pd.testing.assert_frame_equal(part, full.head(1000))


def _liu2016_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    data, pop, spec = tmp_path / "d.csv", tmp_path / "pop.csv", tmp_path / "s.toml"
    LIU2016_DATA.to_csv(data, index=False, sep=";")
    LIU2016_POPULATION.to_csv(pop, index=False)
    spec.write_text('[columns]\nzip = "quasi"\ndob = "quasi"\n[types]\nzip = "zip"\ndob = "dob"\n'
                    '[hierarchies]\nzip = { builder = "prefix" }\ndob = { builder = "dates" }\n'
                    '[release]\ntype = "non-public"\nthreshold = 0.1\nprevalence = 0.027\npr_attempt = 0.3\n')
    return data, pop, spec


def test_assess_with_population_reports_all_measures(tmp_path):
    data, pop, spec = _liu2016_files(tmp_path)
    out = tmp_path / "r.json"
    assert main(["assess", "--input", str(data), "--spec", str(spec), "--population", str(pop),
                 "--report", str(out), "--levels", "zip=2,dob=4"]) == 0
    r = json.loads(out.read_text())
    assert r["instance_disclosure"]["R"] == pytest.approx(0.75) and r["instance_disclosure"]["Q"] == pytest.approx(0.25)
    assert r["journalist"] == {"max": pytest.approx(1 / 3), "average": pytest.approx(0.25)}
    assert r["population_risk"]["sum"] == pytest.approx(1.5) and r["marketer"] == pytest.approx(0.25)
    assert set(r["threshold"]["attacks"]) == {"T1", "T2", "T3"}
    assert r["threshold"]["attacks"]["T2"]["pr_t"] == pytest.approx(0.8716, abs=5e-5)


def test_missing_values_match_any_and_per_record_output(tmp_path):
    data, spec = tmp_path / "d.csv", tmp_path / "s.toml"
    data.write_text("sex,zip\nF,02139\nF,\nM,02139\n,\n")
    spec.write_text('[columns]\nsex = "quasi"\nzip = "quasi"\n[risk]\nmissing = "match_any"\n')
    out, per = tmp_path / "r.json", tmp_path / "per.csv"
    assert main(["assess", "--input", str(data), "--spec", str(spec), "--report", str(out),
                 "--per-record", str(per)]) == 0
    r = json.loads(out.read_text())
    assert r["fully_missing_records"] == 1 and r["records"] == 4
    # (F,02139) matches itself and (F,-); (F,-) matches both F rows; (M,02139) only itself
    rows = pd.read_csv(per)
    assert rows["class_size"].tolist()[:3] == [2, 2, 1] and pd.isna(rows["class_size"].iloc[3])
    assert r["prosecutor"]["max"] == 1.0 and r["prosecutor"]["average"] == pytest.approx((0.5 + 0.5 + 1) / 3)
    spec.write_text('[columns]\nsex = "quasi"\nzip = "quasi"\n')  # own_class: (F,-) is its own class
    assert main(["assess", "--input", str(data), "--spec", str(spec), "--report", str(out)]) == 0
    assert json.loads(out.read_text())["equivalence_classes"] == 3


def test_safe_harbor_cli(tmp_path):
    data, _, spec = _liu2016_files(tmp_path)
    zp = tmp_path / "zp.csv"
    zp.write_text("zip,population\n00101,25000\n00202,100\n")
    out, rep = tmp_path / "sh.csv", tmp_path / "sh.json"
    assert main(["safe-harbor", "--input", str(data), "--spec", str(spec), "--zip-population", str(zp),
                 "--out", str(out), "--report", str(rep), "--reference-year", "2000"]) == 0
    df = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert df["zip"].tolist() == ["001"] * 3 + ["000"] * 3
    assert df["dob"].tolist() == ["1927", "1927", "1927", "1935", "1935", "1935"]  # aged < 90 in 2000
    assert json.loads(rep.read_text())["restricted_zip3"] == ["002"]


BAD = [
    ("unknown column", '[columns]\nnope = "quasi"\n', None, "unknown column 'nope'"),
    ("threshold zero", '[columns]\nzip = "quasi"\n[release]\nthreshold = 0\n', None, "outside (0, 1]"),
    ("threshold above one", '[columns]\nzip = "quasi"\n[release]\nthreshold = 1.5\n', None, "outside (0, 1]"),
    ("value missing from hierarchy", '[columns]\nzip = "quasi"\n[hierarchies]\nzip = { csv = "h.csv" }\n', None,
     "value '00202' is missing from its hierarchy"),
    ("malformed population (no count)", '[columns]\nzip = "quasi"\n', "zip,n\n00101,3\n", "missing column(s) count"),
    ("malformed population (bad count)", '[columns]\nzip = "quasi"\n', "zip,count\n00101,many\n", "count 'many'"),
]


@pytest.mark.parametrize("name,spec_text,pop_text,message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, name, spec_text, pop_text, message):
    data, _, _ = _liu2016_files(tmp_path)
    (tmp_path / "h.csv").write_text("00101;001**;*\n")
    spec = tmp_path / "bad.toml"
    spec.write_text(spec_text)
    out = tmp_path / "r.json"
    argv = ["assess", "--input", str(data), "--spec", str(spec), "--report", str(out)]
    if pop_text is not None:
        (tmp_path / "p.csv").write_text(pop_text)
        argv += ["--population", str(tmp_path / "p.csv")]
    before = sha(data)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err
    assert not out.exists() and sha(data) == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith((".tmp", ".partial"))]


def test_unreadable_file_and_usage_errors_subprocess(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('[columns]\na = "quasi"\n')
    p = run("assess", "--input", str(tmp_path / "missing.csv"), "--spec", str(spec),
            "--report", str(tmp_path / "r.json"))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert "cannot read" in p.stderr and not (tmp_path / "r.json").exists()
    p = run("apply", "--input", str(spec))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "required" in p.stderr


def test_output_may_not_overwrite_input(tmp_path, capsys):
    data, _, spec = _liu2016_files(tmp_path)
    before = sha(data)
    assert main(["safe-harbor", "--input", str(data), "--spec", str(spec), "--out", str(data)]) == 2
    assert "overwrite" in capsys.readouterr().err and sha(data) == before
