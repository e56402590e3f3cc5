"""The optional second pass (docs/text.md, "A second pass"): the owner's function only rejects detections, never a
hint's; off unless named; its rejections counted; a bad one is one line, exit 2, nothing written."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from deid_core.cli import main
from deid_core.text.column import deidentify_notes
from deid_core.text.second_pass import SecondPass

NOTES = Path(__file__).resolve().parents[2] / "data" / "notes"
SAMPLE = NOTES / "notes_sample.csv"
PASSES = '''
def no_places(texts, spans):
    return [[s.type not in ("CITY", "STATE") for s in note] for note in spans]

def reject_all(texts, spans):
    return [[False] * len(note) for note in spans]

def wrong_shape(texts, spans):
    return [[True]]

def one_flag_each(texts, spans):
    return [[True] for note in spans]

def fails(texts, spans):
    raise RuntimeError("model file missing")

not_a_function = 3
'''


@pytest.fixture
def passes(tmp_path: Path) -> Path:
    path = tmp_path / "passes.py"
    path.write_text(PASSES, encoding="utf-8")
    return path


def test_rejected_spans_stay_and_are_counted(passes, tmp_path, capsys):
    out, report = tmp_path / "out.csv", tmp_path / "r.json"
    plain = tmp_path / "plain.csv"
    assert main(["text", "--input", str(SAMPLE), "--column", "note", "--out", str(plain), "--mode", "tag"]) == 0
    assert main(["text", "--input", str(SAMPLE), "--column", "note", "--out", str(out), "--mode", "tag",
                 "--second-pass", f"{passes}:no_places", "--report", str(report)]) == 0
    assert "<CITY:" in plain.read_text(encoding="utf-8") and "<CITY:" not in out.read_text(encoding="utf-8")
    r = json.loads(report.read_text())
    assert r["second_pass"] == f"{passes}:no_places" and r["rejected_by_second_pass"]["CITY"] > 0
    assert "CITY" not in r["found"]


def test_a_hint_is_never_rejected(passes, tmp_path):
    out = tmp_path / "out.csv"
    assert main(["text", "--input", str(SAMPLE), "--column", "note", "--out", str(out), "--mode", "tag",
                 "--hints", "name=name,mrn=mrn", "--second-pass", f"{passes}:reject_all"]) == 0
    import pandas as pd

    source = pd.read_csv(SAMPLE, dtype=str, keep_default_na=False)
    done = pd.read_csv(out, dtype=str, keep_default_na=False)
    for mrn, note in zip(source["mrn"], done["note"]):
        assert mrn.lstrip("0") not in note  # the record's own MRN is replaced whatever the second pass says


@pytest.mark.parametrize("name, message", [
    ("{passes}:wrong_shape", "lists of flags for 12 notes"), ("{passes}:one_flag_each", "one True or False per span"), ("{passes}:fails", "RuntimeError: model file missing"),
    ("{passes}:not_a_function", "has no function"), ("{passes}:missing", "has no function"),
    ("no_such_module_here:keep", "cannot be loaded"), ("{tmp}/nowhere.py:keep", "no file"), ("keep", "module:function"),
])
def test_a_bad_second_pass_is_one_line_and_writes_nothing(passes, tmp_path, capsys, name, message):
    out = tmp_path / "out.csv"
    argv = ["text", "--input", str(SAMPLE), "--column", "note", "--out", str(out), "--mode", "tag",
            "--second-pass", name.format(passes=passes, tmp=tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err
    assert not out.exists()


def test_worker_processes_load_it_by_name(passes):
    notes = [json.loads(line)["text"] for line in (NOTES / "notes.jsonl").read_text(encoding="utf-8").splitlines()]
    second = SecondPass(f"{passes}:no_places")
    one = deidentify_notes(notes, "tag", second_pass=second)
    two = deidentify_notes(notes, "tag", second_pass=second, workers=2, parallel_from=0)
    assert one.notes == two.notes and one.rejected == two.rejected and one.rejected["CITY"] > 0


def test_text_evaluate_scores_with_and_without_it(passes, tmp_path, capsys):
    """``deid text-evaluate --second-pass``: the table, verdict and page with it, the figures without it beside
    them; a second pass rejecting every place loses the places' recall and the verdict says so."""
    report, page = tmp_path / "r.json", tmp_path / "p.html"
    assert main(["text-evaluate", "--gold", str(NOTES / "gold.jsonl"), "--notes", str(NOTES / "notes.jsonl"),
                 "--second-pass", f"{passes}:no_places", "--report", str(report), "--html", str(page)]) == 0
    r = json.loads(report.read_text())
    assert r["types_before_second_pass"]["CITY"]["recall"] == 1.0 and r["types"]["CITY"]["recall"] < 0.5
    assert not r["standard"]["meets"] and "CITY" in r["standard"]["verdict"]
    assert "The second pass" in page.read_text(encoding="utf-8")
    assert "second pass" in capsys.readouterr().out
    assert main(["text-evaluate", "--gold", str(NOTES / "gold.jsonl"), "--notes", str(NOTES / "notes.jsonl"),
                 "--predicted", str(NOTES / "gold.jsonl"), "--second-pass", f"{passes}:no_places"]) == 2
    assert "cannot be given with --predicted" in capsys.readouterr().err
