"""One ending: every ``deid`` command prints exactly one summary line on success (what it wrote and the
key figure) on stdout. In process, through ``deid_core.cli.main``; the data are small."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from deid_core.cli import main
from deidspecs import CLAIMS_SPEC

REPO = Path(__file__).resolve().parents[3]
GEO = REPO / "tests" / "data" / "geo"
SPEC = CLAIMS_SPEC


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("ending")
    rows = [(f"p{p:03d}", "FM"[p % 2], str(1940 + p % 30), f"{250 + (p % 6)}.{e % 3}") for p in range(60)
            for e in range(1 + p % 4)]
    pd.DataFrame(rows, columns=["pid", "sex", "yob", "dx"]).to_csv(d / "claims.csv", index=False)
    (d / "spec.toml").write_text(SPEC)
    (d / "cross.toml").write_text(SPEC.split("[longitudinal]")[0])
    (d / "policy.json").write_text(json.dumps({"format": "deid_core.policy", "steps": [
        {"op": "drop", "columns": ["pid"]}], "columns": {"sex": "quasi", "yob": "quasi", "dx": "quasi"},
        "default": None}))
    (d / "owner.key").write_text("the data owner's secret masking key")
    (d / "mask.json").write_text(json.dumps({"format": "deid_core.policy", "steps": [
        {"op": "pseudonymize", "column": "pid"}], "columns": {"sex": "quasi", "yob": "quasi", "dx": "quasi"},
        "default": None}))
    assert main(["apply", "--input", str(d / "claims.csv"), "--policy", str(d / "mask.json"), "--out",
                 str(d / "ap_masked.csv"), "--key-file", str(d / "owner.key"), "--reversal-out",
                 str(d / "rev.sealed")]) == 0
    return {"d": d, "claims": d / "claims.csv", "spec": d / "spec.toml", "cross": d / "cross.toml",
            "policy": d / "policy.json"}


def _commands(f: dict[str, Path]) -> dict[str, list]:
    d = f["d"]
    return {
        "assess": ["assess", "--input", f["claims"], "--spec", f["cross"], "--report", d / "a.json"],
        "apply": ["apply", "--input", f["claims"], "--policy", f["policy"], "--out", d / "ap.csv"],
        "safe-harbor": ["safe-harbor", "--input", f["claims"], "--spec", f["cross"], "--out", d / "sh.csv"],
        "search": ["search", "--input", f["claims"], "--spec", f["cross"], "--method", "ola", "--k", "2",
                   "--report", d / "s.json"],
        "attack": ["attack", "--input", f["claims"], "--spec", f["spec"], "--iterations", "200",
                   "--report", d / "at.json"],
        "truncate": ["truncate", "--input", f["claims"], "--spec", f["spec"], "--out", d / "t.csv",
                     "--report", d / "t.json"],
        "codes": ["codes", "--input", f["claims"], "--spec", f["spec"], "--shuffle", "--code", "dx",
                  "--out", d / "c.csv"],
        "subsample": ["subsample", "--input", f["claims"], "--spec", f["cross"], "--fraction", "0.5",
                      "--out", d / "sub.csv", "--report", d / "sub.json"],
        "utility": ["utility", "--original", f["claims"], "--released", f["claims"], "--spec", f["cross"],
                    "--report", d / "u.json"],
        "geo": ["geo", "--areas", GEO / "areas.csv", "--input", GEO / "claims.csv", "--column", "zip",
                "--threshold", "0.0001", "--out", d / "g.csv", "--report", d / "g.json"],
        "reverse": ["reverse", "--table", d / "rev.sealed", "--column", "pid", "--input", d / "ap_masked.csv",
                    "--out", d / "back.csv", "--key-file", d / "owner.key"],
        "geoproxy": ["geoproxy", "--areas", GEO / "areas.csv", "--input", GEO / "claims.csv", "--home", "zip",
                     "--provider-area", "provider_zip", "--person", "person", "--provider", "provider",
                     "--report", d / "gp.json"],
    }


@pytest.mark.parametrize("command", ["assess", "apply", "safe-harbor", "search", "attack", "truncate", "codes",
                                     "subsample", "utility", "geo", "geoproxy", "reverse"])
def test_every_command_ends_with_one_summary_line(files, capsys, command):
    # the defect: truncate, codes, assess, attack, geoproxy and search printed nothing on success
    capsys.readouterr()
    argv = [str(a) for a in _commands(files)[command]]
    if command == "subsample":  # also when no fraction meets the threshold: one line saying so
        nothing = ["subsample", "--input", str(files["claims"]), "--spec", str(files["cross"]), "--find-fraction",
                   "--threshold", "0.0001", "--draws", "2", "--report", str(files["d"] / "none.json")]
        assert main(nothing) == 0
        lines = capsys.readouterr().out.splitlines()
        assert len(lines) == 1 and "no fraction" in lines[0] and "no sample written" in lines[0], lines
    assert main(argv) == 0, capsys.readouterr().err
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"deid {command}: "), lines
    written = argv[argv.index("--out" if "--out" in argv else "--report") + 1]
    assert written in lines[0] and any(ch.isdigit() for ch in lines[0].split(written)[-1]), lines[0]
