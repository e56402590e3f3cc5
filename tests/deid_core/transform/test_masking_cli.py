"""``deid apply`` with masking steps and ``--reversal-out``, ``deid reverse`` (real subprocesses)."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from deid_core.cli import main
from deid_core.transform.fpe import luhn_digit, luhn_valid

from deid_testdata import REPO
KEY = "the data owner's secret masking key"


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k != "DEID_KEY"}
    e.update(PYTHONPATH=str(REPO), **(env or {}))
    return subprocess.run([sys.executable, "-m", "deid_core.cli", *args], capture_output=True, text=True, env=e, cwd=REPO)


def _files(tmp_path: Path) -> tuple[Path, Path, Path]:
    bodies = [f"{1000000 + 7919 * i}" for i in range(40)]
    df = pd.DataFrame({
        "pid": [f"PATIENT-{i:05d}" for i in range(40)],
        "first": ["Wolfeschlegelsteinhausen", "Alexander", "Mariangela", "Josephine"] * 10,
        "sex": ["M", "M", "F", "F"] * 10,
        "ssn": [f"{123 + i:03d}-45-{6789 - i:04d}" for i in range(40)],
        "mrn": [b + luhn_digit(b) for b in bodies],
        "age": [str(30 + i % 5) for i in range(40)],
    })
    data = tmp_path / "patients.csv"
    df.to_csv(data, index=False)
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"format": "deid_core.policy", "steps": [
        {"op": "names", "column": "first", "sex": "sex", "person": "pid"},
        {"op": "pseudonymize", "column": "pid"},
        {"op": "fpe", "column": "ssn", "format": "ssn"},
        {"op": "fpe", "column": "mrn", "format": "luhn"},
    ], "columns": {"sex": "quasi", "age": "quasi"}, "default": None}))
    key = tmp_path / "owner.key"
    key.write_text(KEY)
    return data, policy, key


def test_apply_seals_the_reversal_table_and_reverse_opens_it(tmp_path, monkeypatch, capsys):
    data, policy, key = _files(tmp_path)
    before = hashlib.sha256(data.read_bytes()).hexdigest()
    out, sealed, report = tmp_path / "release.csv", tmp_path / "reversal.sealed", tmp_path / "report.json"
    applied = tmp_path / "applied.json"
    p = run("apply", "--input", str(data), "--policy", str(policy), "--out", str(out), "--key-file", str(key),
            "--reversal-out", str(sealed), "--report", str(report), "--policy-out", str(applied))
    assert p.returncode == 0, p.stderr
    assert hashlib.sha256(data.read_bytes()).hexdigest() == before
    orig = pd.read_csv(data, dtype=str)
    rel = pd.read_csv(out, dtype=str)
    assert (rel["ssn"].str.len() == 11).all() and rel["ssn"].str.fullmatch(r"\d{3}-\d{2}-\d{4}").all()
    assert rel["mrn"].map(luhn_valid).all() and (rel["mrn"] != orig["mrn"]).all()
    assert not set(rel["first"]) & set(orig["first"])
    blob = sealed.read_bytes()
    for value in [*orig["first"], *orig["pid"], KEY]:  # no original value (>= 9 bytes: no chance hit), nor the key
        assert value.encode() not in blob
    for f in (out, report):
        assert KEY not in f.read_text()
    assert KEY not in p.stdout + p.stderr
    fates = json.loads(report.read_text())["column_fates"]
    assert fates["first"] == fates["ssn"] == fates["mrn"] == fates["pid"] == "masked"

    # the custodian reverses names and keyed pseudonyms through the table (in process from here on) ...
    back = tmp_path / "back.csv"
    assert main(["reverse", "--table", str(sealed), "--column", "pid", "--value", rel["pid"][3], "--value", "nope",
                 "--out", str(back), "--key-file", str(key)]) == 0
    got = pd.read_csv(back, dtype=str, keep_default_na=False)
    assert got.values.tolist() == [[rel["pid"][3], "PATIENT-00003"], ["nope", ""]]
    assert "1 not in the table" in capsys.readouterr().out
    monkeypatch.setenv("DEID_KEY", KEY)  # the key from the environment
    assert main(["reverse", "--table", str(sealed), "--column", "first", "--input", str(out), "--out", str(back)]) == 0
    got = pd.read_csv(back, dtype=str)
    pairs = set(zip(rel["first"], orig["first"]))
    assert set(zip(got["pseudonym"], got["original"])) >= pairs
    # ... and FPE columns with the key alone (no table): the applied policy says how they were encrypted
    assert main(["reverse", "--policy", str(applied), "--column", "ssn", "--input", str(out), "--out", str(back)]) == 0
    got = pd.read_csv(back, dtype=str)
    assert dict(zip(got["pseudonym"], got["original"])) == dict(zip(rel["ssn"], orig["ssn"]))


def test_reverse_with_a_wrong_key_fails_with_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DEID_KEY", raising=False)
    data, policy, key = _files(tmp_path)
    sealed = tmp_path / "reversal.sealed"
    assert main(["apply", "--input", str(data), "--policy", str(policy), "--out", str(tmp_path / "o.csv"),
                 "--key-file", str(key), "--reversal-out", str(sealed)]) == 0
    wrong = tmp_path / "wrong.key"
    wrong.write_text("not the owner's key at all")
    back = tmp_path / "back.csv"
    capsys.readouterr()
    p = run("reverse", "--table", str(sealed), "--column", "pid", "--value", "x", "--out", str(back),
            "--key-file", str(wrong))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "does not open with this key" in p.stderr
    assert not back.exists()
    for argv, words in ((["reverse", "--table", str(sealed), "--column", "pid", "--value", "x", "--out", str(back)],
                         "DEID_KEY"),
                        (["apply", "--input", str(data), "--policy", str(policy), "--out", str(tmp_path / "o2.csv"),
                          "--reversal-out", str(tmp_path / "r2")], "a key is required"),
                        (["reverse", "--table", str(data), "--column", "pid", "--value", "x", "--out", str(back),
                          "--key-file", str(key)], "not a sealed reversal table")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err, err
    assert not back.exists() and not (tmp_path / "o2.csv").exists()
