"""Normalization of identifying values, vectorized over pandas Series.

docs/protocol.md ("Encoding identifiers") fixes one normalization per field type so
that two parties always agree:

* identifiers: Unicode NFKC, casefold, keep letters and digits only
  (``" 1234-567-890 "`` -> ``"1234567890"``);
* names: NFKD, drop combining marks, casefold, spell out the letters NFKD leaves whole (ø, æ, œ, ł, đ,
  ð, þ, ı as oe, ae, oe, l, d, d, th, i; ß is ``ss`` by casefolding), keep the letters a-z only
  (``"O'Brien-Zoë"`` -> ``"obrienzoe"``, ``"Søren"`` -> ``"soeren"``).

A value that normalizes to the empty string is *missing*: it never matches.
"""
from __future__ import annotations

import pandas as pd

FIELD_TYPES = ("identifier", "name")
# Latin letters without a canonical decomposition, as they are written in plain a-z (the spellings of
# ICAO Doc 9303, "Machine Readable Travel Documents", part 3, transliteration of national characters)
SPELLED_OUT = str.maketrans({"ø": "oe", "æ": "ae", "œ": "oe", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i"})


def _as_text(values: pd.Series) -> pd.Series:
    return values.astype("string").fillna("")


def normalize_identifiers(values: pd.Series) -> pd.Series:
    """NFKC, casefold, keep Unicode letters and digits (``[\\W_]`` removed)."""
    text = _as_text(values).str.normalize("NFKC").str.casefold()
    return text.str.replace(r"[\W_]+", "", regex=True).astype(object)


def normalize_names(values: pd.Series) -> pd.Series:
    """NFKD, casefold, the letters NFKD leaves whole spelled out, keep a-z only (combining marks and
    punctuation dropped)."""
    text = _as_text(values).str.normalize("NFKD").str.casefold().str.translate(SPELLED_OUT)
    return text.str.replace(r"[^a-z]+", "", regex=True).astype(object)


def normalize(values: pd.Series, field_type: str) -> pd.Series:
    if field_type == "identifier":
        return normalize_identifiers(values)
    if field_type == "name":
        return normalize_names(values)
    raise ValueError(f"unknown field type '{field_type}' (expected one of {', '.join(FIELD_TYPES)})")
