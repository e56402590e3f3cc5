"""A detected PHI span (type, offsets, text, the recognizer that found it) and the PHI types with their groups
(El Emam & Arbuckle, ch. 8 "Free-Form Text": the identifiers a text anonymizer must find)."""
from __future__ import annotations

from functools import partial
from typing import Final, NamedTuple

#: Each PHI type's group: the targets of docs/text.md are stated per group.
GROUPS: Final = {
    "FIRST_NAME": "NAME", "MIDDLE_NAME": "NAME", "LAST_NAME": "NAME",
    "STREET": "ADDRESS", "CITY": "ADDRESS", "STATE": "ADDRESS", "ZIP": "ADDRESS", "COUNTRY": "ADDRESS",
    "EMAIL": "CONTACT", "URL": "CONTACT", "PHONE": "CONTACT",
    "MRN": "IDENTIFIER", "SSN": "IDENTIFIER", "ACCOUNT": "IDENTIFIER", "LICENSE": "IDENTIFIER", "DEVICE": "IDENTIFIER",
    "ID": "IDENTIFIER",
    "DATE": "DATE", "AGE": "AGE", "FACILITY": "FACILITY",
}
TYPES: Final = tuple(GROUPS)

#: Priorities of recognizers (higher wins an overlap of equal length): a value the caller gave, then
#: patterns with a cue word or a fixed shape, then list look-ups.
HINT: Final = 40
PATTERN: Final = 30
CUE: Final = 20
LIST: Final = 10


class Span(NamedTuple):
    """``text[start:end]`` is PHI of ``type``; ``source`` names the recognizer (for reports and tests). A named
    tuple: immutable, and made several times faster than a frozen dataclass (a note yields dozens of candidates)."""

    start: int
    end: int
    type: str
    text: str
    source: str = ""
    priority: int = LIST

    def overlaps(self, other: "Span") -> bool:
        return self.start < other.end and other.start < self.end

    def as_dict(self) -> dict[str, object]:
        return {"start": self.start, "end": self.end, "type": self.type, "text": self.text, "source": self.source}


#: A span as the recognizers make it: the fields of a :class:`Span` in a plain tuple. Python's garbage collector stops
#: tracking a plain tuple of numbers and strings at its first look and tracks a named tuple for life: the candidate
#: spans of a batch of notes were most of the objects its collections carried to their oldest generation, whose
#: collections walk every object of the process. :func:`deid_core.text.detect.detect_many` returns the spans it keeps
#: as Spans.
Found = tuple[int, int, str, str, str, int]

#: ``make_span((start, end, type, text, source, priority))``: a :class:`Span` from the tuple of its six fields, made
#: by ``tuple.__new__`` directly, about twice as fast as the named tuple's own ``__new__`` (a Python function); the
#: recognizers make dozens per note.
make_span = partial(tuple.__new__, Span)
