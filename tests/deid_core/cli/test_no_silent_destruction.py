"""No silent destruction: a command that would suppress or remove more than 5 % of a column's cells or of
the records says so, above 50 % it refuses without --force; a per-person column given to ``deid codes`` is
refused; options that do not apply to the chosen method are refused; numeric options are range-checked at
the parser (docs/deid.md, "No silent destruction"). In process, through ``deid_core.cli.main``."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from deid_core.cli import main
from deidspecs import write_claims


@pytest.fixture()
def claims(tmp_path: Path) -> dict[str, Path]:
    data, spec = write_claims(tmp_path)
    return {"data": data, "spec": spec, "dir": tmp_path}


def _exit(capsys, argv: list) -> tuple[int, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    return rc, capsys.readouterr().err


def test_codes_that_would_suppress_every_code_are_refused_then_forced_with_a_warning(claims, capsys):
    # the defect: 6,736 of 6,736 dx codes suppressed, exit 0, not a word
    out, rep = claims["dir"] / "c.csv", claims["dir"] / "c.json"
    base = ["codes", "--input", claims["data"], "--spec", claims["spec"], "--suppress", "--code", "dx",
            "--out", out, "--report", rep]
    for k in ("5", "1000000000"):
        rc, err = _exit(capsys, [*base, "--k", k])
        assert rc == 2 and err.count("\n") == 1 and "of 240 codes of 'dx'" in err and "--force" in err, err
        assert not out.exists() and not rep.exists()
    rc, err = _exit(capsys, [*base, "--k", "5", "--force"])
    assert rc == 0 and "deid: warning: deid codes suppressed or removed" in err
    assert json.loads(rep.read_text())["suppressed_rows"] > 120


def test_codes_refuses_a_per_person_column(claims, capsys):
    # the defect: --code sex suppressed all 7,071 sex cells
    for column in ("sex", "pid"):
        out = claims["dir"] / f"{column}.csv"
        rc, err = _exit(capsys, ["codes", "--input", claims["data"], "--spec", claims["spec"], "--suppress",
                                 "--code", column, "--out", out])
        assert rc == 2 and "per-person column" in err and err.count("\n") == 1 and not out.exists(), err


def test_truncate_that_removes_most_claims_is_refused(claims, capsys):
    # 10 persons with one claim, 2 with 50: top-coding the claim count at its median removes 98 of 110 claims
    rows = [(f"q{p}", "F", "1950", "250.0") for p in range(10)]
    rows += [(f"h{p}", "M", "1960", f"{300 + e}.1") for p in range(2) for e in range(50)]
    data, out, rep = claims["dir"] / "heavy.csv", claims["dir"] / "t.csv", claims["dir"] / "t.json"
    pd.DataFrame(rows, columns=["pid", "sex", "yob", "dx"]).to_csv(data, index=False)
    argv = ["truncate", "--input", data, "--spec", claims["spec"], "--method", "percentile", "--percentile", "50",
            "--out", out, "--report", rep]
    rc, err = _exit(capsys, argv)
    assert rc == 2 and "98 of 110 claims (89.1%)" in err and not out.exists() and not rep.exists(), err
    rc, err = _exit(capsys, [*argv, "--force"])
    assert rc == 0 and "deid: warning: deid truncate suppressed or removed 98 of 110 claims" in err, err


def test_options_that_do_not_apply_to_the_method_are_refused(claims, capsys, tmp_path):
    out = tmp_path / "r.json"
    for extra, words in ((["--method", "lola", "--population", claims["data"]], "--population applies to"),
                         (["--method", "ola", "--k", "2", "--seed", "3"], "--seed applies to"),
                         (["--method", "ola", "--k", "2", "--sampling-fraction", "0.5"], "--sampling-fraction"),
                         (["--method", "boxes", "--k", "2", "--iterations", "5"], "--iterations applies to"),
                         (["--method", "bps", "--top", "3"], "--top applies to")):
        rc, err = _exit(capsys, ["search", "--input", claims["data"], "--spec", claims["spec"], *extra,
                                 "--report", out])
        assert rc == 2 and words in err and err.count("\n") == 1 and not out.exists(), (extra, err)


def test_utility_refuses_a_numeric_column_without_numbers(claims, capsys, tmp_path):
    out = tmp_path / "u.json"
    rc, err = _exit(capsys, ["utility", "--original", claims["data"], "--released", claims["data"], "--spec",
                             claims["spec"], "--numeric", "sex", "--report", out])
    assert rc == 2 and "--numeric 'sex'" in err and not out.exists(), err


@pytest.mark.parametrize("command, extra", [
    ("geo", ["--column", "zip", "--areas", "a.csv"]), ("subsample", ["--fraction", "0.5"]), ("attack", []),
    ("truncate", ["--report", "r.json"]), ("codes", ["--suppress"]), ("search", ["--method", "bps"]),
])
@pytest.mark.parametrize("value", ["-1", "4294967296", "1.5", "x"])
def test_a_bad_seed_is_one_line_not_a_traceback(claims, capsys, command, extra, value):
    # the defect: a negative --seed gave a traceback in these six commands
    out = claims["dir"] / "o.csv"
    rc, err = _exit(capsys, [command, "--input", claims["data"], "--spec", claims["spec"], *extra, "--seed", value,
                             "--report", out])
    assert rc == 2 and err.count("\n") == 1 and "--seed" in err and "Traceback" not in err, err
    assert not out.exists()


def test_reversal_out_with_nothing_to_reverse_is_refused(claims, capsys, tmp_path):
    policy, key = tmp_path / "p.json", tmp_path / "k"
    policy.write_text(json.dumps({"format": "deid_core.policy", "steps": [{"op": "drop", "columns": ["pid"]}],
                                  "columns": {"sex": "quasi", "yob": "quasi", "dx": "quasi"}, "default": None}))
    key.write_text("the data owner's secret masking key")
    out, sealed = tmp_path / "o.csv", tmp_path / "r.sealed"
    rc, err = _exit(capsys, ["apply", "--input", claims["data"], "--policy", policy, "--out", out, "--key-file", key,
                             "--reversal-out", sealed])
    assert rc == 2 and "nothing to put in a reversal table" in err and not out.exists() and not sealed.exists()
