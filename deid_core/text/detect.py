"""``detect(text, hints)``: every recognizer over a note, overlaps resolved, then every other mention of
the names found (El Emam & Arbuckle, ch. 8 "Free-Form Text"; docs/text.md, "What is detected").

``detect_many(texts, hints)`` does the same for many notes, one step over a batch of notes before the next
(docs/text.md, "Speed"): each note's spans are those ``detect`` finds, every step being a function of its note
alone; the code and the tables of one step stay in the processor's caches over the batch, about 1.3 times as fast
as going through all the steps note by note (on notes met the first time)."""
from __future__ import annotations

from typing import Iterator, Mapping, Sequence

from ..errors import DeidInputError
from .hints import check_hints, hinted
from .names import RULES as NAME_RULES, mentions
from .note import Note
from .recognizers import ages, contacts, dates, facilities, identifiers, places
from .resolve import resolve
from .spans import Span, make_span

#: The recognizers after the dates (which the hints use), in the order their spans are listed for
#: :func:`deid_core.text.resolve.resolve` (whose ties keep that order).
RECOGNIZERS = (ages, contacts, identifiers, places, facilities, *NAME_RULES)
#: A batch of :func:`detect_many` ends at the note that brings it to this many characters.
BATCH_CHARS = 32_000


def detect(text: str, hints: Mapping[str, object] | None = None) -> list[Span]:
    """The PHI spans of ``text``: disjoint, sorted, each typed (see :data:`deid_core.text.spans.TYPES`).

    ``hints`` maps keys of :data:`deid_core.text.hints.KEYS` (``name``, ``mrn``, ``dob``, ...) to the
    record's values: those values and their variants are found first and win any overlap.
    """
    return detect_many([text], [hints])[0]


def detect_many(texts: Sequence[str], hints: Sequence[Mapping[str, object] | None] | None = None) -> list[list[Span]]:
    """:func:`detect` of each text (with the hints of the same position, if any), in order."""
    if hints is None:
        hints = [None] * len(texts)
    elif len(hints) != len(texts):
        raise DeidInputError(f"{len(texts)} texts but {len(hints)} rows of hints")
    out: list[list[Span]] = [[] for _ in texts]
    for positions, batch in _batches(texts, hints):
        for place, spans in zip(positions, _batch(batch)):
            out[place] = spans
    return out


def _batches(texts: Sequence[str], hints: Sequence[Mapping[str, object] | None]
             ) -> Iterator[tuple[list[int], list[tuple[Note, dict[str, str]]]]]:
    """The notes to search (a blank text has no spans) with their checked hints, in batches of about
    :data:`BATCH_CHARS` characters, each with the notes' positions in ``texts``."""
    positions: list[int] = []
    batch: list[tuple[Note, dict[str, str]]] = []
    chars = 0
    for at, (text, given) in enumerate(zip(texts, hints)):
        if not isinstance(text, str):
            raise DeidInputError(f"text must be a string, got {type(text).__name__}")
        given = check_hints(given)
        if not text.strip():
            continue
        positions.append(at)
        batch.append((Note(text), given))
        chars += len(text)
        if chars >= BATCH_CHARS:
            yield positions, batch
            positions, batch, chars = [], [], 0
    if batch:
        yield positions, batch


def _batch(batch: list[tuple[Note, dict[str, str]]]) -> list[list[Span]]:
    """The spans of each note of ``batch`` (its hints beside it), one step over all the notes at a time: the
    automaton's passes, the dates and hints, each recognizer, then overlaps and mentions."""
    for note, _ in batch:
        note.scan()
    found = []
    for note, given in batch:
        found_dates = dates(note)
        found.append(hinted(note, given, found_dates) + found_dates)
    for recognizer in RECOGNIZERS:
        for (note, _), spans in zip(batch, found):
            spans += recognizer(note)
    out = []
    for (note, _), spans in zip(batch, found):
        first = resolve(spans)
        # A mention on the very range of a kept span would lose to it (equal length, stable ranking), so mentions
        # leaves those out; most notes have no other.
        more = mentions(note, first)
        out.append(list(map(make_span, resolve(first + more) if more else first)))  # the kept tuples made Spans
    return out
