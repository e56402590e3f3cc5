"""Matching variables: how a field's values become codes, and when two codes agree.

A field is encoded exactly (normalized identifier), as a normalized name, a
phonetic code (Soundex, NYSIIS, Metaphone), an initial, or a date of birth
compared by the NDI rules (El Emam & Arbuckle, Anonymizing Health Data, ch. 12;
Christen, Data Matching, 2012, ch. 5): same month and day, or same month and a
year at most one apart; with ``transposed`` also day and month swapped in the
same year.  The NDI rule is written once, as the disjunction of conjunctions of
date *components* in :func:`field_terms`; the fuzzy protocol compares those
terms and :func:`pair_agreement` evaluates the same terms on plaintext pairs.
Day/month order is never guessed: each party declares its date format.
"""
from __future__ import annotations

from dataclasses import dataclass

import jellyfish
import numpy as np
import pandas as pd

from party_client.errors import PartyError
from party_client.matching.dates import read_dates
from party_client.matching.normalize import normalize_identifiers, normalize_names

ENCODERS = ("exact", "name", "soundex", "nysiis", "metaphone", "initial", "dob_ndi")
PHONETIC = {"soundex": jellyfish.soundex, "nysiis": jellyfish.nysiis, "metaphone": jellyfish.metaphone}
KEY_SEPARATOR = "\x1f"        # joins a conjunction's parts; normalized parts never contain it
MISSING = -1                  # an unknown code as an integer


@dataclass(frozen=True)
class Field:
    name: str
    column: str
    encoder: str
    date_format: str | None = None
    transposed: bool = False


@dataclass(frozen=True)
class Component:
    """One atomic equality: a field, or one part of a date (``day``, ``month``, ``year``, ``year~1``, ``swap``)."""

    field: str
    part: str = ""

    @property
    def label(self) -> str:
        return f"{self.field}.{self.part}" if self.part else self.field


Term = tuple[Component, ...]


def field_terms(field: Field) -> list[frozenset[Component]]:
    """A field's agreement as a DNF over components (the NDI rule for ``dob_ndi``)."""
    if field.encoder != "dob_ndi":
        return [frozenset({Component(field.name)})]
    terms = [frozenset({Component(field.name, "month"), Component(field.name, "day")}),
             frozenset({Component(field.name, "month"), Component(field.name, "year~1")})]
    if field.transposed:
        terms.append(frozenset({Component(field.name, "swap"), Component(field.name, "year")}))
    return terms


# -- codes -----------------------------------------------------------------------------------------
def field_codes(field: Field, frame: pd.DataFrame) -> dict[str, pd.Series]:
    """Code per (field[.part]) and record; '' = missing.  Vectorized except the phonetic call."""
    if field.column not in frame.columns:
        raise PartyError(f"rules field '{field.name}': column '{field.column}' not in the input "
                         f"(columns: {', '.join(map(str, frame.columns))})")
    column = frame[field.column].reset_index(drop=True)
    if field.encoder == "exact":
        return {field.name: normalize_identifiers(column)}
    if field.encoder == "dob_ndi":
        return date_parts(field, column)
    names = normalize_names(column)
    if field.encoder == "name":
        return {field.name: names}
    if field.encoder == "initial":
        return {field.name: names.str[:1]}
    encode = PHONETIC[field.encoder]
    lookup = {v: (encode(v) if v else "") for v in pd.unique(names)}
    return {field.name: names.map(lookup)}


def date_parts(field: Field, column: pd.Series) -> dict[str, pd.Series]:
    """Day, month and year as text ('' when missing or unparseable), parsed with the declared format."""
    text = column.astype("string").fillna("").str.strip()
    dates = read_dates(text, field.date_format, f"rules field '{field.name}' (column '{field.column}')")

    def text_of(values: pd.Series) -> pd.Series:
        return values.astype("Int64").astype("string").fillna("").astype(object)
    return {f"{field.name}.day": text_of(dates.dt.day), f"{field.name}.month": text_of(dates.dt.month),
            f"{field.name}.year": text_of(dates.dt.year), f"{field.name}.__year": dates.dt.year.astype("Int64")}


def component_values(component: Component, codes: dict[str, pd.Series], querier: bool) -> pd.Series:
    """One component's values per record (the querier may contribute several: year - 1, year, year + 1)."""
    if component.part == "year~1":
        year = codes[f"{component.field}.__year"].dropna()
        if not querier:
            return year.astype(str)
        return pd.concat([(year + delta).astype(str) for delta in (-1, 0, 1)]).sort_index(kind="stable")
    if component.part == "swap":
        day, month = codes[f"{component.field}.day"], codes[f"{component.field}.month"]
        first, second = (day, month) if querier else (month, day)
        return (first + "/" + second).where((day != "") & (month != ""), "")
    return codes[component.label]


def component_variants(component: Component, codes: dict[str, pd.Series], querier: bool) -> list[pd.Series]:
    """A component's code per record for a compared pair: the querier's one value, the holder's variants."""
    if component.part == "year~1":
        year = codes[f"{component.field}.__year"]
        deltas = (0,) if querier else (-1, 0, 1)
        return [(year + d).astype("string").fillna("").astype(object) for d in deltas]
    return [component_values(component, codes, querier)]


def aligned_key(parts: list[pd.Series]) -> pd.Series:
    """One key per record from parts aligned on the record index; '' when any part is missing."""
    key = parts[0]
    for part in parts[1:]:
        key = key + KEY_SEPARATOR + part
    missing = pd.concat([(part == "") for part in parts], axis=1).any(axis=1)
    return key.where(~missing, "")


# -- agreement of plaintext pairs --------------------------------------------------------------------
def integer_codes(series: pd.Series) -> np.ndarray:
    """One integer per distinct code, MISSING for ''."""
    values, _ = pd.factorize(series)
    values = values.astype(np.int64)
    values[(series == "").to_numpy()] = MISSING
    return values


def _number(series: pd.Series) -> np.ndarray:
    return pd.to_numeric(series, errors="coerce").fillna(MISSING).to_numpy(dtype=np.int64)


def date_numbers(codes: dict[str, pd.Series], name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Day, month, year of a dob_ndi field as integers (MISSING when unknown)."""
    return _number(codes[f"{name}.day"]), _number(codes[f"{name}.month"]), _number(codes[f"{name}.__year"])


def _component_agreement(component: Component, codes: dict[str, pd.Series], left: np.ndarray,
                         right: np.ndarray) -> np.ndarray:
    """Whether records left[i] and right[i] agree on one component (both known and equal; ``year~1``:
    years at most one apart; ``swap``: day and month swapped)."""
    if component.part in ("year", "year~1"):
        year = _number(codes[f"{component.field}.__year"])
        known = (year[left] != MISSING) & (year[right] != MISSING)
        return known & (np.abs(year[left] - year[right]) <= (1 if component.part == "year~1" else 0))
    if component.part == "swap":
        day, month = _number(codes[f"{component.field}.day"]), _number(codes[f"{component.field}.month"])
        return ((day[left] == month[right]) & (month[left] == day[right])
                & (day[left] != MISSING) & (month[left] != MISSING))
    values = integer_codes(codes[component.label])
    return (values[left] == values[right]) & (values[left] != MISSING)


def pair_agreement(field: Field, codes: dict[str, pd.Series], left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Whether records left[i] and right[i] of one table agree on ``field``: any of its terms
    (:func:`field_terms`) holds, i.e. all of the term's components agree."""
    agree = np.zeros(len(left), dtype=bool)
    for term in field_terms(field):
        held = np.ones(len(left), dtype=bool)
        for component in term:
            held &= _component_agreement(component, codes, left, right)
        agree |= held
    return agree
