"""The bad-input sweep of every ``deid`` command, as a test: for each command and each kind of option —
numbers out of range or not numbers, unknown choices, input files missing, empty, a folder, binary or
without records, outputs in a missing folder or over an input, column names the data lack — the command
exits 2 with one line on stderr, no traceback, writes nothing and modifies no input; the unchanged
command exits 0 (so no case passes for a reason other than its own). In process, through
``deid_core.cli.main``: the whole sweep takes seconds.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deid_core.cli import main
from deid_core.cli.main import build_parser
from deidspecs import CLAIMS_SPEC

REPO = Path(__file__).resolve().parents[2]
KEY = "the data owner's secret masking key"
CROSS = """[columns]
name = "direct"
age = "quasi"
zip = "quasi"
sex = "quasi"
[types]
zip = "zip"
age = "age"
[hierarchies]
age = { builder = "interval", widths = [5, 10, 20] }
zip = { builder = "prefix" }
[release]
threshold = 0.2
"""
LONG = CLAIMS_SPEC

#: command -> (argv that succeeds, its input options, its output options, its options naming a column)
COMMANDS: dict[str, tuple[list[str], list[str], list[str], list[str]]] = {
    "assess": (["--input", "d.csv", "--spec", "cross.toml", "--report", "o.json", "--out", "o.csv",
                "--policy-out", "o_policy.json", "--html", "o.html"], ["--input", "--spec"],
               ["--report", "--out", "--policy-out", "--html"], []),
    "safe-harbor": (["--input", "d.csv", "--spec", "cross.toml", "--out", "o.csv", "--report", "o.json"],
                    ["--input", "--spec"], ["--out", "--report"], []),
    "apply": (["--input", "d.csv", "--policy", "policy.json", "--out", "o.csv", "--key-file", "owner.key",
               "--reversal-out", "o.sealed", "--policy-out", "o_policy.json", "--spec", "cross.toml", "--html", "o.html"],
              ["--input", "--policy", "--key-file", "--spec"], ["--out", "--reversal-out", "--policy-out", "--html"], []),
    "reverse": (["--table", "rev.sealed", "--column", "name", "--input", "released.csv", "--out", "o.csv",
                 "--key-file", "owner.key"], ["--table", "--input", "--key-file"], ["--out"], ["--column"]),
    "utility": (["--original", "d.csv", "--released", "d.csv", "--spec", "cross.toml", "--numeric", "age",
                 "--categorical", "sex", "--report", "o.json", "--html", "o.html"],
                ["--original", "--released", "--spec"], ["--report", "--html"], ["--numeric", "--categorical"]),
    "search": (["--input", "d.csv", "--spec", "cross.toml", "--method", "ola", "--k", "2", "--report", "o.json",
                "--out", "o.csv"], ["--input", "--spec"], ["--report", "--out"], []),
    "subsample": (["--input", "d.csv", "--spec", "cross.toml", "--fraction", "0.5", "--out", "o.csv",
                   "--report", "o.json", "--html", "o.html"], ["--input", "--spec"], ["--out", "--report", "--html"], []),
    "attack": (["--input", "claims.csv", "--spec", "long.toml", "--iterations", "100", "--report", "o.json"],
               ["--input", "--spec"], ["--report"], []),
    "truncate": (["--input", "claims.csv", "--spec", "long.toml", "--out", "o.csv", "--report", "o.json",
                  "--html", "o.html"], ["--input", "--spec"], ["--out", "--report", "--html"], []),
    "codes": (["--input", "claims.csv", "--spec", "long.toml", "--shuffle", "--code", "dx", "--out", "o.csv",
               "--report", "o.json", "--html", "o.html"], ["--input", "--spec"], ["--out", "--report", "--html"],
              ["--code"]),
    "geo": (["--areas", "areas.csv", "--input", "zip_claims.csv", "--column", "zip", "--threshold", "0.0001",
             "--out", "o.csv", "--report", "o.json", "--hierarchy-out", "o_h.csv"], ["--areas", "--input"],
            ["--out", "--report", "--hierarchy-out"], ["--column"]),
    "geoproxy": (["--areas", "areas.csv", "--input", "zip_claims.csv", "--home", "zip", "--provider-area",
                  "provider_zip", "--person", "member_id", "--provider", "provider", "--report", "o.json"],
                 ["--areas", "--input"], ["--report"], ["--home", "--provider-area", "--person", "--provider"]),
}
COMMANDS["text"] = (["--input", "d.csv", "--column", "name", "--out", "o.csv", "--mode", "surrogate", "--hints",
                     "name=name,zip=zip", "--patient", "sex", "--key-file", "owner.key", "--report", "o.json"],
                    ["--input", "--key-file"], ["--out", "--report"], ["--column", "--patient"])
COMMANDS["text-evaluate"] = (["--gold", "gold.jsonl", "--notes", "notes.jsonl", "--report", "o.json"],
                             ["--gold", "--notes"], ["--report"], [])
if shutil.which("chromium"):  # deid pdf prints with headless Chromium (installed by .ci/run)
    COMMANDS["pdf"] = (["--html", "page.html", "--out", "o.pdf"], ["--html"], ["--out"], [])
#: commands that serve until stopped: only their refusals are swept (never a run that would serve)
SERVING = {"ui": ["--port", "8765"]}
BAD_NUMBERS = ("-1", "nan", "abc", "1e999")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("sweep")
    rng = np.random.default_rng(3)
    n = 300
    pd.DataFrame({"name": [f"N{i:04d}" for i in range(n)], "age": rng.integers(20, 80, n).astype(str),
                  "zip": [f"0{z}" for z in rng.integers(2100, 2110, n)], "sex": rng.choice(["F", "M"], n)}
                 ).to_csv(d / "d.csv", index=False)
    rows = [(f"p{p:03d}", "FM"[p % 2], str(1940 + p % 5), f"{250 + p % 4}.{e % 2}") for p in range(80)
            for e in range(1 + p % 3)]
    pd.DataFrame(rows, columns=["pid", "sex", "yob", "dx"]).to_csv(d / "claims.csv", index=False)
    (d / "cross.toml").write_text(CROSS)
    (d / "long.toml").write_text(LONG)
    (d / "policy.json").write_text(json.dumps({"format": "deid_core.policy", "steps": [
        {"op": "pseudonymize", "column": "name"}, {"op": "generalize", "column": "age",
                                                   "hierarchy": {"builder": "interval", "widths": [10]}, "level": 1}],
        "columns": {"zip": "quasi", "sex": "quasi"}, "default": None}))
    (d / "owner.key").write_text(KEY)
    (d / "page.html").write_text("<!doctype html><html><body><h1>Verdict</h1><p>a page</p></body></html>")
    for f in ("areas.csv", "zip_claims.csv"):
        shutil.copy(REPO / "docs" / "examples" / f, d / f)
    for f in ("gold.jsonl", "notes.jsonl"):
        shutil.copy(REPO / "tests" / "data" / "notes" / f, d / f)
    (d / "empty.csv").write_text("")
    (d / "header.csv").write_text("name,age,zip,sex\n")
    (d / "binary.bin").write_bytes(bytes(range(256)) * 4)
    (d / "folder").mkdir()
    assert main(["apply", "--input", str(d / "d.csv"), "--policy", str(d / "policy.json"), "--out",
                 str(d / "released.csv"), "--key-file", str(d / "owner.key"), "--reversal-out",
                 str(d / "rev.sealed")]) == 0
    return d


def _snapshot(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.rglob("*"))
            if p.is_file()}


def _argv(folder: Path, command: str, args: list[str]) -> list[str]:
    flag_values = {"--port", "--host", "--max-upload-mb", "--seed", "--method", "--k", "--fraction", "--iterations", "--threshold", "--column", "--home",
                   "--provider-area", "--person", "--provider", "--code", "--numeric", "--categorical", "--mode",
                   "--hints", "--patient"}
    out, prev = [command], None
    for a in args:
        out.append(a if a.startswith("--") or prev in flag_values or "/" in a else str(folder / a))
        prev = a
    return out


def _replace(args: list[str], option: str, value: str) -> list[str]:
    out = list(args)
    if option in out:
        out[out.index(option) + 1] = value
    else:
        out += [option, value]
    return out


def _numeric_options(command: str) -> list[str]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return [a.option_strings[0] for a in sub._actions if a.type is not None and a.option_strings]


def _choice_options(command: str) -> list[str]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return [a.option_strings[0] for a in sub._actions if a.choices and a.option_strings]


def _cases() -> list[tuple[str, str, list[str]]]:
    cases = []
    for command, (base, inputs, outputs, columns) in COMMANDS.items():
        for option in _numeric_options(command):
            cases += [(command, f"{option} {v}", _replace(base, option, v)) for v in BAD_NUMBERS]
        cases += [(command, f"{o} nope", _replace(base, o, "nope")) for o in _choice_options(command)]
        for option in inputs:  # a key may be any bytes: only missing, empty or a folder is meaningless
            kinds = ("missing.csv", "empty.csv", "folder") + (() if option == "--key-file" else ("binary.bin", "header.csv"))
            for kind in kinds:
                cases.append((command, f"{option} {kind}", _replace(base, option, kind)))
        for option in outputs:
            cases.append((command, f"{option} in a missing folder", _replace(base, option, "no/such/folder.out")))
            cases.append((command, f"{option} over an input", _replace(base, option, base[base.index(inputs[0]) + 1])))
        cases += [(command, f"{o} unknown column", _replace(base, o, "no_such_column")) for o in columns]
    for command, base in SERVING.items():
        for option in _numeric_options(command):
            cases += [(command, f"{option} {v}", _replace(base, option, v)) for v in BAD_NUMBERS]
        cases.append((command, "--host 0.0.0.0 without --allow-remote", _replace(base, "--host", "0.0.0.0")))
    codes, search, utility = (COMMANDS[c][0] for c in ("codes", "search", "utility"))
    cases += [  # meaningless although every value is well formed
        ("codes", "--code sex: a per-person column", _replace(codes, "--code", "sex")),
        ("codes", "--suppress --k 1000000000: every code", [*(a for a in codes if a != "--shuffle"), "--suppress",
                                                             "--k", "1000000000"]),
        ("utility", "--numeric sex: no number in it", _replace(utility, "--numeric", "sex")),
        ("search", "--population with lola", _replace(_replace(search, "--method", "lola"), "--population", "d.csv")),
        ("search", "--seed with ola", _replace(search, "--seed", "3")),
    ]
    return cases


CASES = _cases()


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_unchanged_command_succeeds(folder, capsys, command, tmp_path):
    work = tmp_path / "w"
    shutil.copytree(folder, work)
    assert main(_argv(work, command, COMMANDS[command][0])) == 0, capsys.readouterr().err


@pytest.mark.parametrize("command, case, args", CASES, ids=[f"{c}: {k}" for c, k, _ in CASES])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(folder, capsys, command, case, args):
    before = _snapshot(folder)
    capsys.readouterr()
    rc = main(_argv(folder, command, args))
    err = capsys.readouterr().err
    assert rc == 2, f"{command} {case}: exit {rc}\n{err}"
    assert err.count("\n") == 1 and "Traceback" not in err, f"{command} {case}:\n{err}"
    after = _snapshot(folder)
    assert after == before, f"{command} {case}: wrote or changed {sorted(set(after.items()) ^ set(before.items()))}"


def test_the_sweep_covers_every_deid_command_and_many_cases():
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(COMMANDS) | set(SERVING) | ({"pdf"} if "pdf" not in COMMANDS else set())
    assert len(CASES) >= 250
