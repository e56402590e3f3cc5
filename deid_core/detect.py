"""Mechanical detection of Safe Harbor identifiers in the columns of a release.

Before a release is written, each released column is scanned, by name and
by value, for the identifier kinds of the HIPAA Safe Harbor list (45 CFR
§164.514(b)(2)(i); El Emam & Arbuckle, *Anonymizing Health Data*, ch. 2)
that a machine can recognize: person names (by a large list of given names
and surnames, the values' shape and number, and the column's name), street
addresses and house numbers, e-mail addresses, telephone/fax numbers,
SSN-like numbers and other long digit identifiers, URLs, IP addresses, full
dates, 5-digit ZIP codes, ages over 89, device/serial numbers, values a record
linkage derived from identifiers (match weights, pair and cluster ids) and
near-unique free text.

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

from .errors import DeidInputError, ParameterError, literal

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
    "street_number": ("house or street numbers (part of a street address)", "B"),
    "address": ("street addresses", "B"),
    "name": ("person names", "A"),
    "linkage": ("values a record linkage derived from identifiers (match weights, pair, cluster or link ids)", "R"),
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
_URL = r"(?:https?://|ftp://|www\.)[^\s]+|\b(?<![@.])[a-z0-9-]+\.(?:com|org|net|edu|gov|io)(?:/[^\s]*)?\b(?![.\w])"
_SSN = r"\b\d{3}-\d{2}-\d{4}\b"
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = rf"\b{_OCTET}(?:\.{_OCTET}){{3}}\b"
_IPV6 = r"(?:[0-9a-f]{0,4}:){2,7}[0-9a-f]{0,4}"
_PHONE = (r"(?:\+?1[\s.-]?)?(?:\(\d{3}\)\s?|\d{3}[\s.-])\d{3}[\s.-]\d{4}(?:\s*(?:x|ext\.?)\s*\d{1,5})?"
          r"|\+\d{1,3}(?:[\s.-]?\(?\d{1,4}\)?){2,5}")
_ZIP5 = r"\d{5}(?:-\d{4})?"
#: Any written phone number (ITU-T E.123 national and international forms), trusted only under a phone column name.
_PHONE_ANY = r"(?:\+|00)?[\d\s().\-/]{6,24}(?:\s*(?:x|ext\.?)\s*\d{1,5})?"
_PHONE_WORDS = frozenset({"phone", "phones", "telephone", "tel", "mobile", "cell", "cellphone", "fax", "landline",
                          "handy", "telefon", "telefono", "telephone", "pager"})
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)"
_YEAR_MONTH = r"(?:1[89]|20)\d\d[-/.]?(?:0[1-9]|1[0-2])"
_ICD10 = r"[A-TV-Z]\d[0-9A-Z](?:\.?[0-9A-Z]{1,4})?"
_SERIAL = r"[A-Za-z0-9]+(?:[-_/.:#][A-Za-z0-9]+){0,5}"
#: Column-name words that mark a coded vocabulary (5-digit CPT/ICD-9/DRG codes are not ZIPs).
_CODE_WORDS = frozenset({"cpt", "icd", "icd9", "icd10", "hcpcs", "ndc", "loinc", "snomed", "dx", "px", "drg",
                         "proc", "procedure", "diagnosis", "diag", "code", "codes", "rxnorm", "atc"})
_ZIP_WORDS = frozenset({"zip", "zipcode", "zip5", "postal", "postcode"})

# Person names (docs/deid.md, "Identifier detection"): column-name cues for and against, and the shape of a name.
#: Column-name words that by themselves say the column holds a person's name.
_PERSON_NAME_WORDS = frozenset({"surname", "surnames", "lastname", "firstname", "forename", "forenames", "givenname",
                                "fullname", "fname", "lname", "maiden", "middlename", "nachname", "vorname", "prenom",
                                "apellido", "apellidos", "cognome"})
#: Words that, beside ``name``, make it a person's name (``patient_name``, ``given_name``, ``name_of_kin``).
_NAME_QUALIFIERS = frozenset({"name", "names", "first", "last", "given", "family", "middle", "full", "birth", "patient",
                              "pt", "person", "client", "member", "subscriber", "guarantor", "insured", "mother",
                              "father", "spouse", "partner", "contact", "emergency", "kin", "next", "of", "nok",
                              "relative", "guardian", "parent", "child", "doctor", "physician", "provider", "nurse",
                              "author", "witness", "sur", "legal", "preferred", "display", "alias"})
#: Column-name words that say the column holds places, things or categories, not persons.
_NOT_PERSON_WORDS = frozenset({
    "city", "town", "suburb", "locality", "village", "county", "country", "state", "province", "region", "district",
    "street", "road", "address", "addr", "drug", "drugs", "medication", "medicine", "med", "meds", "hospital",
    "facility", "clinic", "practice", "site", "company", "employer", "organization", "organisation", "org", "product",
    "brand", "file", "filename", "host", "hostname", "user", "username", "login", "test", "lab", "procedure",
    "diagnosis", "dx", "race", "ethnicity", "ethnic", "sex", "gender", "occupation", "job", "workclass", "marital",
    "relationship", "education", "religion", "language", "nationality", "native", "species", "breed", "color",
    "colour", "device", "model", "manufacturer", "payer", "plan", "insurer", "insurance", "ward", "unit",
    "department", "dept", "service", "specialty", "speciality", "category", "type", "class", "status", "code",
    "group"})
_LETTER = r"[^\W\d_]"
#: 1-4 words of letters (any script), apostrophes, dots and hyphens inside: ``O'Brien``, ``Smith-Jones``, ``Lee, J.``
_NAME_SHAPE = rf"{_LETTER}(?:{_LETTER}|['’.-])*(?:,?\s+{_LETTER}(?:{_LETTER}|['’.-])*){{0,3}}"

# Street addresses (45 CFR §164.514(b)(2)(i)(B)): the street types of Australia Post's "Addressing guidelines"
# (FEBRL's addresses), the USPS "Publication 28" (appendix C1) types common in health data, the Hungarian types, and
# the street words that open (Romance languages, Polish, Romanian, Russian) or close (German, Dutch, Scandinavian
# compounds) a street's name.
_STREET_TYPES = (r"street|st|road|rd|avenue|ave|av|drive|dr|lane|ln|court|ct|crescent|cres|crs|place|pl|terrace|tce"
                 r"|boulevard|blvd|circuit|cct|close|parade|pde|highway|hwy|way|grove|gr|square|sq|parkway|pkwy"
                 r"|circle|cir|trail|trl|esplanade|esp|mews|alley|wynd|promenade"
                 r"|utca|út|tér|körút|köz|rakpart|sétány|fasor")
_STREET_OPENERS = (r"rue|avenue|av|boulevard|bd|chemin|all[ée]e|impasse|quai|cours|route|via|viale|piazza|piazzale"
                   r"|corso|vicolo|largo|contrada|borgo|calle|avenida|avda|paseo|plaza|camino|carrera|carretera"
                   r"|ronda|traves[íi]a|callej[óo]n|pasaje|cuesta|urbanizaci[óo]n|glorieta|rambla|rua|travessa"
                   r"|estrada|alameda|pra[çc]a|rodovia|ladeira|ulica|ul|aleja|al|osiedle|plac|strada|bulevardul"
                   r"|drumul|[șs]oseaua|calea|aleea|intrarea|pia[țt]a|splaiul|ул|улица|пер|переулок|пр|проспект|ш"
                   r"|шоссе|бул|бульвар|наб|набережная|пл|площадь")
_STREET_SUFFIXES = (r"stra[ßs]s?e|str\.|gasse|platz|allee|damm|chaussee|straat|laan|gracht|plein|kade|singel|dijk"
                    r"|gatan|v[äa]gen|gr[äa]nd|veien|-ring|-weg")
_HOUSE = r"\d{1,5}[a-z]?(?:\s*[-/]\s*\d{1,5}[a-z]?)?"
_WORD = rf"{_LETTER}[\w'’.-]*"
#: Street, unit and box forms that only addresses take (a few distinct values suffice).
_ADDRESS_SPECIFIC = "|".join([
    rf"(?:{_HOUSE},?\s+)?(?:{_WORD}\s+){{1,5}}(?:{_STREET_TYPES})\.?(?:$|[\s,])",       # 4 o'connell crescent
    rf"(?:{_HOUSE},?\s+)?(?:{_STREET_OPENERS})\.?\s+{_WORD}",                        # 12, rue de la Paix; Via Roma 5
    rf"(?:.*[\s-])?{_LETTER}*(?:{_STREET_SUFFIXES}),?\s*{_HOUSE}\b",                 # Hauptstraße 5, Storgatan 77
    rf"(?:unit|apt|apartment|apmnt|suite|ste|flat|studio|villa)\.?\s*#?\s*\d+[a-z]?\b",  # unit 3, Apt. 915
    r"(?:p\.?\s?o\.?\s*box|post\s+office\s+box|gpo\s+box|locked\s+bag|private\s+bag|pmb)\s*#?\s*\d+",  # box
])
#: A house number and words in either order (``141 Hodges Mountains``, ``Skolvägen 669``): an address only when
#: nearly every value is distinct, since ``Stage 2`` or ``Ward 5`` take the same shape.
_ADDRESS_GENERIC = (rf"{_HOUSE},?\s+{_WORD}(?:\s+{_WORD}){{0,4}}(?:$|,|\s+(?:apt|suite|ste|unit|flat|#)\.?\s*\d)"
                    rf"|{_WORD}(?:\s+{_WORD}){{0,4}},?\s+{_HOUSE}\.?(?:$|,)")
_ADDRESS_WORDS = frozenset({"address", "addr", "street", "residence", "domicile", "strasse", "rue", "calle"})
_NOT_ADDRESS_WORDS = frozenset({"email", "mail", "ip", "ipv4", "ipv6", "mac", "web", "url", "host"})
#: ``street_number``, ``house_no``: a column of house numbers.
_HOUSE_WORDS = frozenset({"street", "house", "building", "bldg", "civic", "door", "hse"})
_NUMBER_WORDS = frozenset({"number", "no", "num", "nr", "nbr"})
_HOUSE_NUMBER_WORDS = frozenset({"streetnumber", "housenumber", "streetno", "houseno", "hausnummer", "huisnummer"})
# Derived by record linkage from the identifiers it compared (Fellegi & Sunter 1969, the match weight; Christen,
# *Data Matching*, ch. 6-7): weights, probabilities and the ids of linked pairs and clusters.
_LINK_WORDS = frozenset({"match", "matched", "matching", "link", "linked", "linkage", "pair", "cluster", "dedup",
                         "duplicate"})
_DERIVED_WORDS = frozenset({"weight", "weights", "probability", "prob", "score", "posterior", "id", "ids", "key",
                            "no", "number", "index", "idx"})


@lru_cache(maxsize=1)
def person_names() -> frozenset[str]:
    """Given names and surnames (lower case, ASCII): the US censuses' and Faker's lists (deid_core/data/README.md)."""
    text = resources.files("deid_core").joinpath("data/person_names.txt").read_text(encoding="utf-8")
    return frozenset(text.split())


@lru_cache(maxsize=1)
def _name_index() -> pd.Index:
    """:func:`person_names` as an index, whose hash table is built once (``isin`` with a set rebuilds it per call)."""
    return pd.Index(sorted(person_names()), dtype=object)


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
    if words & _PHONE_WORDS:  # a column named for phones: any grouping of 7-15 digits (every country's plan)
        phone = phone | (full(_PHONE_ANY) & v.str.count(r"\d").between(7, 20) & ~date)
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
    _street(v, w, n, words, found)
    if not found.keys() & {"email", "url", "ip", "address"}:
        _names(v, w, n, words, found)
    if words & _LINK_WORDS and words & _DERIVED_WORDS:
        found["linkage"] = 1.0
    if unique_enough and d_ratio >= 0.8:
        wordy = v.str.count(r"(?:^|\s)[A-Za-z]{2,}\b").ge(3)
        if share(wordy) >= 0.5:
            found["free_text"] = share(wordy)
    return [Finding(column, k, round(found[k], 4)) for k in KINDS if k in found]


def _varied(v: pd.Series, w: np.ndarray, n: int, min_distinct: int, min_ratio: float, many: int | None = 30) -> bool:
    """Values as varied as names or addresses: at least ``min_distinct`` distinct values, and ``many`` of them or
    ``min_ratio`` distinct per value (a long table repeats a person's values over visits), none of them on more
    than a fifth of the rows (a category such as a country of birth has a dominant value)."""
    d = len(v)
    return d >= min_distinct and w.max() <= 0.2 * n and ((many is not None and d >= many) or d / n >= min_ratio)


def _street(v: pd.Series, w: np.ndarray, n: int, words: set[str], found: dict[str, float]) -> None:
    """Street addresses and house numbers (Safe Harbor item B), unless a more specific kind was found."""
    if found or words & _NOT_ADDRESS_WORDS:
        return
    if words & _HOUSE_NUMBER_WORDS or (words & _HOUSE_WORDS and words & _NUMBER_WORDS):
        s = float(w[v.str.fullmatch(_HOUSE, flags=re.IGNORECASE).fillna(False).to_numpy(bool)].sum() / n)
        if s >= 0.5:
            found["street_number"] = s
            return
    line = v.str.replace(r"\n.*", "", regex=True, flags=re.DOTALL).str.strip()
    specific = line.str.match(_ADDRESS_SPECIFIC, flags=re.IGNORECASE).fillna(False).to_numpy(bool)
    generic = specific | line.str.match(_ADDRESS_GENERIC, flags=re.IGNORECASE).fillna(False).to_numpy(bool)
    lettered = v.str.contains(_LETTER, regex=True).fillna(False).to_numpy(bool)
    cued = bool(words & _ADDRESS_WORDS)
    for mask, ok in ((specific, share_of(w, specific, n) >= (0.2 if cued else 0.5) and _varied(v, w, n, 5, 0.05)),
                     (generic, share_of(w, generic, n) >= 0.5 and _varied(v, w, n, 20, 0.3, many=None)),
                     (lettered, cued and share_of(w, lettered, n) >= 0.5 and _varied(v, w, n, 10, 0.05))):
        if ok:
            found["address"] = share_of(w, mask, n)
            return


def share_of(w: np.ndarray, mask: np.ndarray, n: int) -> float:
    """The share of the ``n`` values that the distinct values selected by ``mask`` (their counts ``w``) hold."""
    return float(w[mask].sum() / n)


def _names(v: pd.Series, w: np.ndarray, n: int, words: set[str], found: dict[str, float]) -> None:
    """Person names: values shaped like names (1-4 words of letters), weighed by three signs that do not lean on
    one another - how many are in the name list, how varied they are, and what the column's name says."""
    cued = bool(words & _PERSON_NAME_WORDS) or ("name" in words and all(
        x in _NAME_QUALIFIERS or len(x) == 1 or x.isdigit() for x in words))
    if not cued and words & _NOT_PERSON_WORDS or len(v) < 2:
        return
    shaped = v.str.fullmatch(_NAME_SHAPE).fillna(False).to_numpy(bool)
    if share_of(w, shaped, n) < 0.6:
        return
    tokens = (v[shaped].str.normalize("NFKD").str.encode("ascii", "ignore").str.decode("ascii").str.lower()
              .str.findall(r"[a-z]+").explode())
    tokens = tokens[tokens.str.len().ge(2).fillna(False)]
    hit = pd.Series(_name_index().get_indexer(tokens.to_numpy(dtype=object)) >= 0, index=tokens.index)
    per_value = hit.groupby(level=0).mean()                           # share of a value's words that are names
    listed = np.zeros(len(v), dtype=bool)
    listed[per_value.index.to_numpy()[per_value.to_numpy() >= 0.5]] = True
    in_list = share_of(w, listed, n)
    if cued:      # the column says it holds names: listed names, or values as varied as names (any script)
        ok = in_list >= 0.3 or _varied(v, w, n, 20, 0.05)
    else:         # most values are listed names, or many are and the rest are as varied as names
        ok = (in_list >= 0.6 and _varied(v, w, n, 10, 0.2)) or (in_list >= 0.3 and _varied(v, w, n, 50, 0.1, 50))
    if ok:
        found["name"] = max(in_list, share_of(w, shaped, n)) if cued else in_list


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
        raise ParameterError("{accepted} needs a report file (the reason is recorded there)", "accepted")
    accepted: dict[str, str] = {}
    for item in items or ():
        name, sep, reason = item.partition(":")
        if not sep or not name.strip() or not reason.strip():
            raise ParameterError(f"{{accepted}}: expected NAME:REASON, got {literal(repr(item))}", "accepted")
        accepted[name.strip()] = " ".join(reason.split())
    return accepted


def check_release(released: pd.DataFrame, fates: Mapping[str, str], *, safe_harbor: bool,
                  accepted: Mapping[str, str] | None = None, masked: Iterable[str] = (),
                  notes: Mapping[str, dict] | None = None, sample_rows: int = SAMPLE_ROWS) -> dict:
    """Refuse a release whose columns look like identifiers; return what was checked and accepted.

    ``fates`` gives each released column's role. Masked columns (pseudonymized, randomized, blanked)
    are handled by their declared treatment and not scanned. In a Safe Harbor release every other
    column is checked for every kind; otherwise a ``quasi`` column is not checked for the
    quasi-identifier kinds (:data:`QI_KINDS`: ZIP, age, date), which the measured risk governs.
    ``accepted`` ({column: reason}) lets named columns through; the reasons go into the report.
    A ``text`` column (free-text notes) is released only de-identified: ``notes`` holds, per such column,
    what its de-identification found (:mod:`deid_core.transform.notes`); one missing from it is refused, so
    a path that did not treat its notes fails closed.
    Raises :class:`DeidInputError` (one line naming each column and kind) otherwise.
    """
    accepted = dict(accepted or {})
    unknown = [c for c in accepted if c not in released.columns]
    if unknown:
        raise ParameterError(f"{{accepted}} names {literal(', '.join(repr(c) for c in unknown))}, not a released "
                             f"column (released: {literal(', '.join(map(str, released.columns)))})", "accepted")
    leaked = [c for c in released.columns if fates.get(c) == "direct"]
    if leaked:
        raise DeidInputError(f"column(s) declared direct are in the release: {', '.join(map(repr, leaked))}")
    notes = dict(notes or {})
    raw = [c for c in released.columns if fates.get(c) == "text" and c not in notes]
    if raw:
        raise DeidInputError(f"column(s) declared text are in the release without their notes de-identified: "
                             f"{', '.join(map(repr, raw))} - release them through deid apply or deid search, or "
                             "declare them \"direct\"")
    masked = set(masked) | set(notes)
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
        raise ParameterError("identifiers in the release: " + literal("; ".join(parts)) + " - drop the column "
                             "(declare it \"direct\"), generalize it, or pass {accepted} NAME:REASON", "accepted")
    return {
        "rule": "safe-harbor: every released column, every kind" if safe_harbor else
                "risk-based: quasi-identifiers not checked for ZIP/age/date (the measured risk governs them)",
        **scanned,
        "columns_checked": columns, "masked_columns": sorted((masked - set(notes)) & set(released.columns)),
        **({"notes": notes} if notes else {}),
        "findings": {c: [{"kind": f.kind, "what": f.description, "share": f.share} for f in fs]
                     for c, fs in kept.items()},
        "accepted_columns": {c: {"reason": r, "detected": [f.kind for f in kept.get(c, [])]}
                             for c, r in accepted.items()},
    }


__all__ = ["KINDS", "QI_KINDS", "SAMPLE_ROWS", "Finding", "column_findings", "scan", "check_release",
           "parse_accepted", "person_names", "name_words"]
