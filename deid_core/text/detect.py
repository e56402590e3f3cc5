"""``detect(text, hints)``: every recognizer over a note, overlaps resolved, then every other mention of
the names found (El Emam & Arbuckle, ch. 8 "Free-Form Text"; docs/text.md, "What is detected")."""
from __future__ import annotations

from typing import Mapping

from ..errors import DeidInputError
from .hints import check_hints, hinted
from .lists import find_words, fold
from .names import mentions, names
from .recognizers import ages, contacts, dates, facilities, identifiers, lower, places
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
    low = lower(text)
    words = find_words(fold(text))
    found = (hinted(text, given) + dates(text, low) + ages(text, low) + contacts(text, low) + identifiers(text, low)
             + places(text, low, words) + facilities(text) + names(text, words))
    first = resolve(found)
    return resolve(first + mentions(text, first))
