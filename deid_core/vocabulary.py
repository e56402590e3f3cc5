"""The words the spec, the hierarchies and the table reader share: column roles, release types, hierarchy
builders, the suppressed-cell marker and the CSV separators (a leaf: it imports nothing of the project)."""
from __future__ import annotations

ROLES = ("direct", "quasi", "sensitive", "other", "text")
#: How a ``text`` column (free-text notes) is de-identified in a release (``[text] mode``; docs/text.md,
#: "Notes in a release"); ``surrogate`` needs the data owner's key on every path that releases.
TEXT_RELEASE_MODES = ("tag", "redact", "generalize", "surrogate")
#: What ``[columns] default = "..."`` may say about the columns the spec does not list.
REST_FATES = ("drop", "other", "quasi")
RELEASE_TYPES = ("public", "non-public")
MISSING_CHOICES = ("own_class", "match_any")
BUILDERS = ("csv", "interval", "dates", "prefix", "icd", "atc", "flat")
#: Marker written in place of a suppressed cell; read back as missing.
SUPPRESSED = "[suppressed]"
#: Separators a CSV file (a table or an ARX hierarchy) may use.
SEPARATORS = (",", ";", "\t")


def detect_separator(header: str) -> str:
    """The separator among ``, ; \\t`` that occurs most often in the header line."""
    counts = {sep: header.count(sep) for sep in SEPARATORS}
    best = max(SEPARATORS, key=lambda s: counts[s])
    return best if counts[best] else ","
