"""One vocabulary for outputs (docs/cli.md, "Outputs"): ``--out`` the main artifact, ``--report`` the JSON,
``--html`` the page.  The old spellings still work for one release, each with one notice naming the new
flag, and write what they wrote before; both spellings at once, or no report at all, are refused in one
line with nothing written.  In process, through ``deid_core.cli.main``."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from deid_core.cli import main
from deid_core.cli.main import build_parser
from deidspecs import CLAIMS_SPEC


@pytest.fixture
def claims(tmp_path):
    rows = [(f"p{p:03d}", "FM"[p % 2], str(1940 + p % 30), f"{250 + (p % 6)}.{e % 3}") for p in range(60)
            for e in range(1 + p % 4)]
    pd.DataFrame(rows, columns=["pid", "sex", "yob", "dx"]).to_csv(tmp_path / "claims.csv", index=False)
    (tmp_path / "cross.toml").write_text(CLAIMS_SPEC.split("[longitudinal]")[0])
    (tmp_path / "spec.toml").write_text(CLAIMS_SPEC)
    return tmp_path


def run(capsys, *argv) -> tuple[int, str]:
    capsys.readouterr()
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def test_assess_old_spellings_write_what_they_wrote_with_a_notice_each(claims, capsys):
    code, err = run(capsys, "assess", "--input", claims / "claims.csv", "--spec", claims / "cross.toml",
                    "--levels", "yob=1", "--out", claims / "r.json", "--output", claims / "t.csv")
    assert code == 0, err
    assert "equivalence_classes" in json.loads((claims / "r.json").read_text())     # the report, as before
    assert pd.read_csv(claims / "t.csv", dtype=str).shape[0] > 0                      # the table, as before
    notices = [line for line in err.splitlines() if "notice" in line]
    assert notices == ["deid assess: notice: --out REPORT.json is now --report (--out names the table written); "
                       "the old spelling is accepted until the next release",
                       "deid assess: notice: --output is now --out; the old spelling is accepted until the next "
                       "release"]


def test_new_spellings_say_nothing_and_write_the_same(claims, capsys):
    code, err = run(capsys, "assess", "--input", claims / "claims.csv", "--spec", claims / "cross.toml",
                    "--levels", "yob=1", "--report", claims / "r.json", "--out", claims / "t.csv")
    assert code == 0 and "notice" not in err, err
    assert "equivalence_classes" in json.loads((claims / "r.json").read_text()) and (claims / "t.csv").exists()


@pytest.mark.parametrize("command, extra, old, new", [
    ("search", ["--method", "ola", "--k", "2"], "--apply-best", "--out"),
    ("attack", ["--iterations", "50"], "--out", "--report"),
])
def test_search_and_attack_old_spellings(claims, capsys, command, extra, old, new):
    spec = claims / ("spec.toml" if command == "attack" else "cross.toml")
    argv = [command, "--input", claims / "claims.csv", "--spec", spec, *extra]
    if command == "search":
        argv += ["--out", claims / "r.json", old, claims / "t.csv"]
    else:
        argv += [old, claims / "r.json"]
    code, err = run(capsys, *argv)
    assert code == 0, err
    assert json.loads((claims / "r.json").read_text())
    assert f"{old} is now {new}" in err and (command != "search" or (claims / "t.csv").exists())


@pytest.mark.parametrize("argv, line", [
    (["--out", "t.csv", "--output", "u.csv", "--report", "r.json"], "give --out, not both --out and --output"),
    (["--out", "r.json", "--report", "r2.json"], "--out names the table written (CSV or .parquet), not JSON"),
    ([], "the following arguments are required: --report"),
])
def test_both_spellings_or_no_report_are_refused_in_one_line(claims, capsys, argv, line):
    code, err = run(capsys, "assess", "--input", claims / "claims.csv", "--spec", claims / "cross.toml",
                    "--levels", "yob=1", *[claims / a if a.endswith((".csv", ".json")) else a for a in argv])
    assert code == 2 and len(err.strip().splitlines()) == 1 and line in err, err
    assert sorted(p.name for p in claims.iterdir()) == ["claims.csv", "cross.toml", "spec.toml"]


def test_help_shows_only_the_new_spellings():
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices                # noqa: SLF001
    for name in ("assess", "search", "attack", "geoproxy", "utility"):
        text = commands[name].format_help()
        assert "--report" in text and "--output" not in text and "--apply-best" not in text, name
