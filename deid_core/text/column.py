"""A notes column de-identified note by note: detection with the row's hints, one transform, and the counts
per PHI type that a report gives (docs/text.md, "The command"). Pure: the caller reads and writes tables."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from .detect import detect
from .transforms import Surrogates, transform


@dataclass
class ColumnResult:
    """The new notes (None where the note was missing) and the counts over the column."""

    notes: list[str | None]
    documents: int = 0
    with_phi: int = 0
    characters: int = 0
    found: Counter = field(default_factory=Counter)
    tagged: Counter = field(default_factory=Counter)

    def summary(self) -> dict:
        return {"documents": self.documents, "documents_with_phi": self.with_phi, "characters": self.characters,
                "found": dict(sorted(self.found.items())), "tagged_without_surrogate": dict(sorted(self.tagged.items()))}


def deidentify_notes(notes: Sequence[object], mode: str, *, hints: Iterable[Mapping[str, object]] | None = None,
                     patients: Sequence[str] | None = None, surrogates: Surrogates | None = None) -> ColumnResult:
    """Each note (a string; anything else is a missing note, kept missing) transformed by ``mode``; ``hints``
    gives each row's hint values, ``patients`` each row's patient id (the date-shift key of ``surrogate``)."""
    rows = list(hints) if hints is not None else [{}] * len(notes)
    result = ColumnResult([])
    for i, note in enumerate(notes):
        if not isinstance(note, str):
            result.notes.append(None)
            continue
        spans = detect(note, rows[i])
        out = transform(note, spans, mode, surrogates=surrogates, patient=patients[i] if patients else str(i))
        result.notes.append(out.text)
        result.documents += 1
        result.characters += len(note)
        result.with_phi += bool(spans)
        result.found.update(out.replaced)
        result.tagged.update(out.tagged)
    return result
