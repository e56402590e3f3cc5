"""A table without records (a header line only, 0 Parquet rows, 0 bytes, or an id column blank in
every row) is refused by every command that reads one: exit 2, one line on stderr, no output, and
for the party commands no session opened at the key holder."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import deid_core
from linkhelpers import keyholder_cmd, run_party
from party_client.demo import FUZZY_RULES, RELEASE_SPEC

HEADER = "hcn,given,surname,dob,los_days,site,stage\n"


def _deid(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "deid_core.cli", *args], capture_output=True, text=True,
                          timeout=120)


def _refused(result: subprocess.CompletedProcess, outputs: list[Path]) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "no records" in lines[0] or "blank in every row" in lines[0] or "empty" in lines[0], lines[0]
    for path in outputs:
        assert not path.exists() or (path.is_dir() and not any(path.iterdir())), path


def _sessions(keyholder, names: list[str]) -> list[str]:
    audit = subprocess.run(keyholder_cmd("audit", "--data-dir", str(keyholder.data_dir)), capture_output=True,
                           text=True, check=True).stdout
    return [line for line in audit.splitlines() if "open_session" in line and any(n in line for n in names)]


@pytest.fixture
def files(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text(HEADER)
    spec = tmp_path / "spec.toml"
    spec.write_text(RELEASE_SPEC)
    rules = tmp_path / "rules.toml"
    rules.write_text(FUZZY_RULES.format(who="t", surname="surname", given="given", dob="dob",
                                        date_format="%Y-%m-%d"))
    loaded = deid_core.load_spec(spec)
    policy = tmp_path / "policy.json"
    policy.write_text(deid_core.full_domain_policy(loaded.hierarchies, {"dob": 6}, drop=loaded.direct,
                                                   qis=loaded.quasi).to_json())
    return {"empty": empty, "spec": spec, "rules": rules, "policy": policy}


def test_every_party_command_refuses_a_header_only_table(keyholder, parties, tmp_path, files):
    (qdir, qname), (hdir, hname) = parties(2)
    flags = ["--keyholder", keyholder.address, "--quiet"]
    empty, out, report = str(files["empty"]), tmp_path / "out.csv", tmp_path / "reports"
    report.mkdir()
    commands = {
        "hold": ["hold", "--dir", str(hdir), *flags, "--input", empty, "--id-column", "hcn", "--once"],
        "join": ["join", "--dir", str(qdir), *flags, "--holder", hname, "--input", empty, "--id-column", "hcn",
                 "--out", str(out)],
        "dedup": ["dedup", "--dir", str(qdir), *flags, "--holder", hname, "--input", empty, "--rules",
                  str(files["rules"]), "--out", str(out)],
        "lookup": ["lookup", "--dir", str(qdir), *flags, "--holder", hname, "--input", empty, "--id-column",
                   "hcn", "--population", "1000000", "--out", str(out)],
        "estimate": ["estimate", "--rules", str(files["rules"]), "--input", empty, "--out",
                     str(tmp_path / "estimated.toml")],
        "link-release": ["link-release", "--dir", str(qdir), *flags, "--holder", hname, "--input", empty,
                         "--id-column", "hcn", "--spec", str(files["spec"]), "--method", "safe-harbor",
                         "--out", str(out), "--report-dir", str(report)],
        "dedup-many": ["dedup-many", "--dir", str(qdir), *flags, "--registries", hname, "--input", empty,
                       "--id-column", "hcn", "--out", str(out)],
    }
    for name, args in commands.items():
        _refused(run_party(*args, check=False), [out, report, tmp_path / "estimated.toml"])
    assert _sessions(keyholder, [qname, hname]) == []


@pytest.mark.parametrize("content", ["", "hcn,given\n  ,Ana\n,Ben\n", "parquet"],
                         ids=["zero-bytes", "blank-ids", "parquet-0-rows"])
def test_join_refuses_other_degenerate_tables(keyholder, parties, tmp_path, content):
    (qdir, qname), (_, hname) = parties(2)
    table = tmp_path / ("in.parquet" if content == "parquet" else "in.csv")
    if content == "parquet":
        pd.DataFrame({"hcn": pd.Series([], dtype=str), "given": pd.Series([], dtype=str)}).to_parquet(table)
    else:
        table.write_text(content)
    result = run_party("join", "--dir", str(qdir), "--keyholder", keyholder.address, "--holder", hname,
                       "--input", str(table), "--id-column", "hcn", "--out", str(tmp_path / "out.csv"),
                       check=False)
    _refused(result, [tmp_path / "out.csv"])
    assert _sessions(keyholder, [qname]) == []


def test_every_deid_command_refuses_a_header_only_table(tmp_path, files):
    empty, spec = str(files["empty"]), str(files["spec"])
    out, html = tmp_path / "out.json", tmp_path / "out.html"
    released = tmp_path / "released.csv"
    commands = [
        ["assess", "--input", empty, "--spec", spec, "--report", str(out)],
        ["assess", "--input", empty, "--spec", spec, "--report", str(out), "--html", str(html)],
        ["safe-harbor", "--input", empty, "--spec", spec, "--out", str(released)],
        ["apply", "--input", empty, "--policy", str(files["policy"]), "--out", str(released)],
        ["search", "--input", empty, "--spec", spec, "--method", "ola", "--k", "2", "--report", str(out)],
    ]
    for args in commands:
        _refused(_deid(*args), [out, html, released])
    parquet = tmp_path / "empty.parquet"
    pd.read_csv(files["empty"], dtype=str).to_parquet(parquet)
    _refused(_deid("assess", "--input", str(parquet), "--spec", spec, "--report", str(out)), [out])
    files["empty"].write_text("")
    _refused(_deid("assess", "--input", empty, "--spec", spec, "--report", str(out)), [out])


def test_library_never_reports_meets_threshold_on_zero_records(files):
    spec = deid_core.load_spec(files["spec"])
    frame = pd.read_csv(files["empty"], dtype=str)
    with pytest.raises(deid_core.DeidInputError, match="no records"):
        deid_core.assess(frame, spec)
    with pytest.raises(deid_core.DeidInputError, match="no records"):
        deid_core.safe_harbor(frame, spec)
