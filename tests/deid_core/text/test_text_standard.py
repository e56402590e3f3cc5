"""The book's standard and ``deid text-evaluate``'s verdict, report and page (deid_core.text.standard,
deid_core.text.evaluation_page; docs/text_evaluation.md): the minimum recall against a value computed by
hand, pass and fail, the leaked documents' ids, XML gold end to end, bad input as one line with nothing
written, and no PHI on the page or in the report."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from deid_core.cli import main
from deid_core.errors import ParameterError
from deid_core.text.evaluate import score
from deid_core.text.spans import TYPES
from deid_core.text.standard import DIRECT, INDIRECT, judge, minima, minimum_recall, release, verdict_text

from test_gold import BILLION_LAUGHS, I2B2_2006, NOTE_2014, i2b2_2014

NOTES = Path(__file__).resolve().parents[2] / "data" / "notes"


def test_every_type_is_direct_or_indirect_as_in_the_book():
    assert set(DIRECT) | set(INDIRECT) == set(TYPES) and not set(DIRECT) & set(INDIRECT)
    assert {"STREET", "PHONE", "EMAIL", "ID", "FIRST_NAME", "LAST_NAME"} <= set(DIRECT)
    assert {"ZIP", "CITY", "STATE", "COUNTRY", "DATE", "AGE", "FACILITY"} <= set(INDIRECT)


def test_the_minimum_recall_is_the_books_formula_under_the_most_likely_attack():
    # 1 - sqrt(0.05 / 0.4) = 1 - sqrt(0.125) = 1 - 0.353553... (the book rounds it to 0.65); 0.1 / 0.4 -> 0.5
    assert minimum_recall(0.05, 0.4) == pytest.approx(0.646447, abs=1e-6)
    assert minimum_recall(0.1, 0.4) == pytest.approx(0.5) and minimum_recall(0.5, 0.4) == 0.0
    m = minima(release())
    assert m["attacks"] == {"T1": 0.4, "T3": 0.27} and m["attack"] == "T1"
    assert m["indirect"]["recall"] == pytest.approx(0.646447, abs=1e-6)
    assert m["direct"] == {"recall": 0.95, "precision": 0.8}
    assert minima(release(pr_attempt=0.1))["attack"] == "T3"       # Pr(breach) 0.27 is then the most likely
    assert minima(release(release_type="public"))["indirect"]["recall"] == pytest.approx(1 - math.sqrt(0.05))
    with pytest.raises(ParameterError) as error:
        release(threshold=1.5)
    assert error.value.names == ("threshold",)


def _spans(doc, *spans):
    return [{"doc": doc, "start": s, "end": e, "type": t} for s, e, t in spans]


def test_a_missed_name_in_one_document_fails_the_type_and_lists_that_document_only():
    gold = [*_spans("a", (0, 5, "LAST_NAME"), (10, 15, "DATE")), *_spans("b", (0, 5, "LAST_NAME")),
            *[s for i in range(8) for s in _spans(f"c{i}", (0, 5, "LAST_NAME"))]]
    found = [g for g in gold if g["doc"] != "a" or g["type"] == "DATE"]
    judged = judge(*score(gold, found), release())
    assert not judged["meets"] and judged["failing"] == ["LAST_NAME"]
    assert judged["types"]["LAST_NAME"]["failed"] == ["all_or_nothing_recall"]  # 9 of 10 documents
    assert judged["types"]["LAST_NAME"]["leaked"] == ["a"] and judged["leaked_documents"] == ["a"]
    assert judged["types"]["DATE"]["meets"]
    assert "1 of the 2 PHI types in the gold fall short (LAST_NAME: all-or-nothing recall 0.9 < 0.95)" in \
        verdict_text(judged, 10)
    passing = judge(*score(gold, gold), release())
    assert passing["meets"] and passing["leaked_documents"] == [] and "meets the standard" in verdict_text(passing, 10)


def test_19_of_20_documents_meet_095_and_a_precision_under_the_minimum_fails():
    gold = [s for i in range(20) for s in _spans(f"d{i}", (0, 5, "LAST_NAME"), (10, 15, "DATE"))]
    found = [g for g in gold if g["doc"] != "d0" or g["type"] != "LAST_NAME"]
    assert judge(*score(gold, found[1:]), release())["types"]["DATE"]["leaked"] == ["d0"]  # once, though a group too
    found += [s for i in range(20) for s in _spans(f"d{i}", (30, 35, "DATE"), (40, 45, "DATE"))]  # 20 of 60 true
    judged = judge(*score(gold, found), release())
    assert judged["types"]["LAST_NAME"]["meets"] and judged["types"]["DATE"]["failed"] == ["precision"]
    assert "DATE: precision 0.3333 < 0.7" in verdict_text(judged, 20)


def _run(args, capsys):
    code = main(["text-evaluate", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_2014_xml_gold_end_to_end_the_page_and_report_hold_no_phi(tmp_path, capsys):
    folder = tmp_path / "gold"
    folder.mkdir()
    (folder / "n1.xml").write_text(i2b2_2014(), encoding="utf-8")
    (folder / "n2.xml").write_text(I2B2_2006, encoding="utf-8")
    predicted = tmp_path / "pred.jsonl"  # finds everything but Quill in n1
    text2006 = "Call 555-0199 in Dover."
    spans = [("n1", NOTE_2014, v, "X") for v in ("2069-04-07", "Harlan Oakes", "68", "Fairview")]
    spans += [("102", text2006, v, "X") for v in ("555-0199", "Dover")]
    predicted.write_text("".join(json.dumps({"doc": d, "start": t.index(v), "end": t.index(v) + len(v),
                                             "type": "LAST_NAME"}) + "\n" for d, t, v, _ in spans))
    report, page = tmp_path / "r.json", tmp_path / "p.html"
    code, out, err = _run(["--gold", folder, "--predicted", predicted, "--report", report, "--html", page], capsys)
    assert code == 0, err
    r = json.loads(report.read_text())
    assert r["layout"] == "i2b2-2006,i2b2-2014" and r["documents"] == 3 and r["unscored"] == {"PROFESSION": 1}
    s = r["standard"]
    assert not s["meets"] and "LAST_NAME" in s["failing"] and s["types"]["LAST_NAME"]["leaked"] == ["101", "n1"]
    assert s["leaked_documents"] == ["101", "n1"] and "does NOT meet" in out and "3 documents, 2 leaked" in out
    html = page.read_text()
    assert "<table>" in html and "n1" in html and "does NOT meet" in html and "generated" in html
    phi = ["Harlan", "Oakes", "Quill", "Fairview", "2069-04-07", "Smith", "St. Ives", "555-0199", "Dover", "nurse",
           "4471-2", "11/02"]
    for text in (html, report.read_text(), out):
        assert not [v for v in phi if v in text]
    code, out, err = _run(["--gold", folder / "n2.xml"], capsys)  # the detector on the XML's own notes
    assert code == 0 and "MB/s" in out and "2 documents" in out, err


def test_json_lines_gold_on_the_shipped_notes_and_a_missed_span_listed(tmp_path, capsys):
    gold = [json.loads(line) for line in (NOTES / "gold.jsonl").read_text().splitlines()]
    missed = next(g for g in gold if g["type"] == "LAST_NAME")
    predicted = tmp_path / "pred.jsonl"
    predicted.write_text("".join(json.dumps(g) + "\n" for g in gold if g is not missed))
    report = tmp_path / "r.json"
    code, out, err = _run(["--gold", NOTES / "gold.jsonl", "--notes", NOTES / "notes.jsonl", "--predicted", predicted,
                           "--report", report], capsys)
    s = json.loads(report.read_text())["standard"]
    assert code == 0 and s["types"]["LAST_NAME"]["leaked"] == [missed["doc"]]
    assert s["leaked_documents"] == [missed["doc"]]
    assert s["meets"] == (s["types"]["LAST_NAME"]["all_or_nothing_recall"] >= 0.95) and "1 leaked" in out


@pytest.mark.parametrize("gold, extra, message", [
    ("malformed.xml", [], "not well-formed XML"), ("laughs.xml", [], "document type declaration"),
    ("outside.xml", [], "fall outside the text"), ("n1.xml", ["--notes", "notes.jsonl"], "--notes is not taken"),
    ("n1.xml", ["--use-hints"], "--use-hints needs notes"), ("gold.jsonl", [], "--notes is required"),
    ("empty", [], "needs .xml files")])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path, capsys, gold, extra, message):
    (tmp_path / "malformed.xml").write_text(i2b2_2014()[:-20], encoding="utf-8")
    (tmp_path / "laughs.xml").write_text(BILLION_LAUGHS, encoding="utf-8")
    (tmp_path / "outside.xml").write_text(
        i2b2_2014(tags='<NAME id="P0" start="5" end="500" TYPE="PATIENT" comment=""/>'), encoding="utf-8")
    (tmp_path / "n1.xml").write_text(i2b2_2014(), encoding="utf-8")
    (tmp_path / "notes.jsonl").write_text('{"doc": "n1", "text": "x"}\n')
    (tmp_path / "gold.jsonl").write_text('{"doc": "n1", "start": 0, "end": 1, "type": "DATE"}\n')
    (tmp_path / "empty").mkdir()
    outputs = [tmp_path / "r.json", tmp_path / "p.html"]
    extra = [str(tmp_path / a) if a.endswith(".jsonl") else a for a in extra]
    code, out, err = _run(["--gold", tmp_path / gold, *extra, "--report", outputs[0], "--html", outputs[1]], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not any(o.exists() for o in outputs)
