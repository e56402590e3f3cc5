"""A detected PHI span (type, offsets, text, the recognizer that found it) and the PHI types with their groups
(El Emam & Arbuckle, ch. 8 "Free-Form Text": the identifiers a text anonymizer must find)."""
from __future__ import annotations

from functools import partial
from typing import NamedTuple

#: Each PHI type's group: the targets of docs/text.md are stated per group.
GROUPS = {
    "FIRST_NAME": "NAME", "MIDDLE_NAME": "NAME", "LAST_NAME": "NAME",
    "STREET": "ADDRESS", "CITY": "ADDRESS", "STATE": "ADDRESS", "ZIP": "ADDRESS", "COUNTRY": "ADDRESS",
    "EMAIL": "CONTACT", "URL": "CONTACT", "PHONE": "CONTACT",
    "MRN": "IDENTIFIER", "SSN": "IDENTIFIER", "ACCOUNT": "IDENTIFIER", "LICENSE": "IDENTIFIER", "DEVICE": "IDENTIFIER",
    "ID": "IDENTIFIER",
    "DATE": "DATE", "AGE": "AGE", "FACILITY": "FACILITY",
}
TYPES = tuple(GROUPS)

#: Priorities of recognizers (higher wins an overlap of equal length): a value the caller gave, then
#: patterns with a cue word or a fixed shape, then list look-ups.
HINT, PATTERN, CUE, LIST = 40, 30, 20, 10


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

    def as_dict(self) -> dict:
        return {"start": self.start, "end": self.end, "type": self.type, "text": self.text, "source": self.source}


#: ``make_span((start, end, type, text, source, priority))``: a :class:`Span` from the tuple of its six fields, made
#: by ``tuple.__new__`` directly, about twice as fast as the named tuple's own ``__new__`` (a Python function); the
#: recognizers make dozens per note.
make_span = partial(tuple.__new__, Span)
