"""Gold standard for ``deid text-evaluate``: standoff JSON lines (``{doc, start, end, type}``, the notes beside
them), or i2b2 XML holding both the notes and their PHI: the 2014 layout (``<deIdi2b2>``: the note in ``<TEXT>``,
standoff tags with ``start``/``end`` over it in ``<TAGS>``), the 2006 layout (``<ROOT>`` of ``<RECORD ID>``s, PHI
tagged inline as ``<PHI TYPE>``; offsets on the text with the tags removed), or a folder of such files
(docs/text_evaluation.md, "Gold").

i2b2 types become the detector's (:data:`I2B2_TYPES`); a profession is not an identifier the book asks a text
anonymizer to find (El Emam & Arbuckle, ch. 8, Table 8-1), so it is counted and left out of the scores
(:data:`UNSCORED`). XML is parsed by the standard library with no document type declaration allowed: an entity
declared in one (a "billion laughs" file) is refused before it can be expanded."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence
from xml.parsers import expat

from ..errors import DeidInputError, ParameterError, literal
from .spans import TYPES

#: i2b2 PHI types (the 2014 subcategories and the 2006 types) -> the detector's types (deid_core.text.spans).
#: Names are one type, as a gold span is found by any overlapping detection whatever its type; a place that
#: is no part of an address is scored as a city, a room or department as part of the facility.
I2B2_TYPES = {
    "PATIENT": "LAST_NAME", "DOCTOR": "LAST_NAME", "USERNAME": "LAST_NAME",
    "PHONE": "PHONE", "FAX": "PHONE", "EMAIL": "EMAIL", "URL": "URL", "IPADDR": "ID",
    "SSN": "SSN", "MEDICALRECORD": "MRN", "HEALTHPLAN": "ACCOUNT", "ACCOUNT": "ACCOUNT", "LICENSE": "LICENSE",
    "DEVICE": "DEVICE", "VEHICLE": "ID", "BIOID": "ID", "IDNUM": "ID", "ID": "ID",
    "DATE": "DATE", "AGE": "AGE",
    "HOSPITAL": "FACILITY", "ORGANIZATION": "FACILITY", "ROOM": "FACILITY", "DEPARTMENT": "FACILITY",
    "STREET": "STREET", "CITY": "CITY", "STATE": "STATE", "ZIP": "ZIP", "COUNTRY": "COUNTRY",
    "LOCATION-OTHER": "CITY", "LOCATION": "CITY",
}
#: i2b2 types counted but not scored: not among the identifiers of El Emam & Arbuckle, ch. 8, Table 8-1.
UNSCORED = ("PROFESSION",)


@dataclass
class Gold:
    """The gold spans (``{doc, start, end, type}``), the notes (``{doc, text}``, with ``hints`` from JSON
    lines), the layout read (``jsonl``, ``i2b2-2014``, ``i2b2-2006`` or both, comma-separated) and the spans
    counted but not scored, per i2b2 type."""

    spans: list[dict]
    notes: list[dict]
    layout: str
    unscored: dict[str, int] = field(default_factory=dict)


def read_jsonl(path: str | Path, required: Sequence[str]) -> list[dict]:
    """The records of a JSON-lines file, each with ``required`` keys; bad input is one line naming the line."""
    records = []
    for number, line in enumerate(_text(Path(path)).split("\n"), 1):  # not splitlines: U+2028 may stand in a string
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DeidInputError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(record, dict) or any(k not in record for k in required):
            raise DeidInputError(f"{path}:{number}: a record needs the keys {', '.join(required)}")
        records.append(record)
    if not records:
        raise DeidInputError(f"{path}: no records")
    return records


def read_spans(path: str | Path, texts: Mapping[str, object], types: Sequence[str] | None = None) -> list[dict]:
    """Standoff spans ``{doc, start, end, type}`` of a JSON-lines file, each on a note of ``texts`` (doc id ->
    text, or (text, hints)), inside its text, of one of ``types`` (any, when None); else one line naming the line."""
    spans = []
    for number, r in enumerate(read_jsonl(path, ("doc", "start", "end", "type")), 1):
        doc, start, end, kind = str(r["doc"]), r["start"], r["end"], r["type"]
        text = texts.get(doc)
        text = text[0] if isinstance(text, tuple) else text
        if text is None:
            raise DeidInputError(f"{path}: record {number}: document {doc!r} is not among the notes")
        if not (type(start) is int and type(end) is int and 0 <= start < end <= len(text)):
            raise DeidInputError(f"{path}: record {number}: start {start!r} and end {end!r} are not offsets of a "
                                 f"span inside document {doc!r} ({len(text)} characters)")
        if types is not None and kind not in types:
            raise DeidInputError(f"{path}: record {number}: type {kind!r} is not one of {', '.join(types)}")
        spans.append({"doc": doc, "start": start, "end": end, "type": kind})
    return spans


def _notes(path: str | Path) -> dict[str, tuple[str, object]]:
    """Doc id -> (text, hints) of a JSON-lines file of notes; a repeated id or a text that is not a string is
    refused."""
    out: dict[str, tuple[str, object]] = {}
    for number, r in enumerate(read_jsonl(path, ("doc", "text")), 1):
        doc = str(r["doc"])
        if doc in out or not isinstance(r["text"], str):
            raise DeidInputError(f"{path}: record {number}: " + (f"document {doc!r} repeated" if doc in out
                                                                 else "text must be a string"))
        out[doc] = (r["text"], r.get("hints"))
    return out


def read_gold(gold: str | Path, notes: str | Path | None = None) -> Gold:
    """The gold of ``gold`` (JSON lines, an i2b2 XML file or a folder of them) and its notes: from ``notes``
    (JSON lines ``{doc, text}``) for JSON-lines gold, from the XML itself otherwise (``notes`` is then refused)."""
    path = Path(gold)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() == ".xml" and p.is_file())
        if not files:
            raise DeidInputError(f"{gold}: a folder of gold needs .xml files (i2b2 2014 or 2006), found none")
    elif _text(path).lstrip("\ufeff \t\r\n").startswith("<"):
        files = [path]
    else:
        if notes is None:
            raise ParameterError("{notes} is required with JSON-lines gold (" + literal(gold) + ")", "notes")
        texts = _notes(notes)
        spans, unscored = [], Counter()
        for span in read_spans(path, texts, TYPES + UNSCORED):
            if span["type"] in UNSCORED:
                unscored[span["type"]] += 1
            else:
                spans.append(span)
        out = Gold(spans, [{"doc": d, "text": t, "hints": h} for d, (t, h) in texts.items()], "jsonl",
                   dict(sorted(unscored.items())))
        return _scored(out, gold)
    if notes is not None:
        raise ParameterError("{notes} is not taken with i2b2 XML gold (" + literal(gold) + "): the notes are in it",
                             "notes")
    out = Gold([], [], "")
    layouts, unscored, seen = set(), Counter(), {}
    for file in files:
        for doc, text, spans, layout in _read_xml(file):
            if doc in seen:
                raise DeidInputError(f"{file}: document {doc!r} is also in {seen[doc]}")
            seen[doc] = file
            layouts.add(layout)
            out.notes.append({"doc": doc, "text": text})
            for start, end, kind in spans:
                if kind in UNSCORED:
                    unscored[kind] += 1
                else:
                    out.spans.append({"doc": doc, "start": start, "end": end, "type": I2B2_TYPES[kind]})
    out.layout, out.unscored = ",".join(sorted(layouts)), dict(sorted(unscored.items()))
    return _scored(out, gold)


def _scored(gold: Gold, path: str | Path) -> Gold:
    if not gold.spans:
        raise DeidInputError(f"{path}: no gold span to score" + (f" (only {', '.join(gold.unscored)})"
                                                                  if gold.unscored else ""))
    return gold


def _text(path: Path) -> str:
    """The file as text: UTF-8 only, else one line naming the line of the first byte that is not."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise DeidInputError(f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x})") from None


def _refuse_doctype(*_args) -> None:
    raise _Doctype()


class _Doctype(Exception):
    pass


def _parse(path: Path) -> ET.Element:
    """The root element; a document type declaration (where entities are declared) or malformed XML is refused,
    naming the line."""
    text = _text(path)
    check = expat.ParserCreate()
    check.StartDoctypeDeclHandler = _refuse_doctype
    try:
        check.Parse(text, True)
    except _Doctype:
        raise DeidInputError(f"{path}:{check.CurrentLineNumber}: a document type declaration (<!DOCTYPE>) is refused: "
                             "its entities could expand without bound") from None
    except expat.ExpatError as exc:
        raise DeidInputError(f"{path}:{exc.lineno}: not well-formed XML ({expat.ErrorString(exc.code)}, "
                             f"column {exc.offset + 1})") from None
    return ET.fromstring(text)


def _read_xml(path: Path) -> list[tuple[str, str, list[tuple[int, int, str]], str]]:
    """(doc id, text, spans with i2b2 types, layout) per document of one XML file."""
    root = _parse(path)
    if root.tag == "deIdi2b2":
        return [(path.stem, *_read_2014(path, root), "i2b2-2014")]
    if root.tag == "ROOT" and len(root) and all(r.tag == "RECORD" for r in root):
        return [(*_read_2006(path, record, n), "i2b2-2006") for n, record in enumerate(root, 1)]
    raise DeidInputError(f"{path}: unknown layout: root element <{root.tag}>, expected <deIdi2b2> (i2b2 2014) or "
                         "<ROOT> of <RECORD>s (i2b2 2006)")


def _i2b2_type(path: Path, where: str, kind: str | None) -> str:
    kind = (kind or "").upper()
    if kind not in I2B2_TYPES and kind not in UNSCORED:
        raise DeidInputError(f"{path}: {where}: unknown i2b2 TYPE {kind!r}")
    return kind


def _read_2014(path: Path, root: ET.Element) -> tuple[str, list[tuple[int, int, str]]]:
    node = root.find("TEXT")
    if node is None:
        raise DeidInputError(f"{path}: <deIdi2b2> without <TEXT>")
    text, spans, tags = node.text or "", [], root.find("TAGS")
    for tag in tags if tags is not None else ():
        where = f"<{tag.tag} id={tag.get('id', '?')!r}>"
        try:
            start, end = int(tag.get("start", "")), int(tag.get("end", ""))
        except ValueError:
            raise DeidInputError(f"{path}: {where}: start and end must be integers") from None
        if not 0 <= start < end <= len(text):
            raise DeidInputError(f"{path}: {where}: start {start} and end {end} fall outside the text "
                                 f"({len(text)} characters)")
        if tag.get("text") is not None and tag.get("text") != text[start:end]:
            raise DeidInputError(f"{path}: {where}: its text attribute differs from the text at {start}:{end}")
        spans.append((start, end, _i2b2_type(path, where, tag.get("TYPE"))))
    return text, spans


def _read_2006(path: Path, record: ET.Element, number: int) -> tuple[str, str, list[tuple[int, int, str]]]:
    doc, node = record.get("ID"), record.find("TEXT")
    if not doc or node is None:
        raise DeidInputError(f"{path}: <RECORD> number {number} needs an ID and a <TEXT>")
    parts, spans = [node.text or ""], []
    at = len(parts[0])  # the length of the text so far: where the next PHI begins
    for phi in node:
        where = f"<RECORD ID={doc!r}>"
        if phi.tag != "PHI" or len(phi):
            raise DeidInputError(f"{path}: {where}: only <PHI TYPE> tags, not nested, may stand in its <TEXT>, "
                                 f"found <{phi.tag}>")
        value, tail = phi.text or "", phi.tail or ""
        spans.append((at, at + len(value), _i2b2_type(path, where, phi.get("TYPE"))))
        parts += (value, tail)
        at += len(value) + len(tail)
    return doc, "".join(parts), [s for s in spans if s[0] < s[1]]
