"""Structured hints: values of the same record (the patient's name, MRN, date of birth, ...) searched in the
note first, with their variants: each part of a name alone, "Doe, Jane", "J. Doe", an MRN with or without its
leading zeros, the date of birth in any written form (El Emam & Arbuckle, ch. 8 "Free-Form Text": the
structured fields of the record are the surest guide to the identifiers of its notes)."""
from __future__ import annotations

import re
from typing import Mapping

from ..errors import DeidInputError
from .note import Note
from .recognizers import dates
from .spans import HINT, Span
from .textdates import parse

#: The hint keys and the PHI type their values have (``name`` is split into first, middle and last).
KEYS = {"name": "NAME", "first_name": "FIRST_NAME", "last_name": "LAST_NAME", "mrn": "MRN", "dob": "DATE",
        "date": "DATE", "ssn": "SSN", "phone": "PHONE", "email": "EMAIL", "address": "STREET", "city": "CITY",
        "zip": "ZIP", "account": "ACCOUNT", "id": "ID"}


def check_hints(hints: Mapping[str, object] | None) -> dict[str, str]:
    """The non-empty hints as text; an unknown key is refused naming the known ones."""
    out = {}
    for key, value in (hints or {}).items():
        if key not in KEYS:
            raise DeidInputError(f"unknown hint {key!r}: use one of {', '.join(KEYS)}")
        if value is not None and str(value).strip() and str(value).strip().lower() != "nan":
            out[key] = str(value).strip()
    return out


def _word(value: str) -> str:
    return r"(?<![\w'’-])" + re.escape(value) + r"(?![\w'’-])"


def _name_parts(key: str, value: str) -> list[tuple[str, str]]:
    """(pattern, type) for each part of a name and for its initial before the last name."""
    parts = [p for p in re.split(r"[\s,]+", value) if len(p.rstrip(".")) > 1]
    if key != "name" or not parts:
        return [(_word(p), KEYS[key]) for p in parts]
    if "," in value:  # "Doe, Jane"
        parts = parts[1:] + parts[:1]
    types = ["FIRST_NAME"] + ["MIDDLE_NAME"] * (len(parts) - 2) + ["LAST_NAME"] if len(parts) > 1 else ["LAST_NAME"]
    out = [(_word(p), t) for p, t in zip(parts, types)]
    if len(parts) > 1:
        out.append((rf"(?<![\w'’-]){re.escape(parts[0][0])}\.?(?=\s+{re.escape(parts[-1])}(?![\w'’-]))", "FIRST_NAME"))
    return out


def _id_pattern(value: str) -> str:
    digits = value.lstrip("0")
    return rf"(?<![\w-])0*{re.escape(digits)}(?![\w-])" if digits.isdigit() else _word(value)


def hinted(note: Note, hints: Mapping[str, str]) -> list[Span]:
    """The spans of the note that are one of the hints' values or their variants."""
    text = note.text
    out: list[Span] = []
    for key, value in hints.items():
        kind = KEYS[key]
        if kind in ("NAME", "FIRST_NAME", "LAST_NAME"):
            patterns = _name_parts(key, value)
        elif kind == "DATE":
            target = parse(value)
            if target is not None:
                out += [Span(s.start, s.end, "DATE", s.text, "hint", HINT) for s in dates(note)
                        if (p := parse(s.text)) is not None and (p.month, p.day) == (target.month, target.day)
                        and p.year in (None, target.year)]
            patterns = [(_word(value), kind)]
        elif kind in ("MRN", "ACCOUNT", "ID", "SSN", "ZIP"):
            patterns = [(_id_pattern(value), kind)]
        else:
            patterns = [(_word(value), kind)]
        for pattern, type_ in patterns:
            out += [Span(m.start(), m.end(), type_, m.group(), "hint", HINT)
                    for m in re.finditer(pattern, text, re.IGNORECASE)]
    return out
