"""Mechanical detection of Safe Harbor identifiers in the columns of a release.

Before a release is written, each released column is scanned, by name and
by value, for the identifier kinds of the HIPAA Safe Harbor list (45 CFR
§164.514(b)(2)(i); El Emam & Arbuckle, *Anonymizing Health Data*, ch. 2)
that a machine can recognize: person names (against a list of given names
and surnames), e-mail addresses, telephone/fax numbers, SSN-like numbers and
other long digit identifiers, URLs, IP addresses, full dates, 5-digit ZIP
codes, ages over 89, device/serial numbers and near-unique free text.

Everything works on the distinct values of a column (``value_counts``) with
pandas' vectorized string methods, so the cost grows with the number of
distinct values, not of rows; tables longer than :data:`SAMPLE_ROWS` are
scanned on a seeded random sample of that many rows (the result says so).
The rules, their thresholds and the measured precision and recall are in
docs/deid.md, "Identifier detection".
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from .errors import DeidInputError

#: Rows scanned at most; longer tables are sampled (seeded).
SAMPLE_ROWS = 100_000
#: Below this many non-missing values, near-uniqueness says nothing (every value of 5 rows is unique).
MIN_VALUES_FOR_UNIQUENESS = 20

#: kind -> (description, Safe Harbor item of 45 CFR §164.514(b)(2)(i)), in order of precedence.
KINDS: dict[str, tuple[str, str]] = {
    "email": ("e-mail addresses", "F"),
    "url": ("web URLs", "N"),
    "ip": ("IP addresses", "O"),
    "ssn": ("social security numbers", "G"),
    "date": ("full dates (day precision)", "C"),
    "phone": ("telephone/fax numbers", "D/E"),
    "zip5": ("5-digit ZIP codes", "B"),
    "age_over_89": ("ages over 89", "C"),
    "long_digits": ("long digit identifiers (record, account, plan or licence numbers)", "H-K/R"),
    "serial": ("device or serial numbers / alphanumeric identifiers", "L/M/R"),
    "name": ("person names", "A"),
    "free_text": ("near-unique free text", "R"),
}
#: The kinds that describe a quasi-identifier's detail; in a release whose risk is measured they are governed by it.
QI_KINDS = frozenset({"zip5", "age_over_89", "date"})

_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DAY, _MON = r"(?:0?[1-9]|[12]\d|3[01])", r"(?:0?[1-9]|1[0-2])"
_DATE = re.compile("|".join([
    rf"(?:1[89]|20)\d\d[-/.]{_MON}[-/.]{_DAY}(?:[ T]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?",
    rf"{_DAY}[-/.]{_MON}[-/.](?:(?:1[89]|20)\d\d|\d\d)", rf"{_MON}[-/.]{_DAY}[-/.](?:(?:1[89]|20)\d\d|\d\d)",
    r"(?:1[89]|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])",
    rf"{_DAY}[ -]{_MONTH}[ -,]*(?:1[89]|20)\d\d", rf"{_MONTH} {_DAY}(?:st|nd|rd|th)?,? (?:1[89]|20)\d\d",
]), re.IGNORECASE)
_EMAIL = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
_URL = r"(?:https?://|ftp://|www\.)[^\s]+|\b(?<![@.])[a-z0-9-]+\.(?:com|org|net|edu|gov|io)(?:/[^\s]*)?\b"
_SSN = r"\b\d{3}-\d{2}-\d{4}\b"
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = rf"\b{_OCTET}(?:\.{_OCTET}){{3}}\b"
_IPV6 = r"(?:[0-9a-f]{0,4}:){2,7}[0-9a-f]{0,4}"
_PHONE = (r"(?:\+?1[\s.-]?)?(?:\(\d{3}\)\s?|\d{3}[\s.-])\d{3}[\s.-]\d{4}(?:\s*(?:x|ext\.?)\s*\d{1,5})?"
          r"|\+\d{1,3}(?:[\s.-]?\(?\d{1,4}\)?){2,5}")
_ZIP5 = r"\d{5}(?:-\d{4})?"
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)"
_YEAR_MONTH = r"(?:1[89]|20)\d\d[-/.]?(?:0[1-9]|1[0-2])"
_ICD10 = r"[A-TV-Z]\d[0-9A-Z](?:\.?[0-9A-Z]{1,4})?"
_SERIAL = r"[A-Za-z0-9]+(?:[-_/.:#][A-Za-z0-9]+){0,5}"
#: Column-name words that mark a coded vocabulary (5-digit CPT/ICD-9/DRG codes are not ZIPs).
_CODE_WORDS = frozenset({"cpt", "icd", "icd9", "icd10", "hcpcs", "ndc", "loinc", "snomed", "dx", "px", "drg",
                         "proc", "procedure", "diagnosis", "diag", "code", "codes", "rxnorm", "atc"})
_ZIP_WORDS = frozenset({"zip", "zipcode", "zip5", "postal", "postcode"})


@lru_cache(maxsize=1)
def person_names() -> frozenset[str]:
    """Given names and surnames (lower case, ASCII), generated once from Faker's lists (tests/data/make_name_list.py)."""
    text = resources.files("deid_core").joinpath("data/person_names.txt").read_text(encoding="utf-8")
    return frozenset(text.split())


def name_words(column: str) -> set[str]:
    """Lower-case words of a column name (``snake_case``, ``camelCase``, spaces, dashes)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", str(column))
    return {w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w}


@dataclass(frozen=True)
class Finding:
    """One identifier kind recognized in a column: ``share`` of the scanned non-missing values."""

    column: str
    kind: str
    share: float

    @property
    def description(self) -> str:
        what, item = KINDS[self.kind]
        return f"{what} (Safe Harbor item {item})"


def _distinct(values: pd.Series) -> tuple[pd.Series, np.ndarray]:
    """Distinct non-missing values (stripped strings) and their counts."""
    vc = values.value_counts(dropna=True, sort=False)
    vc = vc[vc.to_numpy() > 0]
    text = pd.Series(vc.index.astype(str), dtype=object).str.strip()
    keep = (text != "").to_numpy()
    return text[keep].reset_index(drop=True), vc.to_numpy()[keep].astype(np.int64)


def column_findings(values: pd.Series, column: str) -> list[Finding]:
    """Identifier kinds recognized in one column, most specific first (see :data:`KINDS`)."""
    v, w = _distinct(values)
    n = int(w.sum())
    if n == 0:
        return []
    d_ratio = len(v) / n
    unique_enough = n >= MIN_VALUES_FOR_UNIQUENESS
    words = name_words(column)

    def share(mask: pd.Series | np.ndarray) -> float:
        return float(w[np.asarray(mask, dtype=bool)].sum() / n)

    def full(pattern: str, flags: int = 0) -> pd.Series:
        return v.str.fullmatch(pattern, flags=flags).fillna(False).astype(bool)

    def anywhere(pattern: str, flags: int = 0) -> pd.Series:
        return v.str.contains(pattern, flags=flags, regex=True).fillna(False).astype(bool)

    found: dict[str, float] = {}
    # patterns specific enough that a few hits anywhere in a value are a leak
    for kind, pattern, flags in (("email", _EMAIL, 0), ("url", _URL, re.IGNORECASE), ("ssn", _SSN, 0)):
        s = share(anywhere(pattern, flags))
        if s >= 0.01:
            found[kind] = s
    ip = full(_IPV4) | (full(_IPV6, re.IGNORECASE) & (v.str.contains("::", regex=False) | anywhere(r"[a-fA-F]")
                                                     | (v.str.count(":") >= 5)))
    if share(ip) >= 0.5:
        found["ip"] = share(ip)
    number = full(_NUMBER)
    date = v.str.fullmatch(_DATE).fillna(False).astype(bool)
    if share(date) >= 0.5:
        found["date"] = share(date)
    phone = full(_PHONE) & ~date & ~number
    if share(phone) >= 0.5 and (d_ratio >= 0.2 or not unique_enough):
        found["phone"] = share(phone)
    zip5 = full(_ZIP5)
    is_zip_name = bool(words & _ZIP_WORDS)
    if not (words & _CODE_WORDS) or is_zip_name:
        if share(zip5) >= (0.5 if is_zip_name else 0.9):
            found["zip5"] = share(zip5)
    if "age" in words or any(x.startswith("age") and x[3:] in ("years", "yrs", "yr", "at") for x in words):
        ages = pd.to_numeric(v.where(number), errors="coerce")
        if share(number) >= 0.9 and (ages > 89).any():
            found["age_over_89"] = share(ages.gt(89).to_numpy())
    if unique_enough:
        digits = v.str.replace(r"[\s-]", "", regex=True)
        all_digits = full(r"\d[\d\s-]*\d") & digits.str.len().ge(6) & ~full(_YEAR_MONTH)
        lengths = digits.str.len()[all_digits]
        if share(all_digits) >= 0.9 and d_ratio >= 0.2 and "date" not in found and "zip5" not in found:
            modal = lengths.mode().iloc[0]
            fixed = share(all_digits & digits.str.len().eq(modal)) >= 0.9 * share(all_digits)
            if fixed or digits[all_digits].str.startswith("0").any() or share(full(r"\d+[\s-]\d+.*")) >= 0.5:
                found["long_digits"] = share(all_digits)
        compact = v.str.replace(r"[-_/.:# ]", "", regex=True)
        serial = (full(_SERIAL) & compact.str.len().between(6, 40) & compact.str.contains(r"[A-Za-z]")
                  & compact.str.count(r"\d").ge(2) & ~full(_ICD10) & ~date & ~ip)
        if share(serial) >= 0.9 and d_ratio >= 0.5:
            found["serial"] = share(serial)
    else:  # too few values to judge uniqueness: distinct digit strings of 9+ digits are identifiers anyway
        digits = v.str.replace(r"[\s-]", "", regex=True)
        long_ids = full(r"\d[\d\s-]*\d") & digits.str.len().ge(9) & ~date
        if share(long_ids) >= 0.9 and len(v) == n and "zip5" not in found:
            found["long_digits"] = share(long_ids)
    _names(v, w, n, d_ratio, found)
    if unique_enough and d_ratio >= 0.8:
        wordy = v.str.count(r"(?:^|\s)[A-Za-z]{2,}\b").ge(3)
        if share(wordy) >= 0.5:
            found["free_text"] = share(wordy)
    return [Finding(column, k, round(found[k], 4)) for k in KINDS if k in found]


def _names(v: pd.Series, w: np.ndarray, n: int, d_ratio: float, found: dict[str, float]) -> None:
    """Person names: values of 1-4 alphabetic words, most of them given names or surnames, many distinct."""
    if len(v) < 10 or d_ratio < 0.05:
        return
    shaped = v.str.fullmatch(r"[A-Za-z][A-Za-z'.-]*(?:,?\s+[A-Za-z][A-Za-z'.-]*){0,3}").fillna(False).to_numpy(bool)
    if w[shaped].sum() < 0.6 * n:
        return
    tokens = v[shaped].str.lower().str.findall(r"[a-z]+").explode()
    tokens = tokens[tokens.str.len().ge(2).fillna(False)]
    hit = tokens.isin(person_names())
    per_value = hit.groupby(level=0).mean()           # share of a value's words that are names
    named = np.zeros(len(v), dtype=bool)
    named[per_value.index.to_numpy()[per_value.to_numpy() >= 0.5]] = True
    s = float(w[named].sum() / n)
    if s >= 0.6:
        found["name"] = s


def scan(df: pd.DataFrame, columns: Iterable[str] | None = None, sample_rows: int = SAMPLE_ROWS,
         seed: int = 0) -> tuple[dict[str, list[Finding]], dict]:
    """Findings per column (only columns with any) and how much was scanned (rows, sampled or not)."""
    columns = list(df.columns if columns is None else columns)
    sampled = len(df) > sample_rows
    part = df[columns].sample(n=sample_rows, random_state=seed) if sampled else df[columns]
    findings = {c: f for c in columns if (f := column_findings(part[c], c))}
    return findings, {"rows": int(len(df)), "rows_scanned": int(len(part)), "sampled": bool(sampled),
                      **({"sample_seed": seed} if sampled else {})}


def parse_accepted(items: Iterable[str] | None, report: str | None = "") -> dict[str, str]:
    """``NAME:REASON`` options -> {column: reason}; the name ends at the first colon.  A reason must
    land in a report: with ``report=None`` (no report file asked for) accepting a column is refused."""
    if items and report is None:
        raise DeidInputError("--accept-column needs a report file (the reason is recorded there)")
    accepted: dict[str, str] = {}
    for item in items or ():
        name, sep, reason = item.partition(":")
        if not sep or not name.strip() or not reason.strip():
            raise DeidInputError(f"--accept-column: expected NAME:REASON, got {item!r}")
        accepted[name.strip()] = " ".join(reason.split())
    return accepted


def check_release(released: pd.DataFrame, fates: Mapping[str, str], *, safe_harbor: bool,
                  accepted: Mapping[str, str] | None = None, masked: Iterable[str] = (),
                  sample_rows: int = SAMPLE_ROWS) -> dict:
    """Refuse a release whose columns look like identifiers; return what was checked and accepted.

    ``fates`` gives each released column's role. Masked columns (pseudonymized, randomized, blanked)
    are handled by their declared treatment and not scanned. In a Safe Harbor release every other
    column is checked for every kind; otherwise a ``quasi`` column is not checked for the
    quasi-identifier kinds (:data:`QI_KINDS`: ZIP, age, date), which the measured risk governs.
    ``accepted`` ({column: reason}) lets named columns through; the reasons go into the report.
    Raises :class:`DeidInputError` (one line naming each column and kind) otherwise.
    """
    accepted = dict(accepted or {})
    unknown = [c for c in accepted if c not in released.columns]
    if unknown:
        raise DeidInputError(f"--accept-column names {', '.join(repr(c) for c in unknown)}, not a released column "
                             f"(released: {', '.join(map(str, released.columns))})")
    leaked = [c for c in released.columns if fates.get(c) == "direct"]
    if leaked:
        raise DeidInputError(f"column(s) declared direct are in the release: {', '.join(map(repr, leaked))}")
    masked = set(masked)
    columns = [c for c in released.columns if c not in masked]
    findings, scanned = scan(released, columns, sample_rows)
    kept = {}
    for c, fs in findings.items():
        fs = [f for f in fs if safe_harbor or fates.get(c) != "quasi" or f.kind not in QI_KINDS]
        if fs:
            kept[c] = fs
    refused = {c: fs for c, fs in kept.items() if c not in accepted}
    if refused:
        parts = [f"{c!r} ({fates.get(c, '?')}) looks like {fs[0].description}" for c, fs in refused.items()]
        raise DeidInputError("identifiers in the release: " + "; ".join(parts) + " - drop the column (declare it "
                             "\"direct\"), generalize it, or pass --accept-column NAME:REASON")
    return {
        "rule": "safe-harbor: every released column, every kind" if safe_harbor else
                "risk-based: quasi-identifiers not checked for ZIP/age/date (the measured risk governs them)",
        **scanned,
        "columns_checked": columns, "masked_columns": sorted(masked & set(released.columns)),
        "findings": {c: [{"kind": f.kind, "what": f.description, "share": f.share} for f in fs]
                     for c, fs in kept.items()},
        "accepted_columns": {c: {"reason": r, "detected": [f.kind for f in kept.get(c, [])]}
                             for c, r in accepted.items()},
    }


__all__ = ["KINDS", "QI_KINDS", "SAMPLE_ROWS", "Finding", "column_findings", "scan", "check_release",
           "parse_accepted", "person_names", "name_words"]
