"""``detect(text, hints)``: every recognizer over a note, overlaps resolved, then every other mention of
the names found (El Emam & Arbuckle, ch. 8 "Free-Form Text"; docs/text.md, "What is detected")."""
from __future__ import annotations

from typing import Mapping

from ..errors import DeidInputError
from .hints import check_hints, hinted
from .names import mentions, names
from .note import Note
from .recognizers import ages, contacts, dates, facilities, identifiers, places
from .resolve import resolve
from .spans import Span


def detect(text: str, hints: Mapping[str, object] | None = None) -> list[Span]:
    """The PHI spans of ``text``: disjoint, sorted, each typed (see :data:`deid_core.text.spans.TYPES`).

    ``hints`` maps keys of :data:`deid_core.text.hints.KEYS` (``name``, ``mrn``, ``dob``, ...) to the
    record's values: those values and their variants are found first and win any overlap.
    """
    if not isinstance(text, str):
        raise DeidInputError(f"text must be a string, got {type(text).__name__}")
    given = check_hints(hints)
    if not text.strip():
        return []
    note = Note(text)
    found_dates = dates(note)
    found = (hinted(note, given, found_dates) + found_dates + ages(note) + contacts(note) + identifiers(note)
             + places(note) + facilities(note) + names(note))
    first = resolve(found)
    # A mention on the very range of a kept span would lose to it (equal length, stable ranking), so mentions
    # leaves those out; most notes have no other.
    more = mentions(note, first)
    return resolve(first + more) if more else first
