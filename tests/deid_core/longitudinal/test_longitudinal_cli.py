"""Longitudinal data from the command line: ``deid assess`` with ``[longitudinal]``, ``deid attack``,
``deid truncate``, ``deid codes`` and the ``atc`` builder (real ``python -m deid_core.cli`` subprocesses)."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from deid_testdata import REPO

CLAIMS = """member_id,sex,birth_year,dx,los,drug,dx_text
p1,F,1950,411.1,2,C01DA02,angina
p1,F,1950,411.1,2,C01DA02,angina
p1,F,1950,411.1,2,C01DA02,angina
p2,F,1950,250.0,1,A10BA02,diabetes
p2,F,1950,411.8,3,C01DA14,ischemia
p3,M,1960,250.0,1,A10BA02,diabetes
p3,M,1960,401.9,1,C09AA05,hypertension
p4,M,1960,401.9,1,C09AA05,hypertension
p4,M,1960,250.0,2,A10BA02,diabetes
p5,M,1960,401.9,1,C09AA02,hypertension
p6,F,1950,250.0,1,A10BA02,diabetes
"""

SPEC = """[columns]
member_id = "direct"
sex = "quasi"
birth_year = "quasi"
dx = "quasi"
los = "quasi"
drug = "quasi"
dx_text = "other"
[hierarchies]
dx = { builder = "icd" }
drug = { builder = "atc" }
birth_year = { builder = "interval", widths = [10, 20] }
[release]
type = "non-public"
threshold = 0.34
"""

LONGITUDINAL = """[longitudinal]
person = "member_id"
level1 = ["sex", "birth_year"]
level2 = ["dx", "los", "drug"]
adversary_power = 2
"""


def run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "deid_core.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=REPO)


def sha(p: Path) -> str:
    return hashlib.sha256(Path(p).read_bytes()).hexdigest()


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "claims.csv").write_text(CLAIMS)
    (tmp_path / "spec.toml").write_text(SPEC + LONGITUDINAL)
    (tmp_path / "rows.toml").write_text(SPEC)
    return {"claims": tmp_path / "claims.csv", "spec": tmp_path / "spec.toml", "rows": tmp_path / "rows.toml",
            "dir": tmp_path}


def test_assess_counts_persons_not_rows(files):
    d = files["dir"]
    before = sha(files["claims"])
    # row counting: p1's three identical claims are a "class of 3"; a warning says risk is understated
    p = run("assess", "--input", files["claims"], "--spec", files["rows"], "--report", d / "rows.json",
            "--levels", "dx=2,drug=1", "--per-record", d / "rows.csv")
    assert p.returncode == 0, p.stderr
    assert "member_id" in p.stderr and "understated" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    rows = json.loads((d / "rows.json").read_text())
    assert rows["warnings"] and "member_id" in rows["warnings"][0]
    assert pd.read_csv(d / "rows.csv")["class_size"].iloc[0] == 3
    # person counting: the same claims are one person, risk 1
    p = run("assess", "--input", files["claims"], "--spec", files["spec"], "--report", d / "p.json",
            "--levels", "dx=2,drug=1", "--per-record", d / "p.csv")
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    r = json.loads((d / "p.json").read_text())
    assert "warnings" not in r and "longitudinal" not in r
    assert (r["persons"], r["events"], r["records"]) == (6, 11, 11)
    assert r["prosecutor"]["max"] == 1.0 and r["k_min"] == 1
    per = pd.read_csv(d / "p.csv", dtype={"member_id": str})
    assert list(per.columns[:2]) == ["member_id", "class_size"] and len(per) == 6
    assert per.set_index("member_id").loc["p1", "class_size"] == 1
    # p5's claim (M, 1960, 401, 1, C09) is shared by p3 and p4: a class of 3 persons
    assert per.set_index("member_id").loc["p5", "class_size"] == 3
    assert rows["prosecutor"]["max"] == 1.0 and r["prosecutor"]["average"] > rows["prosecutor"]["average"]
    assert sha(files["claims"]) == before


def test_assess_attack_object_exact_agrees_with_monte_carlo(files):
    d = files["dir"]
    p = run("assess", "--input", files["claims"], "--spec", files["spec"], "--report", d / "mc.json", "--attack",
            "--iterations", "4000", "--seed", "3")
    assert p.returncode == 0, p.stderr
    mc = json.loads((d / "mc.json").read_text())["longitudinal"]
    assert set(mc) == {"adversary_power", "attack"}
    assert {"average", "high_risk_persons", "ci95"} <= set(mc["attack"])
    dist = mc["adversary_power"]["by_qi"]
    assert set(dist) == {"dx", "los", "drug"} and sum(dist["dx"]["distribution"].values()) == 6
    p = run("assess", "--input", files["claims"], "--spec", files["spec"], "--report", d / "ex.json", "--attack",
            "--exact")
    assert p.returncode == 0, p.stderr
    ex = json.loads((d / "ex.json").read_text())["longitudinal"]["attack"]
    lo, hi = mc["attack"]["ci95"]
    assert lo <= ex["average"] <= hi and ex["exact"] is True


def test_attack_command(files):
    d = files["dir"]
    p = run("attack", "--input", files["claims"], "--spec", files["spec"], "--iterations", "3000",
            "--report", d / "a.json")
    assert p.returncode == 0, p.stderr
    a = json.loads((d / "a.json").read_text())
    for key in ("average_risk", "high_risk_proportion", "threshold", "persons", "ci95", "iterations", "exact",
                "adversary_power"):
        assert key in a, key
    assert a["persons"] == 6 and a["threshold"] == 0.34 and a["iterations"] == 3000
    again = d / "b.json"
    assert run("attack", "--input", files["claims"], "--spec", files["spec"], "--iterations", "3000",
               "--report", again).returncode == 0
    assert json.loads(again.read_text())["average_risk"] == a["average_risk"]  # seeded
    # a released table generalized by assess; the adversary knows original values (--original)
    released = d / "released.csv"
    p = run("assess", "--input", files["claims"], "--spec", files["rows"], "--report", d / "g.json",
            "--levels", "dx=3,drug=4,birth_year=2", "--out", released)
    assert p.returncode == 0, p.stderr
    rel = pd.read_csv(released, dtype=str)
    rel.insert(0, "member_id", pd.read_csv(files["claims"], dtype=str)["member_id"])
    rel.to_csv(released, index=False)
    p = run("attack", "--input", released, "--spec", files["spec"], "--original", files["claims"], "--exact",
            "--power", "1", "--power-model", "fixed", "--report", d / "g_attack.json")
    assert p.returncode == 0, p.stderr
    g = json.loads((d / "g_attack.json").read_text())
    assert g["adversary_power"]["fixed"] is True and g["adversary_power"]["p_max"] == 1
    p = run("attack", "--input", files["claims"], "--spec", files["spec"], "--exact", "--power", "1",
            "--power-model", "fixed", "--report", d / "raw_attack.json")
    raw = json.loads((d / "raw_attack.json").read_text())
    assert g["average_risk"] < raw["average_risk"]  # generalizing lowered the risk


def test_truncate_book_table_5_7(tmp_path):
    """El Emam & Arbuckle, ch. 5, Table 5-7: bins 100, 50, 40, 30, 7, 4, 11 with k = 10 -> [26-30] moves down."""
    sizes = [100, 50, 40, 30, 7, 4, 11]
    rows, n = ["pid,sex,dx"], 0
    for b, size in enumerate(sizes):
        for _ in range(size):
            n += 1
            rows += [f"q{n},F,d{(n + j) % 7}" for j in range(b * 5 + 1)]
    (tmp_path / "c.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "s.toml").write_text('[columns]\npid = "direct"\nsex = "quasi"\ndx = "quasi"\n'
                                     '[longitudinal]\nperson = "pid"\nlevel1 = ["sex"]\nlevel2 = ["dx"]\n')
    p = run("truncate", "--input", tmp_path / "c.csv", "--spec", tmp_path / "s.toml", "--k", "10",
            "--out", tmp_path / "t.csv", "--report", tmp_path / "t.json")
    assert p.returncode == 0, p.stderr
    r = json.loads((tmp_path / "t.json").read_text())
    assert list(r["bins_before"].values()) == sizes
    assert r["bins_after"]["[26-30]"] == 0 and r["bins_after"]["[21-25]"] == 11 and r["removed_persons"] == 4
    kept = pd.read_csv(tmp_path / "t.csv")
    assert len(kept) == r["claims"] - r["removed_claims"] and kept["pid"].nunique() == sum(sizes)
    p = run("truncate", "--input", tmp_path / "c.csv", "--spec", tmp_path / "s.toml", "--method", "percentile",
            "--percentile", "90", "--out", tmp_path / "p.csv", "--report", tmp_path / "p.json")
    assert p.returncode == 0, p.stderr
    assert pd.read_csv(tmp_path / "p.csv").groupby("pid").size().max() == json.loads(
        (tmp_path / "p.json").read_text())["cutoff"]


def test_codes_suppress_and_shuffle(files):
    d = files["dir"]
    p = run("codes", "--input", files["claims"], "--spec", files["spec"], "--suppress", "--code", "dx", "--k", "2",
            "--connected", "dx_text", "--out", d / "s.csv", "--report", d / "s.json")
    assert p.returncode == 0, p.stderr
    out = pd.read_csv(d / "s.csv", dtype=str, keep_default_na=False)
    # in class (F, 1950): 411.1 is held by p1 only and 411.8 by p2 only -> suppressed with their descriptions
    gone = out["dx"] == "[suppressed]"
    assert gone.sum() == 4 and (out.loc[gone, "dx_text"] == "[suppressed]").all()
    assert set(out.loc[gone, "member_id"]) == {"p1", "p2"}
    rep = json.loads((d / "s.json").read_text())
    assert (rep["suppressed_rows"], rep["suppressed_persons"], rep["k"]) == (4, 2, 2)
    # shuffle within (sex, birth year, 3-character category): each group keeps its multiset; text moves along
    orig = pd.read_csv(files["claims"], dtype=str)
    changed = False
    for seed in range(6):
        p = run("codes", "--input", files["claims"], "--spec", files["spec"], "--shuffle", "--code", "dx",
                "--group-level", "2", "--connected", "dx_text", "--seed", seed, "--out", d / "h.csv")
        assert p.returncode == 0, p.stderr
        sh = pd.read_csv(d / "h.csv", dtype=str)
        key = [orig["sex"], orig["birth_year"], orig["dx"].str[:3]]
        for (_, a), (_, b) in zip(orig.groupby(key)["dx"], sh.groupby(key)["dx"]):
            assert sorted(a) == sorted(b)
        assert (sh.groupby("dx")["dx_text"].nunique() == 1).all()  # descriptions moved with their codes
        changed |= not sh["dx"].equals(orig["dx"])
        if changed:
            break
    assert changed


def test_atc_builder_in_spec(files):
    d = files["dir"]
    p = run("assess", "--input", files["claims"], "--spec", files["spec"], "--levels", "drug=3",
            "--report", d / "r.json", "--out", d / "o.csv")
    assert p.returncode == 0, p.stderr
    out = pd.read_csv(d / "o.csv", dtype=str)
    assert sorted(out["drug"].unique()) == ["A10", "C01", "C09"]  # ATC level 3: therapeutic subgroup
    bad = d / "bad.csv"
    bad.write_text(CLAIMS.replace("C09AA02", "not-atc"))
    p = run("assess", "--input", bad, "--spec", files["spec"], "--report", d / "x.json")
    assert p.returncode == 2 and "not an ATC code" in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("case", ["no_person", "no_level2", "power0", "iterations0", "level1_varies",
                                  "no_section", "original_misaligned"])
def test_bad_input_exits_2_with_one_line_and_no_output(files, case):
    d = files["dir"]
    data, spec, extra = files["claims"], files["spec"], []
    if case == "no_person":
        data = d / "np.csv"
        pd.read_csv(files["claims"], dtype=str).drop(columns=["member_id"]).to_csv(data, index=False)
        spec = d / "np.toml"
        spec.write_text((SPEC + LONGITUDINAL).replace('member_id = "direct"\n', ""))
    elif case == "no_level2":
        data = d / "nl.csv"
        pd.read_csv(files["claims"], dtype=str).drop(columns=["los"]).to_csv(data, index=False)
    elif case == "power0":
        extra = ["--power", "0"]
    elif case == "iterations0":
        extra = ["--iterations", "0"]
    elif case == "level1_varies":
        data = d / "lv.csv"
        data.write_text(CLAIMS.replace("p1,F,1950,411.1,2,C01DA02,angina\np1,F,1950",
                                       "p1,F,1950,411.1,2,C01DA02,angina\np1,F,1951"))
    elif case == "no_section":
        spec = files["rows"]
    elif case == "original_misaligned":
        extra = ["--original", d / "short.csv"]
        pd.read_csv(files["claims"], dtype=str).head(5).to_csv(d / "short.csv", index=False)
    before = sha(data)
    every = {"attack": ["attack", "--input", data, "--spec", spec, *extra, "--report", d / "o.json"],
             "assess": ["assess", "--input", data, "--spec", spec, "--attack", *extra, "--report", d / "o.json"],
             "truncate": ["truncate", "--input", data, "--spec", spec, "--k", "2", "--out", d / "o.csv",
                          "--report", d / "o.json"],
             "codes": ["codes", "--input", data, "--spec", spec, "--suppress", "--code", "dx", "--out", d / "o.csv"]}
    which = {"no_person": ("attack", "codes"), "no_level2": ("truncate", "assess"),
             "level1_varies": ("attack", "truncate"), "no_section": ("codes", "assess"),
             "power0": ("attack", "assess"), "iterations0": ("attack", "assess"), "original_misaligned": ("attack",)}
    for cmd in (every[c] for c in which[case]):
        p = run(*cmd)
        assert p.returncode == 2, (cmd[0], p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in p.stderr, (cmd[0], p.stderr)
        assert not (d / "o.json").exists() and not (d / "o.csv").exists(), cmd[0]
    assert sha(data) == before
    words = {"no_person": "member_id", "no_level2": "'los'", "power0": "--power", "iterations0": "--iterations",
             "level1_varies": "'p1'", "no_section": "[longitudinal]", "original_misaligned": "same rows"}
    assert words[case] in p.stderr


def test_report_longitudinal_section(files):
    d = files["dir"]
    assert run("truncate", "--input", files["claims"], "--spec", files["spec"], "--k", "3", "--width", "1",
               "--out", d / "t.csv", "--report", d / "t.json").returncode == 0
    assert run("codes", "--input", d / "t.csv", "--spec", files["spec"], "--shuffle", "--code", "dx",
               "--group-level", "2", "--out", d / "s.csv", "--report", d / "s.json").returncode == 0
    p = run("assess", "--input", d / "s.csv", "--spec", files["spec"], "--report", d / "r.json", "--html", d / "r.html",
            "--attack", "--iterations", "500", "--prior-report", d / "t.json", "--prior-report", d / "s.json")
    assert p.returncode == 0, p.stderr
    lg = json.loads((d / "r.json").read_text())["report"]["longitudinal"]
    assert (lg["persons"], lg["events"], lg["events_per_person"]["max"]) == (6, 10, 2)
    assert lg["risk_persons"]["average"] > lg["risk_rows"]["average"]
    assert [o.get("operation", "truncate") for o in lg["operations"]] == ["truncate", "shuffle"]
    page = (d / "r.html").read_text()
    assert "Longitudinal data: one person, many rows" in page and "10 events (rows) of 6 persons" in page
    assert "Persons by power" in page and "1 of 11 claims (rows) removed" in page and "shuffled (deid codes) among the persons" in page
    assert "at least k = 3 persons" in page  # the threshold is stated in persons
    bad = d / "bad.json"
    bad.write_text("{}")
    p = run("assess", "--input", d / "s.csv", "--spec", files["spec"], "--report", d / "x.json", "--prior-report", bad)
    assert p.returncode == 2 and "not a deid truncate or deid codes report" in p.stderr and not (d / "x.json").exists()


def test_attack_on_a_release_with_suppressed_records(files):
    """Suppressed rows release nothing: assess --suppress --attack and deid attack on its output agree."""
    d = files["dir"]
    # everything but los at the top: p1 (los 2, with p4) and p2 (los 3) stand out; p3, p5, p6 share los 1
    p = run("assess", "--input", files["claims"], "--spec", files["spec"], "--levels",
            "sex=1,birth_year=3,dx=4,drug=5", "--suppress", "--attack", "--exact", "--report", d / "s.json",
            "--out", d / "sup.csv", "--force")  # 7 of 11 records suppressed, on purpose
    assert p.returncode == 0, p.stderr
    inline = json.loads((d / "s.json").read_text())["longitudinal"]["attack"]
    rel = pd.read_csv(d / "sup.csv", dtype=str, keep_default_na=False)
    assert (rel["dx"] == "[suppressed]").any()
    rel.insert(0, "member_id", pd.read_csv(files["claims"], dtype=str)["member_id"])
    rel.to_csv(d / "sup.csv", index=False)
    p = run("attack", "--input", d / "sup.csv", "--spec", files["spec"], "--original", files["claims"], "--exact",
            "--report", d / "a.json")
    assert p.returncode == 0, p.stderr
    a = json.loads((d / "a.json").read_text())
    assert a["average_risk"] == pytest.approx(inline["average"]) and a["persons"] == inline["persons"] == 3


def test_assess_suppress_counts_persons_and_apply_repeats_it(files):
    """--suppress with [longitudinal]: every claim of the persons in a class of fewer than k = 3 persons goes,
    reported as persons and records; the saved policy does the same in deid apply."""
    d = files["dir"]
    before = sha(files["claims"])
    p = run("assess", "--input", files["claims"], "--spec", files["spec"], "--levels",
            "sex=1,birth_year=3,dx=4,drug=5", "--suppress", "--report", d / "s.json", "--out", d / "s.csv",
            "--policy-out", d / "policy.json", "--html", d / "s.html", "--force")  # 7 of 11 records, on purpose
    assert p.returncode == 0, p.stderr
    assert "7 of 11 records (63.6%)" in p.stderr  # said, even when forced
    r = json.loads((d / "s.json").read_text())
    assert (r["suppressed_persons"], r["suppressed_records"], r["persons"], r["k_min"]) == (3, 7, 6, 3)
    tr = r["report"]["steps"]["4_transformation"]
    assert (tr["persons_suppressed"], tr["records_suppressed"], tr["suppression_k"]) == (3, 7, 3)
    assert "here 3 persons, 7 records" in (d / "s.html").read_text()
    released = pd.read_csv(d / "s.csv", dtype=str, keep_default_na=False)
    claims = pd.read_csv(files["claims"], dtype=str)
    gone = released["los"].eq("[suppressed]").to_numpy()
    assert sorted(claims.loc[gone, "member_id"].unique()) == ["p1", "p2", "p4"] and "member_id" not in released
    p = run("apply", "--input", files["claims"], "--policy", d / "policy.json", "--out", d / "again.csv",
            "--report", d / "apply.json")
    assert p.returncode == 2 and "7 of 11 records" in p.stderr and not (d / "again.csv").exists()
    p = run("apply", "--input", files["claims"], "--policy", d / "policy.json", "--out", d / "again.csv",
            "--report", d / "apply.json", "--force")
    assert p.returncode == 0, p.stderr
    assert (d / "again.csv").read_text() == (d / "s.csv").read_text()
    rep = json.loads((d / "apply.json").read_text())
    assert (rep["suppressed_persons"], rep["suppressed_records"]) == (3, 7)
    # counted in rows, p1's three identical claims make los 2 a class of 4: only p2's los-3 claim goes
    p = run("assess", "--input", files["claims"], "--spec", files["rows"], "--levels",
            "sex=1,birth_year=3,dx=4,drug=5", "--suppress", "--report", d / "rows.json")
    rows = json.loads((d / "rows.json").read_text())
    assert rows["suppressed_records"] == 1 and "suppressed_persons" not in rows
    assert sha(files["claims"]) == before


def test_assess_complete_knowledge(files, tmp_path):
    """Complete knowledge (ch. 4): persons flattened to all their events. Two persons with the same events
    in another order are a class of 2; with one more claim a person stands alone."""
    data = tmp_path / "ck.csv"
    data.write_text("member_id,sex,birth_year,dx,los,drug,dx_text\n"
                    "a,F,1950,250.0,1,A10BA02,x\na,F,1950,401.9,2,A10BA02,x\n"
                    "b,F,1950,401.9,2,A10BA02,x\nb,F,1950,250.0,1,A10BA02,x\n"
                    "c,F,1950,250.0,1,A10BA02,x\nc,F,1950,401.9,2,A10BA02,x\nc,F,1950,401.9,2,A10BA02,x\n")
    for variant in ("approximate", "exact"):
        p = run("assess", "--input", data, "--spec", files["spec"], "--complete-knowledge", variant,
                "--report", tmp_path / "ck.json")
        assert p.returncode == 0, p.stderr
        ck = json.loads((tmp_path / "ck.json").read_text())["complete_knowledge"]
        assert (ck["variant"], ck["persons"], ck["events"], ck["k"]) == (variant, 3, 7, 1)
        assert ck["average_risk"] == pytest.approx((0.5 + 0.5 + 1) / 3)


def test_apply_dates_timeline_policy(tmp_path):
    """A dates_intervals step with birth, death, two timeline columns and a connected date, through deid apply:
    every person's dates keep their order, the log date its offset; a death before a service exits 2."""
    data = tmp_path / "visits.csv"
    data.write_text("pid,dob,admit,discharge,logged,dod\n"
                    "a,1950-03-02,2001-04-08,2001-04-10,2001-04-08,\n"
                    "a,1950-03-02,2002-05-07,2002-05-07,2002-05-08,\n"
                    "b,2012-01-15,2012-01-18,2012-01-20,2012-01-19,2012-03-01\n"
                    "b,2012-01-15,2012-02-01,2012-02-29,2012-02-01,2012-03-01\n")
    policy = {"format": "deid_core.policy", "version": 1, "steps": [
        {"op": "dates_intervals", "columns": ["admit", "discharge"], "group": "pid", "birth": "dob", "death": "dod",
         "connected": {"logged": "admit"}, "anchor": "month", "width": 7, "seed": 4},
        {"op": "drop", "columns": ["pid"]}]}
    (tmp_path / "policy.json").write_text(json.dumps(policy))
    before = sha(data)
    p = run("apply", "--input", data, "--policy", tmp_path / "policy.json", "--out", tmp_path / "out.csv",
            "--report", tmp_path / "r.json")
    assert p.returncode == 0, p.stderr
    src, out = pd.read_csv(data, dtype=str), pd.read_csv(tmp_path / "out.csv", dtype=str)
    assert "pid" not in out.columns and out["dod"].isna().tolist() == [True, True, False, False]
    fates = json.loads((tmp_path / "r.json").read_text())["column_fates"]
    assert {c: fates[c] for c in ("dob", "admit", "discharge", "logged", "dod")} == dict.fromkeys(
        ("dob", "admit", "discharge", "logged", "dod"), "quasi")
    d = {c: pd.to_datetime(out[c]) for c in out.columns}
    s = {c: pd.to_datetime(src[c]) for c in out.columns}
    assert (d["dob"] <= d["admit"]).all() and (d["admit"] <= d["discharge"]).all()
    assert d["discharge"][0] < d["admit"][1] and d["discharge"][2] < d["admit"][3]  # order across visits kept
    assert (d["dod"][2:] >= d["discharge"][2:]).all()
    assert ((d["logged"] - d["admit"]) == (s["logged"] - s["admit"])).all()
    assert d["discharge"][1] == d["admit"][1]  # same-day discharge stays the same day
    assert sha(data) == before
    (tmp_path / "bad.csv").write_text(data.read_text().replace("2012-03-01", "2012-02-10"))
    p = run("apply", "--input", tmp_path / "bad.csv", "--policy", tmp_path / "policy.json", "--out",
            tmp_path / "bad_out.csv")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and not (tmp_path / "bad_out.csv").exists()
    assert "dod 2012-02-10 is before discharge 2012-02-29" in p.stderr
