"""Subsampling (El Emam & Arbuckle, ch. 7, "The Subsampling Limbo"): the book's sizes, samples by person,
the journalist risk against the full data, the fraction search, and ``deid subsample`` (real
``python -m deid_core.cli`` subprocesses)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from deid_core.errors import DeidInputError
from deid_core.io import read_table
from deid_core.subsample import find_fraction, prepare, sample_size
from deid_core.spec import Spec, parse_spec
from deid_testdata import ADULT_QIS

from deid_testdata import REPO


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "deid_core.cli", "subsample", *map(str, args)], capture_output=True,
                          text=True, env=env, cwd=REPO)


def test_book_sample_sizes_round_down():
    """BORN: 919,710 records; 30 % -> 275,913 and 35 % -> 321,898 (= ⌊321,898.5⌋) as printed."""
    assert sample_size(919_710, 0.30) == 275_913
    assert sample_size(919_710, 0.35) == 321_898
    assert sample_size(10, 0.29) == 2        # 2.9 -> 2
    assert sample_size(100, 0.29) == 29      # 0.29 is read as 29/100, not the binary 0.28999…
    assert sample_size(5, 0.01) == 1         # at least one unit
    assert sample_size(7, 1.0) == 7
    for bad in (0, -0.1, 1.5, float("nan")):
        with pytest.raises(DeidInputError):
            sample_size(10, bad)


def spec_of(qis, person: str | None = None, level1=()) -> Spec:
    cols = {q: "quasi" for q in qis}
    raw = {"columns": cols, "release": {"type": "non-public", "threshold": 0.1}}
    if person:
        cols[person] = "direct"
        raw["longitudinal"] = {"person": person, "level1": list(level1), "level2": [q for q in qis if q not in level1]}
    return parse_spec(raw)


def test_journalist_risk_against_the_full_data_by_hand(adult_df):
    spec = load_spec_adult()
    sub = prepare(adult_df, spec)
    rows = sub.draw(0.2, seed=7)
    assert len(rows) == sample_size(len(adult_df), 0.2) and (np.diff(rows) > 0).all()
    s = sub.measure(rows)
    F = adult_df.groupby(ADULT_QIS, observed=True)[ADULT_QIS[0]].transform("size").to_numpy()[rows]
    f = adult_df.iloc[rows].groupby(ADULT_QIS, observed=True)[ADULT_QIS[0]].transform("size").to_numpy()
    assert s["journalist"]["max"] == pytest.approx((1 / F).max())
    assert s["journalist"]["average"] == pytest.approx((1 / F).mean())
    assert s["prosecutor"]["average"] == pytest.approx((1 / f).mean())
    classes = len(adult_df.iloc[rows].drop_duplicates(ADULT_QIS))
    assert s["journalist"]["average_over_population"] == pytest.approx(classes / len(adult_df))


def load_spec_adult() -> Spec:
    return spec_of(ADULT_QIS)


def test_by_person_keeps_every_row_of_a_sampled_person():
    df = pd.DataFrame({"pid": ["a", "a", "a", "b", "c", "c", "d", "e", "e", "f"],
                       "sex": list("FFFMFFMMMF"), "dx": list("1121331212")})
    sub = prepare(df, spec_of(["sex", "dx"], person="pid", level1=["sex"]))
    assert sub.units == "persons" and sub.n_units == 6
    rows = sub.draw(0.5, seed=3)
    picked = set(df["pid"].iloc[rows])
    assert len(picked) == 3
    assert sorted(rows.tolist()) == sorted(np.flatnonzero(df["pid"].isin(picked)).tolist())
    s = sub.measure(rows)
    assert (s["persons"], s["events"]) == (3, len(rows))
    # draws are nested across fractions: a larger fraction adds persons
    assert picked <= set(df["pid"].iloc[sub.draw(0.84, seed=3)])


values = st.sampled_from(["a", "b", "c"])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), values, values), min_size=1, max_size=40),
       st.floats(0.05, 1.0), st.integers(0, 10**6), st.booleans())
def test_subsample_journalist_risk_never_exceeds_full_prosecutor_risk(rows, fraction, seed, by_person):
    df = pd.DataFrame(rows, columns=["pid", "x", "y"]).astype({"pid": str})
    if by_person:  # x is the person's level-1 value: fixed per person
        df["x"] = df.groupby("pid")["x"].transform("first")
        sub = prepare(df, spec_of(["x", "y"], person="pid", level1=["x"]))
    else:
        sub = prepare(df, spec_of(["x", "y"]))
    s = sub.measure(sub.draw(fraction, seed))
    assert s["journalist"]["max"] <= sub.full["prosecutor"]["max"] + 1e-12
    if not by_person:  # Σ 1/f over the sampled records = the sample's classes ≤ the full data's
        assert s["journalist"]["average_over_population"] <= sub.full["prosecutor"]["average"] + 1e-12


def test_person_average_can_exceed_the_full_data():
    """A has a claim in class X and one in Y, B only in X, C only in Y: every person's smallest class holds
    2 persons (average 1/2); a sample of B and C leaves both unique: (1/3)(1 + 1) = 2/3."""
    df = pd.DataFrame({"pid": ["A", "A", "B", "C"], "dx": ["X", "Y", "X", "Y"]})
    sub = prepare(df, spec_of(["dx"], person="pid"))
    assert sub.full["prosecutor"]["average"] == pytest.approx(0.5)
    s = sub.measure(np.array([2, 3]))
    assert s["journalist"]["average_over_population"] == pytest.approx(2 / 3)
    assert s["journalist"]["max"] == pytest.approx(0.5) and sub.full["prosecutor"]["max"] == pytest.approx(0.5)


def test_find_fraction_reports_the_distribution_and_the_boundary(adult_df):
    sub = prepare(adult_df, load_spec_adult())
    r = find_fraction(sub, 0.115, "average", draws=15, seed=1, step=0.05)
    assert r["fraction"] is not None and 0 < r["fraction"] < 1
    probes = {p["fraction"]: p for p in r["probes"]}
    best = probes[r["fraction"]]
    assert best["meets"] and best["quantile_risk"] <= 0.115 * 1.015
    above = round(r["fraction"] + 0.05, 10)
    assert above in probes and not probes[above]["meets"]  # bisection probed the next grid point
    for p in r["probes"]:
        assert p["p5"] <= p["median"] <= p["p95"] and 0 <= p["share_meeting"] <= 1
        assert p["units"] == sample_size(sub.n_units, p["fraction"])
    assert probes[1.0]["mean"] == pytest.approx(sub.full["prosecutor"]["average"])  # all of the data


@pytest.fixture
def adult_small(adult_df, tmp_path) -> Path:
    p = tmp_path / "adult_small.csv"
    adult_df.head(4000).to_csv(p, index=False)
    return p


def test_cli_fraction_writes_the_sample_and_report(adult_small, adult_spec_path, tmp_path):
    out, rep = tmp_path / "s.csv", tmp_path / "r.json"
    p = cli("--input", adult_small, "--spec", adult_spec_path, "--fraction", "0.3", "--seed", "5", "--out", out,
            "--report", rep)
    assert p.returncode == 0, p.stderr
    assert "fewer than 3000" in p.stderr  # 1,200 records: the power warning
    src, sample = read_table(adult_small), read_table(out)
    assert list(sample.columns) == list(src.columns) and len(sample) == 1200
    r = json.loads(rep.read_text())
    assert (r["units"], r["population_units"], r["sample_units"], r["fraction"]) == ("records", 4000, 1200, 0.3)
    assert r["measure"] == "journalist.average_over_population"  # non-public release: average
    assert r["risk"] == r["sample"]["journalist"]["average_over_population"]
    assert r["sample"]["journalist"]["max"] <= r["full"]["prosecutor"]["max"]
    # the same seed draws the same sample (draw 0)
    out2 = tmp_path / "s2.csv"
    assert cli("--input", adult_small, "--spec", adult_spec_path, "--fraction", "0.3", "--seed", "5",
               "--out", out2).returncode == 0
    assert out.read_bytes() == out2.read_bytes()
    sample_rows = sample.astype(str).apply(tuple, axis=1)
    assert sample_rows.isin(set(src.astype(str).apply(tuple, axis=1))).all()


def test_cli_find_fraction(adult_small, adult_spec_path, tmp_path):
    out, rep = tmp_path / "s.csv", tmp_path / "r.json"
    p = cli("--input", adult_small, "--spec", adult_spec_path, "--find-fraction", "--threshold", "0.2",
            "--draws", "10", "--step", "0.1", "--quantile", "0.5", "--out", out, "--report", rep)
    assert p.returncode == 0, p.stderr
    r = json.loads(rep.read_text())
    s = r["search"]
    assert s["fraction"] == r["fraction"] and s["draws"] == 10 and s["quantile"] == 0.5
    assert s["at_fraction"]["median"] <= 0.2 * 1.015
    assert len(read_table(out)) == r["sample_units"] == sample_size(4000, s["fraction"])


@pytest.mark.parametrize("args,msg", [
    (["--fraction", "0"], "outside (0, 1]"),
    (["--fraction", "0.5", "--find-fraction"], "exactly one of"),
    ([], "exactly one of"),
    (["--find-fraction", "--draws", "0"], "--draws: must be an integer >= 1"),
    (["--find-fraction", "--threshold", "2"], "outside (0, 1]"),
    (["--fraction", "0.5", "--measure", "median"], "invalid choice"),
])
def test_cli_bad_input_exits_2_with_one_line(adult_small, adult_spec_path, tmp_path, args, msg):
    out, rep = tmp_path / "s.csv", tmp_path / "r.json"
    p = cli("--input", adult_small, "--spec", adult_spec_path, "--out", out, "--report", rep, *args)
    assert p.returncode == 2 and msg in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not out.exists() and not rep.exists()


def test_cli_writes_nothing_when_one_output_cannot_be_written(adult_small, adult_spec_path, tmp_path):
    """A report into a missing folder is refused before the sample is written (no partial output)."""
    out = tmp_path / "s.csv"
    p = cli("--input", adult_small, "--spec", adult_spec_path, "--fraction", "0.5", "--out", out,
            "--report", tmp_path / "missing" / "r.json")
    assert p.returncode == 2 and "folder does not exist" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert not out.exists()
    p = cli("--input", adult_small, "--spec", adult_spec_path, "--fraction", "0.5", "--out", out, "--report", out)
    assert p.returncode == 2 and "two outputs name the same file" in p.stderr and not out.exists()


def test_cli_refuses_to_overwrite_the_input(adult_small, adult_spec_path):
    before = adult_small.read_bytes()
    p = cli("--input", adult_small, "--spec", adult_spec_path, "--fraction", "0.5", "--out", adult_small)
    assert p.returncode == 2 and "would overwrite an input" in p.stderr
    assert adult_small.read_bytes() == before


def test_cli_samples_persons_with_longitudinal(tmp_path):
    claims = pd.DataFrame({"member_id": ["p1", "p1", "p1", "p2", "p3", "p3", "p4", "p5", "p6", "p6"],
                           "sex": list("FFFMFFMMFF"), "dx": list("1121331212")})
    data, spec, out, rep = tmp_path / "c.csv", tmp_path / "s.toml", tmp_path / "o.csv", tmp_path / "r.json"
    claims.to_csv(data, index=False)
    spec.write_text('[columns]\nmember_id = "direct"\nsex = "quasi"\ndx = "quasi"\n[release]\ntype = "public"\n'
                    'threshold = 0.5\n[longitudinal]\nperson = "member_id"\nlevel1 = ["sex"]\nlevel2 = ["dx"]\n')
    p = cli("--input", data, "--spec", spec, "--fraction", "0.5", "--seed", "4", "--out", out, "--report", rep)
    assert p.returncode == 0, p.stderr
    r, sample = json.loads(rep.read_text()), read_table(out)
    assert (r["units"], r["population_units"], r["sample_units"]) == ("persons", 6, 3)
    assert r["measure"] == "journalist.max" and r["sample"]["persons"] == 3  # public release: max
    picked = set(sample["member_id"])
    assert len(picked) == 3 and len(sample) == int(claims["member_id"].isin(picked).sum())
    assert r["sample_records"] == len(sample)
