"""The transforms of detected spans: ``redact`` (``***``), ``tag`` (``<LAST_NAME:2>``, numbered per document
and type, the same value the same number), ``surrogate`` (a realistic replacement, never the original) and
``generalize`` (dates to their year, ages over 89 to ``90+``, ZIP codes to 3 digits) (El Emam & Arbuckle,
ch. 8 "Free-Form Text"; docs/text.md, "Transforms").

Surrogates are keyed (the data owner's key, docs/masking.md "The owner's key"): a name is drawn from the
shipped lists by HMAC of its value, so the same name gets the same surrogate in every note, a first or middle
name from those of its sex (a name of both sexes or of none from those of both); every date of
one patient moves by the same number of days, HMAC of the patient's id, so intervals survive (El Emam &
Arbuckle, ch. 11 on date shifting); identifiers are replaced digit for digit and letter for letter from the
keyed PRF. A value for which no surrogate (or generalization) can be made is tagged and counted, never kept.
"""
from __future__ import annotations

import hashlib
import hmac
import re
import string
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from operator import itemgetter
from typing import Sequence

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ..errors import DeidInputError, ParameterError
from ..transform.keys import check_key
from ..transform.safe_harbor import RESTRICTED_ZIP3_2000
from .lists import first_names_of_sex, last_names, read_list, sex_of, states
from .spans import Span
from .textdates import shifted, year_of

_WORD_START = re.compile(r"(?:^|(?<=[ -]))[a-z]")
MODES = ("redact", "tag", "surrogate", "generalize")
REDACTED = "***"
_START = itemgetter(0)
MAX_SHIFT_DAYS = 365
_HEADS = re.compile(r"(?:Medical|Health|Care|Cancer|Surgery|Surgical|Dialysis|Imaging|Rehabilitation|Nursing|Urgent)?\s*"
                    r"(?:Hospital|Center|Centre|Clinic|Infirmary|Home|Hospice|System|Healthcare|Care|Group|Practice|"
                    r"Pediatrics|Associates|Institute|Rehab|Memorial|Living|Medicine)$")
_KEEP_WORDS = frozenset(w.lower() for w in read_list("street_suffixes.txt")) | {
    "st", "st.", "ave", "ave.", "rd", "rd.", "blvd", "ln", "dr", "dr.", "ct", "apt", "apt.", "apartment", "suite",
    "ste", "unit", "room", "floor", "n", "s", "e", "w", "north", "south", "east", "west", "po", "p.o.", "box"}


@dataclass
class Outcome:
    """A transformed note and, per PHI type, how many spans were replaced and how many of them tagged because
    no surrogate or generalization could be made."""

    text: str
    replaced: Counter = field(default_factory=Counter)
    tagged: Counter = field(default_factory=Counter)


class Surrogates:
    """Keyed surrogate values (the key is the data owner's, at least 16 bytes; never written anywhere)."""

    def __init__(self, key: bytes | None) -> None:
        self._key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                         info=b"deid_core text surrogates v1").derive(check_key(key))

    def _prf(self, *parts: str) -> bytes:
        return hmac.new(self._key, "\x1f".join(parts).encode("utf-8"), hashlib.sha256).digest()

    def _index(self, n: int, *parts: str) -> int:
        return int.from_bytes(self._prf(*parts)[:8], "big") % n

    def shift_days(self, patient: str) -> int:
        """The patient's date shift: a keyed number of days in [-365, -1] or [1, 365]."""
        k = self._index(2 * MAX_SHIFT_DAYS, "date shift", patient)
        return k - MAX_SHIFT_DAYS if k < MAX_SHIFT_DAYS else k - MAX_SHIFT_DAYS + 1

    def pick(self, pool: Sequence[str], kind: str, value: str) -> str:
        """A keyed draw from ``pool`` that is not ``value`` (ignoring case)."""
        for attempt in range(16):
            choice = pool[self._index(len(pool), kind, value.lower(), str(attempt))]
            if choice.lower() != value.lower():
                return choice
        raise DeidInputError(f"no surrogate {kind} differs from the original")  # a pool of one value

    def characters(self, value: str, kind: str) -> str:
        """``value`` with every digit and letter replaced by a keyed one of the same class (never ``value``)."""
        for attempt in range(16):
            stream = self._prf("characters", kind, value, str(attempt)) + self._prf("more", kind, value, str(attempt))
            out = []
            for i, c in enumerate(value):
                b = stream[i % len(stream)] + i // len(stream)
                if c.isdigit():
                    out.append(string.digits[b % 10])
                elif c.isascii() and c.isalpha():
                    letter = string.ascii_lowercase[b % 26]
                    out.append(letter.upper() if c.isupper() else letter)
                else:
                    out.append(c)
            if "".join(out) != value:
                return "".join(out)
        return value.translate(str.maketrans("0123456789", "1234567890"))

    def value(self, span: Span, patient: str) -> str | None:
        """The surrogate of one span, or None when none can be made."""
        t, v = span.type, span.text
        if t in ("FIRST_NAME", "MIDDLE_NAME", "LAST_NAME"):
            if len(v.rstrip(".")) == 1:
                return self.characters(v, t)
            pool = first_names_of_sex(sex_of(v)) if t != "LAST_NAME" else last_names()
            return _case_like(v, self.pick(pool, t, v))
        if t == "DATE":
            return shifted(v, self.shift_days(patient))
        if t == "AGE":
            return "90+"
        if t in ("MRN", "SSN", "ACCOUNT", "LICENSE", "DEVICE", "ID", "PHONE", "ZIP"):
            return self.characters(v, t)
        if t == "EMAIL":
            return f"{self.pick(last_names(), t, v)}{self._index(100, t, v)}@example.org".replace(" ", "")
        if t == "URL":
            return f"https://example.org/{self._prf(t, v)[:4].hex()}"
        if t == "STREET":
            return re.sub(r"[A-Za-z][A-Za-z'’.-]*|\d+", lambda m: self._street_word(m.group(), v), v)
        if t == "CITY":
            return _case_like(v, self.pick(read_list("cities.txt"), t, v))
        if t == "STATE":
            name = self.pick(list(states()), t, v)
            return states()[name] if len(v.rstrip(".")) == 2 else _case_like(v, name)
        if t == "COUNTRY":
            return _case_like(v, self.pick(read_list("countries.txt"), t, v))
        if t == "FACILITY":
            head = _HEADS.search(v)
            return f"{self.pick(last_names(), t, v).title()} {head.group().strip() if head else 'Clinic'}"
        return None

    def _street_word(self, word: str, street: str) -> str:
        if word.isdigit():
            return self.characters(word, "street number " + street)
        if word.lower() in _KEEP_WORDS:
            return word
        return _case_like(word, self.pick(last_names(), "street", word))


def _case_like(original: str, new: str) -> str:
    """``new`` in the case of ``original``: all lower, all upper or capitalized words."""
    if original.islower():
        return new.lower()
    if original.isupper() and len(original) > 1:
        return new.upper()
    return _WORD_START.sub(lambda m: m.group().upper(), new.lower())  # "Marie-Louise", "De La Cruz"


@lru_cache(maxsize=None)
def _restricted_zip3() -> frozenset[str]:
    return frozenset(RESTRICTED_ZIP3_2000)


def generalized(span: Span) -> str | None:
    """Dates to their year, ages over 89 to ``90+``, US ZIP codes to 3 digits (``000`` for the 3-digit areas of
    20,000 people or fewer, HHS Safe Harbor guidance); None for any other value (it is tagged)."""
    if span.type == "DATE":
        return year_of(span.text)
    if span.type == "AGE":
        return "90+"
    if span.type == "ZIP" and re.fullmatch(r"\d{5}(?:-\d{4})?", span.text):
        zip3 = span.text[:3]
        return "000" if zip3 in _restricted_zip3() else zip3
    return None


def _normal(value: str) -> str:
    return " ".join(value.lower().split())


def transform(text: str, spans: Sequence[Span], mode: str, *, surrogates: Surrogates | None = None,
              patient: str = "") -> Outcome:
    """``text`` with every span replaced as ``mode`` says (spans disjoint, as :func:`detect` returns them).

    ``surrogate`` needs ``surrogates`` (the keyed generator) and takes ``patient`` (the id keying the date
    shift). A span with no surrogate or generalization becomes its tag and is counted in ``tagged``.
    """
    if mode not in MODES:
        raise DeidInputError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    if mode == "surrogate" and surrogates is None:
        raise ParameterError("mode surrogate needs a key ({key} or DEID_KEY)", "key")
    out, last = [], 0
    numbers: dict[str, dict[str, int]] = {}
    replaced: dict[str, int] = {}  # counted in plain dictionaries, made Counters once (a Counter's += is slower)
    tagged: dict[str, int] = {}
    for span in sorted(spans, key=_START):
        start, end, type_, value = span[:4]
        if start < last:
            raise DeidInputError("spans overlap: resolve them first (deid_core.text.resolve)")
        new = None
        if mode == "redact":
            new = REDACTED
        elif mode == "surrogate":
            new = surrogates.value(span, patient)
        elif mode == "generalize":
            new = generalized(span)
        if new is None or (mode == "surrogate" and new == value):
            seen = numbers.get(type_)
            if seen is None:
                seen = numbers[type_] = {}
            new = f"<{type_}:{seen.setdefault(_normal(value), len(seen) + 1)}>"
            if mode != "tag":
                tagged[type_] = tagged.get(type_, 0) + 1
        replaced[type_] = replaced.get(type_, 0) + 1
        out.append(text[last:start])
        out.append(new)
        last = end
    out.append(text[last:])
    return Outcome("".join(out), Counter(replaced), Counter(tagged))
