"""Reading gold for ``deid text-evaluate`` (deid_core.text.gold; docs/text_evaluation.md, "Gold"): i2b2 2014
standoff XML, i2b2 2006 inline XML and folders of them, the type mapping, the offsets, and bad input as one
line (a malformed file, a billion laughs, offsets off the text, an unknown layout, an empty folder, non-UTF-8)."""
from __future__ import annotations

import time

import pytest

from deid_core.errors import DeidInputError, ParameterError
from deid_core.text.gold import I2B2_TYPES, UNSCORED, read_gold
from deid_core.text.spans import TYPES

NOTE_2014 = "Record date: 2069-04-07\nMr. Harlan Oakes, 68 yo, seen by Dr. Quill at Fairview; nurse present.\n"


def tag(kind: str, value: str, number: int, text: str = NOTE_2014, tag_name: str = "NAME") -> str:
    start = text.index(value)
    return (f'<{tag_name} id="P{number}" start="{start}" end="{start + len(value)}" text="{value}" TYPE="{kind}" '
            'comment="" />')


def i2b2_2014(text: str = NOTE_2014, tags: str | None = None) -> str:
    if tags is None:
        tags = "".join([tag("DATE", "2069-04-07", 0, tag_name="DATE"), tag("PATIENT", "Harlan Oakes", 1),
                        tag("AGE", "68", 2, tag_name="AGE"), tag("DOCTOR", "Quill", 3),
                        tag("HOSPITAL", "Fairview", 4, tag_name="LOCATION"),
                        tag("PROFESSION", "nurse", 5, tag_name="PROFESSION")])
    return (f'<?xml version="1.0" encoding="UTF-8" ?>\n<deIdi2b2>\n<TEXT><![CDATA[{text}]]></TEXT>\n<TAGS>\n{tags}\n'
            '</TAGS>\n</deIdi2b2>\n')


I2B2_2006 = """<ROOT>
<RECORD ID="101">
<TEXT>
Admitted <PHI TYPE="DATE">11/02</PHI> to <PHI TYPE="HOSPITAL">St. Ives</PHI>.
Seen by <PHI TYPE="DOCTOR">Smith</PHI>, MRN <PHI TYPE="ID">4471-2</PHI>.
</TEXT>
</RECORD>
<RECORD ID="102">
<TEXT>Call <PHI TYPE="PHONE">555-0199</PHI> in <PHI TYPE="LOCATION">Dover</PHI>.</TEXT>
</RECORD>
</ROOT>
"""


def test_the_mapping_covers_every_i2b2_type_with_one_of_ours():
    assert set(I2B2_TYPES.values()) <= set(TYPES) and not set(UNSCORED) & set(I2B2_TYPES)
    assert {I2B2_TYPES[t] for t in ("PATIENT", "DOCTOR", "USERNAME")} == {"LAST_NAME"}
    assert {I2B2_TYPES[t] for t in ("PHONE", "FAX")} == {"PHONE"} and I2B2_TYPES["MEDICALRECORD"] == "MRN"
    assert {I2B2_TYPES[t] for t in ("HEALTHPLAN", "ACCOUNT")} == {"ACCOUNT"}
    assert {I2B2_TYPES[t] for t in ("IPADDR", "VEHICLE", "BIOID", "IDNUM")} == {"ID"}
    assert {I2B2_TYPES[t] for t in ("HOSPITAL", "ORGANIZATION", "ROOM", "DEPARTMENT")} == {"FACILITY"}
    assert I2B2_TYPES["LOCATION-OTHER"] == "CITY"


def test_2014_standoff_tags_keep_their_offsets_the_file_stem_names_the_document(tmp_path):
    path = tmp_path / "110-01.xml"
    path.write_text(i2b2_2014(), encoding="utf-8")
    gold = read_gold(path)
    assert gold.layout == "i2b2-2014" and gold.notes == [{"doc": "110-01", "text": NOTE_2014}]
    got = {(NOTE_2014[s["start"]:s["end"]], s["type"]) for s in gold.spans}
    assert got == {("2069-04-07", "DATE"), ("Harlan Oakes", "LAST_NAME"), ("68", "AGE"), ("Quill", "LAST_NAME"),
                   ("Fairview", "FACILITY")}
    assert gold.unscored == {"PROFESSION": 1} and all(s["doc"] == "110-01" for s in gold.spans)


def test_2006_inline_tags_give_offsets_on_the_text_without_tags_one_document_per_record(tmp_path):
    path = tmp_path / "train.xml"
    path.write_text(I2B2_2006, encoding="utf-8")
    gold = read_gold(path)
    texts = {n["doc"]: n["text"] for n in gold.notes}
    assert gold.layout == "i2b2-2006" and list(texts) == ["101", "102"]
    assert texts["102"] == "Call 555-0199 in Dover." and "<PHI" not in texts["101"]
    got = [(s["doc"], texts[s["doc"]][s["start"]:s["end"]], s["type"]) for s in gold.spans]
    assert got == [("101", "11/02", "DATE"), ("101", "St. Ives", "FACILITY"), ("101", "Smith", "LAST_NAME"),
                   ("101", "4471-2", "ID"), ("102", "555-0199", "PHONE"), ("102", "Dover", "CITY")]


def test_a_folder_reads_each_file_and_needs_no_notes(tmp_path):
    (tmp_path / "a.xml").write_text(i2b2_2014(), encoding="utf-8")
    (tmp_path / "b.xml").write_text(I2B2_2006, encoding="utf-8")
    (tmp_path / "readme.txt").write_text("not gold")
    gold = read_gold(tmp_path)
    assert [n["doc"] for n in gold.notes] == ["a", "101", "102"] and gold.layout == "i2b2-2006,i2b2-2014"
    with pytest.raises(ParameterError, match="notes is not taken"):
        read_gold(tmp_path, tmp_path / "notes.jsonl")


def test_json_lines_gold_needs_notes_and_spans_inside_them(tmp_path):
    gold, notes = tmp_path / "gold.jsonl", tmp_path / "notes.jsonl"
    notes.write_text('{"doc": "d1", "text": "Seen by Dr. Quill.\u2028"}\n', encoding="utf-8")  # not a line end
    gold.write_text('{"doc": "d1", "start": 12, "end": 17, "type": "LAST_NAME"}\n'
                    '{"doc": "d1", "start": 0, "end": 4, "type": "PROFESSION"}\n')
    read = read_gold(gold, notes)
    assert read.spans == [{"doc": "d1", "start": 12, "end": 17, "type": "LAST_NAME"}]
    assert read.unscored == {"PROFESSION": 1} and read.notes[0]["text"] == "Seen by Dr. Quill.\u2028"
    with pytest.raises(ParameterError, match="notes is required") as error:
        read_gold(gold)
    assert error.value.names == ("notes",)
    for bad, message in (('{"doc": "d1", "start": 12, "end": 99, "type": "LAST_NAME"}', "not offsets"),
                         ('{"doc": "d2", "start": 0, "end": 1, "type": "LAST_NAME"}', "not among the notes"),
                         ('{"doc": "d1", "start": 0, "end": 1, "type": "NAME"}', "type 'NAME' is not one of")):
        gold.write_text(bad + "\n")
        with pytest.raises(DeidInputError, match=message):
            read_gold(gold, notes)


BILLION_LAUGHS = ('<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
                  + "".join(f' <!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">\n'
                            for i in range(1, 10))
                  + ']>\n<deIdi2b2><TEXT>&lol9;</TEXT><TAGS/></deIdi2b2>\n')


@pytest.mark.parametrize("name, content, message", [
    ("malformed.xml", i2b2_2014().replace("</TAGS>", ""), r"malformed.xml:\d+: not well-formed XML"),
    ("laughs.xml", BILLION_LAUGHS, r"laughs.xml:2: a document type declaration \(<!DOCTYPE>\) is refused"),
    ("outside.xml", i2b2_2014(tags='<NAME id="P0" start="90" end="999" text="x" TYPE="PATIENT" comment=""/>'),
     r"<NAME id='P0'>: start 90 and end 999 fall outside the text"),
    ("differs.xml",
     i2b2_2014(tags=tag("PATIENT", "Harlan Oakes", 7).replace('text="Harlan Oakes"', 'text="Harlan Oak"')),
     r"<NAME id='P7'>: its text attribute differs from the text"),
    ("unknown.xml", i2b2_2014(tags=tag("ALIEN", "Quill", 3)), r"<NAME id='P3'>: unknown i2b2 TYPE 'ALIEN'"),
    ("layout.xml", "<notes><note>hello</note></notes>", r"unknown layout: root element <notes>"),
    ("latin.xml", None, r"latin.xml:4: not UTF-8 text \(byte 0xe9\)"),
    ("notags.xml", i2b2_2014(tags=""), "no gold span to score"),
])
def test_bad_gold_is_one_line_naming_the_file(tmp_path, name, content, message):
    path = tmp_path / name
    if content is None:
        path.write_bytes(i2b2_2014().replace("Harlan", "H\u00e9l\u00e8ne").encode("latin-1"))
    else:
        path.write_text(content, encoding="utf-8")
    t0 = time.perf_counter()
    with pytest.raises(DeidInputError, match=message) as error:
        read_gold(path)
    assert time.perf_counter() - t0 < 1 and "\n" not in str(error.value) and name in str(error.value)


def test_an_empty_folder_and_a_repeated_document_are_refused(tmp_path):
    with pytest.raises(DeidInputError, match="needs .xml files"):
        read_gold(tmp_path)
    (tmp_path / "a.xml").write_text(I2B2_2006, encoding="utf-8")
    (tmp_path / "b.xml").write_text(I2B2_2006, encoding="utf-8")
    with pytest.raises(DeidInputError, match="document '101' is also in"):
        read_gold(tmp_path)
