"""Structured hints: values of the same record (the patient's name, MRN, date of birth, ...) searched in the
note first, with their variants: each part of a name alone, "Doe, Jane", "J. Doe", an MRN with or without its
leading zeros, the date of birth in any written form (El Emam & Arbuckle, ch. 8 "Free-Form Text": the
structured fields of the record are the surest guide to the identifiers of its notes)."""
from __future__ import annotations

import re
from typing import Final, Iterable, Iterator, Mapping

from ..errors import DeidInputError
from .note import Note
from .spans import HINT, Found
from .textdates import may_fall_on, read

#: The hint keys and the PHI type their values have (``name`` is split into first, middle and last).
KEYS: Final = {"name": "NAME", "first_name": "FIRST_NAME", "last_name": "LAST_NAME", "mrn": "MRN", "dob": "DATE",
               "date": "DATE", "ssn": "SSN", "phone": "PHONE", "email": "EMAIL", "address": "STREET", "city": "CITY",
               "zip": "ZIP", "account": "ACCOUNT", "id": "ID"}

#: What separates the parts of a name hint.
_NAME_SEPARATORS: Final = re.compile(r"[\s,]+")


def check_hints(hints: Mapping[str, object] | None) -> dict[str, str]:
    """The non-empty hints as text; an unknown key is refused naming the known ones."""
    out = {}
    for key, value in (hints or {}).items():
        if key not in KEYS:
            raise DeidInputError(f"unknown hint {key!r}: use one of {', '.join(KEYS)}")
        if value is not None and str(value).strip() and str(value).strip().lower() != "nan":
            out[key] = str(value).strip()
    return out


def _name_parts(key: str, value: str) -> list[tuple[str, str]]:
    """(lower-case part, type) for each part of a name."""
    parts = [p.lower() for p in _NAME_SEPARATORS.split(value) if len(p.rstrip(".")) > 1]
    if key != "name" or not parts:
        return [(p, KEYS[key]) for p in parts]
    if "," in value:  # "Doe, Jane"
        parts = parts[1:] + parts[:1]
    types = ["FIRST_NAME"] + ["MIDDLE_NAME"] * (len(parts) - 2) + ["LAST_NAME"] if len(parts) > 1 else ["LAST_NAME"]
    return list(zip(parts, types))


def _spans(note: Note, value: str, type_: str) -> list[Found]:
    return _at(note, note.occurrences(value), type_)


def _at(note: Note, places: Iterable[tuple[int, int]], type_: str) -> list[Found]:
    """Hint spans of ``type_`` at ``places`` (start, end) of the note."""
    return [(s, e, type_, note.text[s:e], "hint", HINT) for s, e in places]


def _initials(note: Note, initial: str, last_names: list[tuple[int, int]]) -> list[Found]:
    """The first name's initial before the last name ("J. Doe", then "J Doe"), read before each of the last name's
    places (``last_names``, where the last name stands as a whole word: the whole of "j. doe" ends where "doe" does):
    each form searched in the note by itself would find these and no others."""
    low, text = note.low, note.text
    out: list[Found] = []
    for lead in (initial + ". ", initial + " "):
        size = len(lead)
        out += [(s - size, s - 1, "FIRST_NAME", text[s - size:s - 1], "hint", HINT) for s, e in last_names
                if s >= size and low.startswith(lead, s - size) and note.whole(s - size, e)]
    return out


def _identifier(note: Note, value: str, type_: str) -> list[Found]:
    """An identifier as given, or its digits with any number of leading zeros ("12345" for "0012345")."""
    digits = value.lstrip("0").lower()
    if not digits.isdigit():
        return _spans(note, value.lower(), type_)
    return _at(note, _digits_at(note.low, digits), type_)


def _digits_at(low: str, digits: str) -> Iterator[tuple[int, int]]:
    at = low.find(digits)
    while at >= 0:
        start, end = at, at + len(digits)
        while start and low[start - 1] == "0":
            start -= 1
        if not (start and (low[start - 1].isalnum() or low[start - 1] == "-")
                or end < len(low) and (low[end].isalnum() or low[end] == "-")):
            yield start, end
        at = low.find(digits, at + 1)


def hinted(note: Note, hints: Mapping[str, str], found_dates: list[Found]) -> list[Found]:
    """The spans of the note that are one of the hints' values or their variants; ``found_dates`` are the
    note's dates (:func:`deid_core.text.recognizers.dates`), the date hints' other written forms among them."""
    out: list[Found] = []
    for key, value in hints.items():
        kind = KEYS[key]
        if kind in ("NAME", "FIRST_NAME", "LAST_NAME"):
            parts = _name_parts(key, value)
            places = [note.occurrences(part) for part, _ in parts]
            out += [span for (_, type_), found in zip(parts, places) for span in _at(note, found, type_)]
            if len(parts) > 1:
                out += _initials(note, parts[0][0][0], places[-1])
        elif kind in ("MRN", "ACCOUNT", "ID", "SSN", "ZIP"):
            out += _identifier(note, value, kind)
        else:
            out += _spans(note, value.lower(), kind)
        if kind == "DATE" and found_dates and (target := read(value)) is not None:
            year, month, day, _ = target
            for s in found_dates:
                if day is not None and not may_fall_on(s[3], day):  # most of a note's dates: not read
                    continue
                found = read(s[3])
                if found is not None and found[1] == month and found[2] == day and found[0] in (None, year):
                    out.append((s[0], s[1], "DATE", s[3], "hint", HINT))
    return out
