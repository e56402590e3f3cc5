"""A notes column de-identified note by note: detection with the row's hints, one transform, and the counts
per PHI type that a report gives (docs/text.md, "The command"). Pure: the caller reads and writes tables.

Notes are detected a few hundred at a time (:func:`deid_core.text.detect.detect_many`: each note's spans are those
of the note alone), then transformed one by one. A large column may be shared out to worker processes in
consecutive slices: every note is done alone, so the output is the same, in the same order."""
from __future__ import annotations

import gc
import multiprocessing
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Iterable, Mapping, Sequence

from ..errors import DeidInputError
from .detect import detect_many
from .second_pass import SecondPass
from .transforms import Surrogates, transform

#: Below this many characters of notes a column is done in this process (starting workers costs more).
PARALLEL_FROM_CHARS = 1_000_000
#: The characters of notes in one slice handed to a worker.
SLICE_CHARS = 250_000
#: Notes detected together (:func:`deid_core.text.detect.detect_many`) and transformed before the next ones.
DETECT_ROWS = 256
_TYPE = itemgetter(2)  # a span's type


@dataclass
class ColumnResult:
    """The new notes (None where the note was missing) and the counts over the column."""

    notes: list[str | None]
    documents: int = 0
    with_phi: int = 0
    characters: int = 0
    found: Counter = field(default_factory=Counter)
    tagged: Counter = field(default_factory=Counter)
    #: Spans the second pass rejected, per type (:mod:`deid_core.text.second_pass`; empty without one).
    rejected: Counter = field(default_factory=Counter)

    def summary(self) -> dict:
        out = {"documents": self.documents, "documents_with_phi": self.with_phi, "characters": self.characters,
               "found": dict(sorted(self.found.items())), "tagged_without_surrogate": dict(sorted(self.tagged.items()))}
        if self.rejected:
            out["rejected_by_second_pass"] = dict(sorted(self.rejected.items()))
        return out

    def add(self, other: "ColumnResult") -> None:
        """``other``'s notes after these, its counts added."""
        self.notes += other.notes
        self.documents += other.documents
        self.with_phi += other.with_phi
        self.characters += other.characters
        self.found.update(other.found)
        self.tagged.update(other.tagged)
        self.rejected.update(other.rejected)


def deidentify_notes(notes: Sequence[object], mode: str, *, hints: Iterable[Mapping[str, object]] | None = None,
                     patients: Sequence[str] | None = None, surrogates: Surrogates | None = None, workers: int = 1,
                     parallel_from: int = PARALLEL_FROM_CHARS, second_pass: SecondPass | None = None) -> ColumnResult:
    """Each note (a string; anything else is a missing note, kept missing) transformed by ``mode``; ``hints``
    gives each row's hint values, ``patients`` each row's patient id (the date-shift key of ``surrogate``;
    the row number without); ``second_pass`` may reject spans before they are replaced. With ``workers`` > 1
    and at least ``parallel_from`` characters of notes, slices of the column go to that many processes; the
    result is the same."""
    notes = list(notes)
    rows = list(hints) if hints is not None else [{}] * len(notes)
    ids = list(patients) if patients else [str(i) for i in range(len(notes))]
    if len(rows) != len(notes) or len(ids) != len(notes):
        raise DeidInputError(f"{len(notes)} notes but {len(rows)} rows of hints and {len(ids)} patient ids")
    sizes = [len(n) if isinstance(n, str) else 0 for n in notes]
    if workers <= 1 or sum(sizes) < parallel_from:
        return _slice((notes, mode, rows, ids, surrogates, second_pass))
    bounds, start, chars = [], 0, 0
    for i, size in enumerate(sizes):
        chars += size
        if chars >= SLICE_CHARS:
            bounds.append((start, i + 1))
            start, chars = i + 1, 0
    if start < len(notes):
        bounds.append((start, len(notes)))
    result = ColumnResult([])
    # workers come from a fork server, never forked from this process: a caller with threads (a gRPC
    # client, a web server) can crash a child forked mid-flight (seen: a segfault in threading's after-fork);
    # the server imports the detector (its lists) once, and every worker forks from it with them loaded
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["deid_core.text.detect"])
    # each worker, a process of its own, leaves what it loaded at start out of the collector's walks (gc.freeze:
    # deid_core.cli.text.settled says why)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=gc.freeze) as pool:
        slices = ((notes[a:b], mode, rows[a:b], ids[a:b], surrogates, second_pass) for a, b in bounds)
        for part in pool.map(_slice, slices):
            result.add(part)  # map keeps the order of the slices
    return result


def _slice(job: tuple) -> ColumnResult:
    notes, mode, rows, ids, surrogates, second_pass = job
    result = ColumnResult([])
    for first in range(0, len(notes), DETECT_ROWS):
        part = range(first, min(first + DETECT_ROWS, len(notes)))
        present = [i for i in part if isinstance(notes[i], str)]
        texts = [notes[i] for i in present]
        spans_found = detect_many(texts, [rows[i] for i in present])
        if second_pass is not None:
            spans_found, rejected = second_pass.filter(texts, spans_found)
            result.rejected.update(rejected)
        found = dict(zip(present, spans_found))
        found_types: list[str] = []
        for i in part:
            note = notes[i]
            if i not in found:
                result.notes.append(None)
                continue
            spans = found[i]
            out = transform(note, spans, mode, surrogates=surrogates, patient=ids[i])
            result.notes.append(out.text)
            result.documents += 1
            result.characters += len(note)
            result.with_phi += bool(spans)
            found_types += map(_TYPE, spans)  # every span is replaced: counted once a chunk, in C (Counter.update)
            if out.tagged:
                result.tagged.update(out.tagged)
        result.found.update(found_types)
    return result
