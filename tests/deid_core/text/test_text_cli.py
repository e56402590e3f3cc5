"""``deid text`` and ``deid text-evaluate`` (docs/text.md, "The command"): other columns unchanged, bad
input one line and exit 2 with no output."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from deid_core.cli import main

NOTES = Path(__file__).resolve().parents[2] / "data" / "notes"
KEY = "a test key of 32 bytes, not real"


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    return path


@pytest.fixture
def table(tmp_path):
    return write_csv(tmp_path / "in.csv", [["id", "mrn", "name", "note"],
                                           ["007", "0012345", "Jane Doe", "Dr. villegas saw doe, jane on 2/03. MRN 0012345."],
                                           ["008", "", "", ""]])


@pytest.mark.parametrize("mode", ["redact", "tag", "surrogate", "generalize"])
def test_every_mode_rewrites_the_notes_and_keeps_the_other_columns(table, tmp_path, mode, capsys, monkeypatch):
    monkeypatch.setenv("DEID_KEY", KEY)
    out, report = tmp_path / "out.csv", tmp_path / "r.json"
    assert main(["text", "--input", str(table), "--column", "note", "--out", str(out), "--mode", mode,
                 "--hints", "name=name,mrn=mrn", "--report", str(report)]) == 0
    df = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert df["id"].tolist() == ["007", "008"] and df["mrn"].tolist() == ["0012345", ""]
    note = df["note"][0]
    assert not any(v in note for v in ("villegas", "doe", "jane", "2/03", "0012345")), note
    r = json.loads(report.read_text())
    assert r["documents"] == 1 and r["found"]["LAST_NAME"] == 2 and "deid text:" in capsys.readouterr().out


def test_parquet_in_and_out(table, tmp_path):
    src = tmp_path / "in.parquet"
    pd.read_csv(table, dtype=str, keep_default_na=False).to_parquet(src)
    out = tmp_path / "out.parquet"
    assert main(["text", "--input", str(src), "--column", "note", "--out", str(out), "--mode", "tag"]) == 0
    df = pd.read_parquet(out)
    assert df["id"].tolist() == ["007", "008"] and "<LAST_NAME:1>" in df["note"][0]


@pytest.mark.parametrize("content,message", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary file"), (b"id,note\n1,caf\xe9\n", "UTF-8"),
    (b"", "empty file"), (b"id,text\n1,hello\n", "column 'note' is not in")])
def test_bad_input_is_one_line_exit_2_and_no_output(tmp_path, content, message, capsys):
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_bytes(content)
    assert main(["text", "--input", str(src), "--column", "note", "--out", str(out), "--mode", "redact"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()


def test_surrogate_without_a_key_is_refused(table, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DEID_KEY", raising=False)
    assert main(["text", "--input", str(table), "--column", "note", "--out", str(tmp_path / "o.csv"),
                 "--mode", "surrogate"]) == 2
    assert "a key is required" in capsys.readouterr().err


def test_text_evaluate_prints_the_table_and_writes_the_report(tmp_path, capsys):
    report = tmp_path / "e.json"
    assert main(["text-evaluate", "--gold", str(NOTES / "gold.jsonl"), "--notes", str(NOTES / "notes.jsonl"),
                 "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert "all-or-nothing" in out and "MB/s" in out
    r = json.loads(report.read_text())
    assert r["types"]["ALL"]["gold"] == sum(1 for _ in open(NOTES / "gold.jsonl"))
    assert main(["text-evaluate", "--gold", str(NOTES / "gold.jsonl"), "--notes", str(NOTES / "notes.jsonl"),
                 "--predicted", str(NOTES / "gold.jsonl")]) == 0
    assert " 1.000   1.000          1.000" in capsys.readouterr().out


def test_workers_give_the_same_column_in_the_same_order(monkeypatch, tmp_path):
    from deid_core.text import Surrogates, column

    notes = [json.loads(line) for line in (NOTES / "notes.jsonl").read_text(encoding="utf-8").splitlines()][:60]
    texts = [n["text"] for n in notes] + [None]
    hints = [n["hints"] for n in notes] + [{}]
    patients = [n["hints"]["mrn"] for n in notes] + [""]
    monkeypatch.setattr(column, "SLICE_CHARS", 2_000)  # several slices of a small column
    runs = [column.deidentify_notes(texts, "surrogate", hints=hints, patients=patients, surrogates=Surrogates(KEY.encode()),
                                    workers=workers, parallel_from=0) for workers in (1, 2)]
    assert runs[0].notes == runs[1].notes and runs[0].summary() == runs[1].summary() and runs[1].notes[-1] is None
    out = tmp_path / "o.csv"
    assert main(["text", "--input", str(NOTES / "notes_sample.csv"), "--column", "note", "--out", str(out),
                 "--mode", "tag", "--workers", "2"]) == 0
    assert main(["text", "--input", str(NOTES / "notes_sample.csv"), "--column", "note", "--out", str(out),
                 "--mode", "tag", "--workers", "0"]) == 2


def test_the_command_leaves_its_callers_garbage_collector_as_it_was(table, tmp_path, monkeypatch):
    """``deid text`` freezes what its process holds out of the collector's walks while it runs (docs/text.md,
    "Measured"), and undoes it: a caller running the command in its own process, with or without objects it froze
    itself, finds the collector as it left it."""
    import gc

    calls = []
    real_freeze, real_unfreeze = gc.freeze, gc.unfreeze
    monkeypatch.setattr(gc, "freeze", lambda: (real_freeze(), calls.append(("freeze", gc.get_freeze_count()))))
    monkeypatch.setattr(gc, "unfreeze", lambda: (calls.append(("unfreeze", 0)), real_unfreeze()))
    assert gc.get_freeze_count() == 0
    assert main(["text", "--input", str(table), "--column", "note", "--out", str(tmp_path / "a.csv"), "--mode", "tag"]) == 0
    assert [c[0] for c in calls] == ["freeze", "unfreeze"] and calls[0][1] > 0  # frozen while it ran
    assert gc.get_freeze_count() == 0  # and not after
    real_freeze()
    try:
        calls.clear()
        assert main(["text", "--input", str(table), "--column", "note", "--out", str(tmp_path / "b.csv"),
                     "--mode", "tag"]) == 0
        assert calls == [] and gc.get_freeze_count() > 0  # the caller's own frozen objects: left frozen, untouched
    finally:
        real_unfreeze()
