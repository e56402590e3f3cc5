"""Dates as written in notes: parsed into their parts (year, month, day, each where it sits in the text) so a
shifted date is written back in the same form ("Jan '19" stays "Mon 'YY", "the third of July" stays words),
and a date is generalized to its year (El Emam & Arbuckle, ch. 8 "Free-Form Text", and ch. 11 on date
shifting keeping intervals)."""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Final


MONTH_NAMES: Final = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
                      "october", "november", "december")
_ORDINAL_WORDS: Final = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
                         "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth",
                         "eighteenth", "nineteenth", "twentieth"]
_ORDINALS: Final = {w: i + 1 for i, w in enumerate(_ORDINAL_WORDS)} | {"thirtieth": 30}
for _i, _w in enumerate(_ORDINAL_WORDS[:9]):
    _ORDINALS[f"twenty-{_w}"] = _ORDINALS[f"twenty {_w}"] = 21 + _i
_ORDINALS["thirty-first"] = _ORDINALS["thirty first"] = 31
_PARTS: Final = re.compile(r"(?P<ord>(?:(?:twenty|thirty)[- ])?(?:" + "|".join(_ORDINAL_WORDS + ["thirtieth"]) + r"))|"
                           r"(?P<mon>[A-Za-z]{3,9})\.?|(?P<y2>['’]\d{2})|(?P<num>\d+)(?P<suf>st|nd|rd|th)?", re.IGNORECASE)
_ORDINAL_IN: Final = re.compile("|".join(_ORDINAL_WORDS + ["thirtieth"]), re.IGNORECASE)
_NUMERIC: Final = re.compile(r"\d+(?:[-/.]\d+)*")
_SEPARATORS: Final = re.compile(r"[-/.]")
_MONTH_INDEX: Final = {m: i + 1 for i, m in enumerate(MONTH_NAMES)} | {m[:3]: i + 1 for i, m in enumerate(MONTH_NAMES)} | {
    "sept": 9}
REFERENCE_YEAR: Final = 2000  # a leap year: a date written without its year is shifted within it


@dataclass(frozen=True, slots=True)
class WrittenDate:
    """A date of a note: its parts (``None`` when not written) and where each part sits in ``text``."""

    text: str
    year: int | None
    month: int
    day: int | None
    parts: tuple[tuple[int, int, str], ...]  # (start, end, kind) with kind year4 year2 yq month mon-name day ord

    def render(self, date: dt.date) -> str:
        """``date`` written in this date's form (parts not written here stay unwritten)."""
        out, last = [], 0
        numeric = [self.text[s:e] for s, e, k in self.parts if k in ("month", "day") and self.text[s:e].isdigit()]
        padded = len(numeric) == 2 and all(len(n) == 2 for n in numeric)  # "03/14/2019": both parts 2 digits
        for start, end, kind in self.parts:
            out.append(self.text[last:start])
            out.append(_write(self.text[start:end], kind, date, padded))
            last = end
        return "".join(out) + self.text[last:]

    def as_date(self) -> dt.date:
        return dt.date(self.year or REFERENCE_YEAR, self.month, self.day or 15)


def _write(old: str, kind: str, date: dt.date, padded: bool) -> str:
    if kind == "year4":
        return f"{date.year:04d}"
    if kind in ("year2", "yq"):
        return (old[0] if kind == "yq" else "") + f"{date.year % 100:02d}"
    if kind == "month":
        return f"{date.month:0{2 if padded or old.startswith('0') else 1}d}"
    if kind == "mon-name":
        name = MONTH_NAMES[date.month - 1]
        name = name[:3] if len(old) <= 4 and old.lower() != "june" and old.lower() != "july" else name
        if old.lower() == "sept":
            name = name[:4] if date.month == 9 else name[:3]
        return name.upper() if old.isupper() and len(old) > 1 else (name.capitalize() if old[0].isupper() else name)
    if kind == "ord":
        word = next(w for w, d in _ORDINALS.items() if d == date.day and " " not in w)
        return word.capitalize() if old[0].isupper() else word
    digits = old.rstrip("stndrh")
    suffix = "" if digits == old else _suffix(date.day)
    return f"{date.day:0{2 if padded or digits.startswith('0') else 1}d}{suffix}"


def _suffix(day: int) -> str:
    return "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def may_fall_on(text: str, day: int) -> bool:
    """Whether a date written as ``text`` can be of day ``day``: the day's digits or an ordinal word stand in it
    (:func:`parse` reads a day from nothing else). A substring test, much cheaper than parsing a date met for the
    first time."""
    return str(day) in text or _ORDINAL_IN.search(text) is not None


#: A date's year, month, day and parts, as :class:`WrittenDate` holds them.
Reading = tuple[int | None, int, int | None, tuple[tuple[int, int, str], ...]]


def parse(text: str) -> WrittenDate | None:
    """The parts of a date as the recognizers find it, or None when it is not a valid calendar date."""
    reading = read(text)
    return None if reading is None else WrittenDate(text, *reading)


@lru_cache(maxsize=16384)
def read(text: str) -> Reading | None:
    """:func:`parse`'s year, month, day and parts of ``text``, or None: a function of the text, kept for the dates
    met again. Kept as a plain tuple of numbers and strings, which Python's garbage collector stops tracking at its
    first look, where a cache of objects would be walked by every collection of its oldest generation."""
    year = month = day = None
    parts: list[tuple[int, int, str]] = []
    numbers: list[tuple[int, int, str]] = []
    if _NUMERIC.fullmatch(text):  # digits and separators only (most dates): no month name, ordinal or 'YY
        at = 0
        for group in _SEPARATORS.split(text):
            numbers.append((at, at + len(group), group))
            at += len(group) + 1
        year, month, day = _numeric(numbers, parts)
        return None if month is None else _checked(year, month, day, parts)
    for m in _PARTS.finditer(text):
        if m.group("ord"):
            day = _ORDINALS.get(m.group("ord").lower().replace("  ", " "))
            parts.append((m.start(), m.end(), "ord"))
        elif m.group("mon"):
            if m.group("mon").lower() in _MONTH_INDEX:
                month = _MONTH_INDEX[m.group("mon").lower()]
                parts.append((m.start("mon"), m.end("mon"), "mon-name"))
        elif m.group("y2"):
            year = 2000 + int(m.group("y2")[1:]) if int(m.group("y2")[1:]) < 50 else 1900 + int(m.group("y2")[1:])
            parts.append((m.start(), m.end(), "yq"))
        else:
            numbers.append((m.start(), m.end(), m.group("num")))
    if month is not None:  # a month name: a number of 4 digits is the year, one of 1-2 digits the day
        for start, end, number in numbers:
            if len(number) == 4:
                year = int(number)
                parts.append((start, end, "year4"))
            elif len(number) <= 2:
                day = int(number)
                parts.append((start, end, "day"))
    else:
        year, month, day = _numeric(numbers, parts)
        if month is None:
            return None
    return _checked(year, month, day, parts)


def _checked(year: int | None, month: int, day: int | None, parts: list[tuple[int, int, str]]) -> Reading | None:
    parts.sort()
    try:
        dt.date(year or REFERENCE_YEAR, month, day or 1)
    except (ValueError, TypeError):
        return None
    return year, month, day, tuple(parts)


def _numeric(numbers: list[tuple[int, int, str]], parts: list[tuple[int, int, str]]
             ) -> tuple[int | None, int | None, int | None]:
    """ISO (Y-M-D), M/D/Y (or D/M/Y when the first number is over 12), M/D and M/YYYY."""
    vals = [number for _, _, number in numbers]
    kinds: tuple[str, ...]
    if len(vals) == 3 and len(vals[0]) == 4:
        kinds = ("year4", "month", "day")
    elif len(vals) == 3:
        first_day = int(vals[0]) > 12
        kinds = ("day", "month", "year4" if len(vals[2]) == 4 else "year2") if first_day else (
            "month", "day", "year4" if len(vals[2]) == 4 else "year2")
    elif len(vals) == 2:
        kinds = ("month", "year4") if len(vals[1]) == 4 else ("month", "day")
    else:
        return None, None, None
    got: dict[str, int] = {}
    for (start, end, number), kind in zip(numbers, kinds):
        parts.append((start, end, kind))
        got[kind] = int(number)
    year = got.get("year4") or (None if "year2" not in got else (2000 + got["year2"] if got["year2"] < 50
                                                                  else 1900 + got["year2"]))
    return year, got.get("month"), got.get("day")


def shifted(text: str, days: int) -> str | None:
    """``text`` (a date) moved by ``days`` and written in its own form; None when it cannot be parsed."""
    written = parse(text)
    if written is None:
        return None
    return written.render(written.as_date() + dt.timedelta(days=days))


def year_of(text: str) -> str | None:
    """The year of a written date ("2019"), or None when the text does not give one."""
    written = parse(text)
    return None if written is None or written.year is None else f"{written.year:04d}"
