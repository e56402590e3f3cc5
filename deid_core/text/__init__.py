"""Free-text de-identification: rule-based detection of PHI in clinical notes and the transforms that
replace it (El Emam & Arbuckle, *Anonymizing Health Data*, ch. 8 "Free-Form Text"; docs/text.md).

``detect(text, hints)`` returns typed :class:`Span` s (``detect_many(texts, hints)`` those of many notes, faster);
``transform(text, spans, mode, ...)`` rewrites the text (redact, tag, surrogate, generalize); ``evaluate`` scores
detections against standoff gold spans.
"""
from __future__ import annotations

from .detect import detect, detect_many
from .spans import GROUPS, TYPES, Span
from .transforms import MODES, Surrogates, transform

__all__ = ["GROUPS", "MODES", "Span", "Surrogates", "TYPES", "detect", "detect_many", "transform"]
