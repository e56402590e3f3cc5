"""A wrong key never yields an identity: every reversible step (the sealed table of pseudonymize, randomize
and names; fpe by decryption) refuses a wrong key with exit 2, one line and nothing written (docs/masking.md)."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from deid_core.cli import main
from deid_core.transform.keys import key_check_value

KEY, WRONG = "the data owner's secret masking key", "somebody else's key, 16+ bytes"


@pytest.fixture()
def applied(tmp_path: Path, monkeypatch) -> dict[str, Path]:
    monkeypatch.delenv("DEID_KEY", raising=False)
    df = pd.DataFrame({"pid": [f"P{i:04d}" for i in range(30)], "first": ["Anna", "Boris", "Chloe"] * 10,
                       "ssn": [f"{123 + i:03d}-45-{6789 - i:04d}" for i in range(30)],
                       "acct": [f"{1000000 + 31 * i}" for i in range(30)], "age": [str(30 + i % 4) for i in range(30)]})
    f = {n: tmp_path / n for n in ("data.csv", "policy.json", "owner.key", "wrong.key", "release.csv", "rev.sealed",
                                   "applied.json", "back.csv")}
    df.to_csv(f["data.csv"], index=False)
    f["policy.json"].write_text(json.dumps({"format": "deid_core.policy", "steps": [
        {"op": "pseudonymize", "column": "pid"}, {"op": "randomize", "column": "acct"},
        {"op": "names", "column": "first", "part": "first"}, {"op": "fpe", "column": "ssn", "format": "ssn"}],
        "columns": {"age": "quasi"}, "default": None}))
    f["owner.key"].write_text(KEY)
    f["wrong.key"].write_text(WRONG)
    assert main(["apply", "--input", str(f["data.csv"]), "--policy", str(f["policy.json"]), "--out",
                 str(f["release.csv"]), "--key-file", str(f["owner.key"]), "--reversal-out", str(f["rev.sealed"]),
                 "--policy-out", str(f["applied.json"])]) == 0
    return f


def _refused(capsys, argv: list[str], words: str, never: Path) -> None:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err, err
    assert not never.exists()


def test_the_applied_policy_records_the_key_check_value_not_the_key(applied):
    text = applied["applied.json"].read_text()
    step = next(s for s in json.loads(text)["steps"] if s["op"] == "fpe")
    assert step["key_check"] == key_check_value(KEY.encode()) != key_check_value(WRONG.encode())
    assert KEY not in text and len(step["key_check"]) == 32


@pytest.mark.parametrize("column", ["pid", "acct", "first"])
def test_wrong_key_on_the_sealed_table_is_refused_for_every_table_step(applied, capsys, column):
    rel = pd.read_csv(applied["release.csv"], dtype=str)
    _refused(capsys, ["reverse", "--table", str(applied["rev.sealed"]), "--column", column, "--value", rel[column][0],
                      "--out", str(applied["back.csv"]), "--key-file", str(applied["wrong.key"])],
             "does not open with this key", applied["back.csv"])


def test_wrong_key_on_an_fpe_column_writes_no_plausible_identity(applied, capsys, monkeypatch):
    # the defect: exit 0 and 30 valid-looking but false SSNs. Now: exit 2, one line, nothing written,
    # with the key from a file or from DEID_KEY.
    args = ["reverse", "--policy", str(applied["applied.json"]), "--column", "ssn", "--input",
            str(applied["release.csv"]), "--out", str(applied["back.csv"])]
    _refused(capsys, [*args, "--key-file", str(applied["wrong.key"])], "not the one that masked it", applied["back.csv"])
    monkeypatch.setenv("DEID_KEY", WRONG)
    _refused(capsys, args, "not the one that masked it", applied["back.csv"])
    monkeypatch.setenv("DEID_KEY", KEY)  # the right key decrypts
    assert main(args) == 0
    got = pd.read_csv(applied["back.csv"], dtype=str)
    orig = pd.read_csv(applied["data.csv"], dtype=str)
    rel = pd.read_csv(applied["release.csv"], dtype=str)
    assert dict(zip(got["pseudonym"], got["original"])) == dict(zip(rel["ssn"], orig["ssn"]))


def test_an_fpe_step_without_a_key_check_cannot_be_reversed(applied, capsys):
    # a hand-written policy says how to decrypt but not which key: a wrong key would go unnoticed
    _refused(capsys, ["reverse", "--policy", str(applied["policy.json"]), "--column", "ssn", "--value", "829-18-9772",
                      "--out", str(applied["back.csv"]), "--key-file", str(applied["owner.key"])],
             "records no key_check", applied["back.csv"])


def test_reapplying_the_applied_policy_with_another_key_is_refused(applied, capsys, tmp_path):
    # pseudonyms under another key would match nothing in the earlier tables: refused before anything is written
    out = tmp_path / "next.csv"
    _refused(capsys, ["apply", "--input", str(applied["data.csv"]), "--policy", str(applied["applied.json"]),
                      "--out", str(out), "--key-file", str(applied["wrong.key"])], "not the one that masked it", out)
