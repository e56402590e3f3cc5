"""``detect_many`` (one recognizer over a batch of notes at a time; deid_core.text.detect) finds, for every note,
the spans of the note-by-note detector: a reference kept here composes the recognizers for one note alone, and
both run on the development corpus, with and without hints, and on random notes at every batch boundary."""
from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from deid_core.errors import DeidInputError
from deid_core.text import detect, transform
from deid_core.text.column import deidentify_notes
from deid_core.text.hints import check_hints, hinted
from deid_core.text.names import mentions, names
from deid_core.text.note import Note
from deid_core.text.recognizers import ages, contacts, dates, facilities, identifiers, places
from deid_core.text.resolve import resolve

detect_module = importlib.import_module("deid_core.text.detect")  # the package's name ``detect`` is the function
detect_many = detect_module.detect_many
NOTES = Path(__file__).resolve().parents[2] / "data" / "notes" / "notes.jsonl"


def reference(text, hints=None):
    """Every recognizer over one note, as ``detect`` did before the batches."""
    given_hints = check_hints(hints)
    if not text.strip():
        return []
    note = Note(text)
    found_dates = dates(note)
    found = (hinted(note, given_hints, found_dates) + found_dates + ages(note) + contacts(note) + identifiers(note)
             + places(note) + facilities(note) + names(note))
    first = resolve(found)
    more = mentions(note, first)
    return resolve(first + more) if more else first


def _corpus_notes():
    return [json.loads(line) for line in NOTES.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("use_hints", [False, True])
def test_the_notes_of_the_test_corpus_get_the_spans_of_one_note_at_a_time(use_hints):
    notes = _corpus_notes()
    texts = [n["text"] for n in notes]
    hints = [n["hints"] for n in notes] if use_hints else None
    want = [reference(t, h) for t, h in zip(texts, hints or [None] * len(texts))]
    assert detect_many(texts, hints) == want
    assert [detect(t, h) for t, h in zip(texts, hints or [None] * len(texts))] == want


@pytest.mark.parametrize("count, seed", [(300, 7), pytest.param(2000, 3, marks=pytest.mark.slow)])
@pytest.mark.parametrize("use_hints", [False, True])
def test_the_development_corpus_gets_the_spans_of_one_note_at_a_time(count, seed, use_hints):
    from benchmarks.notes_corpus import generate

    notes = generate(count, seed)[0]
    texts = [n["text"] for n in notes]
    hints = [n["hints"] for n in notes] if use_hints else [None] * len(texts)
    assert detect_many(texts, hints) == [reference(t, h) for t, h in zip(texts, hints)]


# Pieces of notes: PHI and look-alikes, the characters a batch might be joined by, blank and odd white space.
PIECES = ["Dr. Smith", "pt Shaun castro", "Villegas, Yosef", "Jane Q. Doe", "Robin Summers, RN", "seen by",
          "2/03", "03/14/2019", "March 14, 2019", "the third of July", "Jan '19", "in May", "MRN 0012345",
          "123-45-6789", "(555) 123-4567", "jane@example.org", "www.example.com", "12 Oak Street", "Boston, MA 02139",
          "K1A 0B6", "Mercy Clinic", "St. Mary's Hospital", "95 yo", "ninety-one years old", "Apgar 9", "BP 120/80",
          "Huntington's disease", "Acct 163942516", "zip 02139", "Maria", "hope", "Brown", "é", "İ",
          "\n\x00\n", "\x00", "\x1c", "\u2028", "\r\n", "\t", " ", "  ", ",", ".", "-", "'", "’", "", "\n"]
note_text = st.lists(st.sampled_from(PIECES), max_size=14).map("".join)
hint_row = st.none() | st.fixed_dictionaries({}, optional={
    "name": st.sampled_from(["Jane Doe", "Smith, John", "Maria Villegas", "  "]),
    "mrn": st.sampled_from(["0012345", "12345", "A-77"]), "dob": st.sampled_from(["2019-03-14", "7/4/1970"])})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(note_text, hint_row), max_size=12), st.sampled_from([1, 20, 60, 400, 32_000]))
def test_random_notes_get_the_spans_of_one_note_at_a_time_in_batches_of_any_size(rows, batch_chars):
    texts = [t for t, _ in rows]
    hints = [h for _, h in rows]
    saved = detect_module.BATCH_CHARS
    detect_module.BATCH_CHARS = batch_chars  # a batch ends anywhere: after every note, or never
    try:
        got = detect_many(texts, hints)
    finally:
        detect_module.BATCH_CHARS = saved
    assert got == [reference(t, h) for t, h in rows]


def test_blank_and_missing_notes():
    assert detect_many([]) == []
    assert detect_many(["", " \n\t", "Dr. Smith seen 2/03.", "\x00"]) == [[], [], reference("Dr. Smith seen 2/03."), []]
    with pytest.raises(DeidInputError, match="must be a string"):
        detect_many(["Dr. Smith", None])
    with pytest.raises(DeidInputError, match="2 texts but 1 rows of hints"):
        detect_many(["a", "b"], [None])
    with pytest.raises(DeidInputError, match="unknown hint"):
        detect_many(["a"], [{"nmae": "x"}])


def test_a_column_is_detected_in_batches_with_the_spans_of_each_note():
    notes = _corpus_notes()
    column = [n["text"] for n in notes] + [None, "", "Dr. Smith seen 2/03."]
    hints = [n["hints"] for n in notes] + [{}, {}, {"name": "John Smith"}]
    result = deidentify_notes(column, "tag", hints=hints)
    want = [None if text is None else transform(text, reference(text, h), "tag").text for text, h in zip(column, hints)]
    assert result.notes == want
