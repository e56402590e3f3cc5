"""``deid text`` streamed (docs/text.md, "The command"): the table read, de-identified and written in chunks of
rows gives the same bytes and the same counts as the whole table done at once, whatever the chunk size (tags
numbered per note, the date shift keyed by the patient or by the row number in the whole table, a CSV file's
line ends and quoting decided by every value); bad input met in a later chunk leaves no output."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from deid_core.cli import main
from deid_core.errors import DeidInputError
from deid_core.io import read_table, write_table
from deid_core.text import Surrogates
from deid_core.text.column import deidentify_notes
from deid_core.text.table import CHUNK_ROWS, deidentify_table

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "notes" / "notes_sample.csv"
KEY = b"a test key of 32 bytes, not real"
HINTS = {"name": "name", "mrn": "mrn", "dob": "dob"}


def whole(source, out, mode, hints=None, patient=None):
    """The table done at once (read whole, every note, written whole): what streaming must reproduce."""
    df = read_table(source, categorical=False)
    hint_rows = [dict(zip(hints, row)) for row in zip(*(df[c].tolist() for c in hints.values()))] if hints else None
    patients = None if patient is None else [v if isinstance(v, str) else "" for v in df[patient].tolist()]
    result = deidentify_notes(df["note"].tolist(), mode, hints=hint_rows, patients=patients,
                              surrogates=Surrogates(KEY) if mode == "surrogate" else None)
    df["note"] = result.notes
    write_table(df, out)
    return result.summary()


@pytest.fixture
def table(tmp_path):
    """The sample notes with a missing note, a note of spaces, a suppressed cell, and ``02139``/``007``."""
    df = pd.read_csv(SAMPLE, dtype=str, keep_default_na=False)
    df.loc[3, "note"] = ""
    df.loc[5, "note"] = "   "
    df.loc[7, "name"] = "[suppressed]"
    df.insert(1, "zip", ["02139", "007", ""] * (len(df) // 3) + ["00501"] * (len(df) % 3))
    path = tmp_path / "in.csv"
    df.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("mode,patient", [("tag", None), ("surrogate", None), ("surrogate", "patient_id")])
def test_any_chunk_size_gives_the_bytes_and_counts_of_the_whole_table(table, tmp_path, mode, patient):
    reference = tmp_path / "whole.csv"
    counts = whole(table, reference, mode, HINTS, patient)
    for rows in (1, 5, CHUNK_ROWS):
        out = tmp_path / f"out{rows}.csv"
        result = deidentify_table(table, "note", out, mode, hint_columns=HINTS, patient_column=patient,
                                  surrogates=Surrogates(KEY) if mode == "surrogate" else None, chunk_rows=rows)
        assert out.read_bytes() == reference.read_bytes(), rows
        assert result.summary() == counts and result.notes == []
    back = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert back["zip"].tolist()[:3] == ["02139", "007", ""] and back["note"][3] == "" and back["name"][7] == ""


def test_the_command_reports_the_same_counts_as_before(table, tmp_path, capsys):
    out, report = tmp_path / "o.csv", tmp_path / "r.json"
    counts = whole(table, tmp_path / "whole.csv", "tag", HINTS)
    assert main(["text", "--input", str(table), "--column", "note", "--out", str(out), "--mode", "tag",
                 "--hints", "name=name,mrn=mrn,dob=dob", "--report", str(report)]) == 0
    r = json.loads(report.read_text())
    assert {k: r[k] for k in counts} == counts and out.read_bytes() == (tmp_path / "whole.csv").read_bytes()
    assert f"{counts['documents']} notes" in capsys.readouterr().out


@pytest.mark.parametrize("columns", [["id", "note"], ["note"]])
def test_a_later_chunk_sets_the_layout_of_the_whole_file(tmp_path, columns):
    """A carriage return, or a blank note in a one-column table, only in the last rows: every line of the
    file gets ``\\r\\n``, or every cell its quotes, as when the table is written whole."""
    rows = [["1", "Dr. Smith seen 2/03."], ["2", "pt stable"], ["3", "Seen by Dr. Jones\r\non 3/14/2019."], ["4", " "]]
    source = tmp_path / "in.csv"
    with open(source, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows([columns] + [r[-len(columns):] for r in rows])
    reference = tmp_path / "whole.csv"
    whole(source, reference, "tag")
    deidentify_table(source, "note", tmp_path / "o.csv", "tag", chunk_rows=1)
    assert b"\r\n" in reference.read_bytes() and (tmp_path / "o.csv").read_bytes() == reference.read_bytes()
    if columns == ["note"]:
        assert reference.read_bytes().startswith(b'"note"')


def test_parquet_row_group_by_row_group(table, tmp_path):
    source = tmp_path / "in.parquet"
    read_table(table, categorical=False).to_parquet(source, row_group_size=4)
    reference, out = tmp_path / "whole.parquet", tmp_path / "o.parquet"
    counts = whole(source, reference, "tag", HINTS)
    result = deidentify_table(source, "note", out, "tag", hint_columns=HINTS, chunk_rows=3)
    assert result.summary() == counts
    assert pd.read_parquet(out).equals(pd.read_parquet(reference))
    assert pd.read_parquet(out)["zip"].tolist()[:2] == ["02139", "007"]
    assert pd.read_parquet(out)["zip"].isna().tolist()[:3] == [False, False, True]
    deidentify_table(source, "note", tmp_path / "o.csv", "tag", hint_columns=HINTS, chunk_rows=2)
    assert pd.read_csv(tmp_path / "o.csv", dtype=str, keep_default_na=False)["note"].tolist() == \
        pd.read_parquet(reference)["note"].fillna("").tolist()


@pytest.mark.parametrize("bad,message", [(b"3,caf\xe9 seen by Dr. Smith\n", "not UTF-8"),
                                         (b"3,a,b,c\n", "Expected 2 fields")])
def test_bad_input_in_a_later_chunk_leaves_no_output(tmp_path, bad, message, capsys):
    source, out = tmp_path / "in.csv", tmp_path / "o.csv"
    source.write_bytes(b"id,note\n1,Dr. Smith seen 2/03.\n2,pt stable\n" + bad)
    out.write_text("the previous output\n")
    with pytest.raises(DeidInputError, match=message):
        deidentify_table(source, "note", out, "tag", chunk_rows=1)
    assert out.read_text() == "the previous output\n" and sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "o.csv"]
    out.unlink()
    assert main(["text", "--input", str(source), "--column", "note", "--out", str(out), "--mode", "tag"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and not out.exists()


def test_a_header_without_rows_and_a_missing_column_are_refused(tmp_path):
    source = tmp_path / "in.csv"
    source.write_text("id,note\n")
    with pytest.raises(DeidInputError, match="has no records"):
        deidentify_table(source, "note", tmp_path / "o.csv", "tag")
    source.write_text("id,text\n1,hello\n")
    with pytest.raises(DeidInputError, match="column 'note' is not in"):
        deidentify_table(source, "note", tmp_path / "o.csv", "tag", chunk_rows=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_a_table_tells_its_rows_done_and_a_parquet_table_its_rows_first(tmp_path):
    import pandas as pd

    from deid_core.text.table import deidentify_table, table_rows

    table = tmp_path / "notes.parquet"
    pd.DataFrame({"note": ["Dr. Smith seen 2/03.", "", "Call 617-555-0199."] * 3}).to_parquet(table)
    calls = []
    deidentify_table(table, "note", tmp_path / "out.parquet", "tag", chunk_rows=4, progress=calls.append)
    assert calls == [4, 8, 9] and table_rows(table) == 9 and table_rows(tmp_path / "x.csv") is None
