"""Exact values end to end: every cell is read, transformed and written as the text it was.

Random tables of leading-zero codes (``02139``), NA-like words ("NA", "null", "nan", "None",
"N/A"), Unicode, and values holding separators, quotes and line breaks go through CSV (``,`` ``;``
tab, written by Python's ``csv`` module, not by the code under test) and Parquet (written by
pyarrow); the readers, the writers and the ``deid`` commands (``apply``, ``safe-harbor``,
``assess --population``) must keep them. The bulk runs the CLI's ``main`` in-process; a few
examples start the real ``python -m deid_core.cli`` processes.
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings, strategies as st

from deid_core.cli import main
from deid_core.io import read_table, write_table
from deid_core.spec import SUPPRESSED
from deid_core.transform.safe_harbor import RESTRICTED_ZIP3_2000, zip3
from party_client import files as party_files

from deid_testdata import REPO
FORMATS = (",", ";", "\t", "parquet")
COLUMNS = ("id", "zip", "note", "code")
SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

CODES = st.from_regex(r"0[0-9]{1,6}", fullmatch=True)
ZIPS = st.from_regex(r"0[0-9]{4}", fullmatch=True)
NA_LIKE = st.sampled_from(["NA", "null", "nan", "None", "N/A", "NaN", "NULL", "n/a", "#N/A", "<NA>", "-nan",
                           "1.0", "1e5", "TRUE", "false", "0x1F", "-0", " ", "007 "])
TRICKY = st.sampled_from(list(",;\t\"'\n\r") + ["\r\n", '""', "Ünïcödé", "東京", "🙂", "a,b;c\td"])
TEXT = st.lists(st.one_of(st.characters(blacklist_categories=("Cs",)), TRICKY), min_size=1, max_size=6).map("".join)
CELL = st.one_of(CODES, NA_LIKE, TEXT).filter(lambda v: v != SUPPRESSED)
MAYBE = st.one_of(st.none(), CELL)  # None: a missing cell (written as the empty string)


def rows_of(zip_cells=MAYBE, min_size=1):
    return st.lists(st.tuples(MAYBE, zip_cells, MAYBE, CELL), min_size=min_size, max_size=6)


# ------------------------------------------------------------------ independent writers and readers

def write_input(rows, path: Path, fmt: str, columns=COLUMNS) -> Path:
    """The table as a user's tool would write it: Python's csv module (RFC 4180 CRLF) or pyarrow strings."""
    if fmt == "parquet":
        path = path.with_suffix(".parquet")
        pq.write_table(pa.table({c: pa.array([r[i] for r in rows], pa.string()) for i, c in enumerate(columns)}), path)
        return path
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, delimiter=fmt, lineterminator="\r\n")
        writer.writerow(columns)
        writer.writerows([["" if v is None else v for v in r] for r in rows])
    return path


def read_output(path: Path, fmt: str) -> list[list]:
    """Header + rows as written (CSV: csv module, missing = ""; Parquet: pyarrow, all string columns).

    ``deid`` commands write CSV with commas whatever the input's separator: ``fmt`` is the input's.
    """
    if fmt == "parquet":
        table = pq.read_table(path)
        assert all(t == pa.string() for t in table.schema.types), table.schema
        cols = table.to_pydict()
        return [list(cols)] + [["" if v is None else v for v in r] for r in zip(*cols.values())]
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh, delimiter=fmt))


def as_text(rows) -> list[list[str]]:
    return [["" if v is None else v for v in r] for r in rows]


def frame_rows(df: pd.DataFrame) -> list[list]:
    return [[None if pd.isna(v) else v for v in r] for r in df.astype(object).itertuples(index=False)]


def spec_file(path: Path, roles: dict[str, str], types: dict[str, str] | None = None) -> Path:
    """Every column listed in [columns] (a release declares the fate of each column)."""
    text = "[columns]\n" + "".join(f'{c} = "{r}"\n' for c, r in roles.items())
    if types:
        text += "[types]\n" + "".join(f'{c} = "{t}"\n' for c, t in types.items())
    path.write_text(text)
    return path


def output_path(tmp: Path, name: str, fmt: str) -> Path:
    return tmp / (name + (".parquet" if fmt == "parquet" else ".csv"))


def read_command_output(path: Path, fmt: str) -> list[list]:
    """What a ``deid`` command wrote: Parquet for Parquet input, else comma-separated CSV."""
    return read_output(path, "parquet" if fmt == "parquet" else ",")


def column(table: list[list], name: str) -> list[str]:
    i = table[0].index(name)
    return [r[i] for r in table[1:]]


# ------------------------------------------------------------------ readers and writers


@SETTINGS
@given(rows=rows_of(), fmt=st.sampled_from(FORMATS))
def test_read_write_round_trip_deid_core(tmp_path_factory, rows, fmt):
    tmp = tmp_path_factory.mktemp("io")
    src = write_input(rows, tmp / "in.csv", fmt)
    for categorical in (True, False):
        df = read_table(src, categorical=categorical)
        assert list(df.columns) == list(COLUMNS) and frame_rows(df) == [list(r) for r in rows]
    out = output_path(tmp, "out", fmt)
    write_table(read_table(src), out, sep="," if fmt == "parquet" else fmt)
    assert read_output(out, fmt) == [list(COLUMNS)] + as_text(rows)


@SETTINGS
@given(rows=rows_of(), fmt=st.sampled_from(FORMATS))
def test_read_write_round_trip_party_client(tmp_path_factory, rows, fmt):
    tmp = tmp_path_factory.mktemp("party")
    src = write_input(rows, tmp / "in.csv", fmt)
    frame = party_files.read_table(src)
    assert frame.values.tolist() == as_text(rows)  # party tables: the empty string is the missing value
    out = output_path(tmp, "out", fmt)
    party_files.write_table(frame, out)
    assert read_command_output(out, fmt) == [list(COLUMNS)] + as_text(rows)


# ------------------------------------------------------------------ the deid commands


def check_apply(tmp: Path, src: Path, rows, fmt: str, cli) -> None:
    """A policy that drops ``id`` and recodes one ``code`` value leaves ``zip`` and ``note`` untouched."""
    first = rows[0][3]
    policy = tmp / "policy.json"
    policy.write_text(json.dumps({"format": "deid_core.policy",
                                  "columns": {"id": "direct", "zip": "other", "note": "sensitive", "code": "quasi"},
                                  "steps": [
        {"op": "drop", "columns": ["id"]}, {"op": "map", "column": "code", "mapping": {first: "RECODED"}}]}))
    out = output_path(tmp, "applied", fmt)
    # random codes may look like identifiers (5-digit ZIPs, near-unique text): the custodian accepts them
    cli("apply", "--input", str(src), "--policy", str(policy), "--out", str(out), "--report", str(tmp / "apply.json"),
        *(f"--accept-column={c}:random test values" for c in ("zip", "note", "code")))
    got = read_command_output(out, fmt)
    assert got[0] == ["zip", "note", "code"]
    assert column(got, "zip") == [r[1] or "" for r in rows] and column(got, "note") == [r[2] or "" for r in rows]
    assert column(got, "code") == ["RECODED" if r[3] == first else r[3] for r in rows]


def check_safe_harbor(tmp: Path, src: Path, rows, fmt: str, cli) -> None:
    """``id`` (direct) is removed, ZIPs keep 3 digits with their leading zero, other columns are kept as-is."""
    spec = spec_file(tmp / "sh.toml", {"id": "direct", "zip": "quasi", "note": "sensitive", "code": "other"},
                     {"zip": "zip"})
    out = output_path(tmp, "sh", fmt)
    cli("safe-harbor", "--input", str(src), "--spec", str(spec), "--out", str(out), "--reference-year", "2024",
        "--report", str(tmp / "sh.json"),
        *(f"--accept-column={c}:random test values" for c in ("note", "code")))
    got = read_command_output(out, fmt)
    assert got[0] == ["zip", "note", "code"]
    assert column(got, "note") == [r[2] or "" for r in rows] and column(got, "code") == [r[3] for r in rows]
    expected_zip = ["" if r[1] is None else "000" if zip3(r[1]) in RESTRICTED_ZIP3_2000 else r[1][:3] for r in rows]
    assert column(got, "zip") == expected_zip


def check_assess_population(tmp: Path, src: Path, rows, fmt: str, cli) -> None:
    """Population risk computed from a population table keyed on the same leading-zero codes.

    The population also holds each code with its leading zeros stripped (``2139`` next to ``02139``),
    with a different count: a reader that loses the zeros matches the wrong class or none.
    """
    keys = [(r[1], r[3]) for r in rows]
    f = {k: keys.count(k) for k in keys}
    counts = {k: 3 * n + i for i, (k, n) in enumerate(sorted(f.items()))}
    pop_rows = [[z, c, str(n)] for (z, c), n in counts.items()]
    pop_rows += [[z.lstrip("0") or "0", c.lstrip("0") or "0", "1"] for (z, c) in counts
                 if (z.lstrip("0") or "0", c.lstrip("0") or "0") not in counts]
    pop = write_input(pop_rows, tmp / "pop.csv", fmt, columns=("zip", "code", "count"))
    spec = spec_file(tmp / "assess.toml", {"id": "direct", "zip": "quasi", "note": "sensitive", "code": "quasi"})
    report, released = tmp / "r.json", output_path(tmp, "released", fmt)
    cli("assess", "--input", str(src), "--spec", str(spec), "--population", str(pop), "--report", str(report),
        "--out", str(released))
    r = json.loads(report.read_text())
    assert r["population_inconsistent_records"] == 0 and r["records"] == len(rows)
    assert r["journalist"]["max"] == max(1 / counts[k] for k in keys)
    assert abs(r["journalist"]["average"] - sum(1 / counts[k] for k in keys) / len(keys)) < 1e-12
    got = read_command_output(released, fmt)
    assert got[1:] == [[r[1], r[2] or "", r[3]] for r in rows]


def in_process(*argv: str) -> None:
    assert main(list(argv)) == 0


def subprocess_cli(*argv: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    p = subprocess.run([sys.executable, "-m", "deid_core.cli", *argv], capture_output=True, text=True, env=env,
                       cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr


@SETTINGS
@given(rows=rows_of(zip_cells=st.one_of(st.none(), ZIPS)), fmt=st.sampled_from(FORMATS))
def test_apply_and_safe_harbor_keep_values(tmp_path_factory, rows, fmt):
    tmp = tmp_path_factory.mktemp("cmd")
    src = write_input(rows, tmp / "in.csv", fmt)
    check_apply(tmp, src, rows, fmt, in_process)
    check_safe_harbor(tmp, src, rows, fmt, in_process)


@SETTINGS
@given(rows=rows_of(zip_cells=st.one_of(ZIPS, CODES, NA_LIKE)), fmt=st.sampled_from(FORMATS))
def test_assess_population_joins_on_exact_codes(tmp_path_factory, rows, fmt):
    tmp = tmp_path_factory.mktemp("assess")
    check_assess_population(tmp, write_input(rows, tmp / "in.csv", fmt), rows, fmt, in_process)


@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(rows=rows_of(zip_cells=ZIPS, min_size=2), fmt=st.sampled_from(FORMATS))
def test_real_cli_processes_keep_values(tmp_path_factory, rows, fmt):
    """The same checks through ``python -m deid_core.cli`` processes."""
    tmp = tmp_path_factory.mktemp("cli")
    src = write_input(rows, tmp / "in.csv", fmt)
    check_apply(tmp, src, rows, fmt, subprocess_cli)
    check_safe_harbor(tmp, src, rows, fmt, subprocess_cli)
    check_assess_population(tmp, src, rows, fmt, subprocess_cli)
