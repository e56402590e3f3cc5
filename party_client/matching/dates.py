"""Reading a party's date column: in the format it declares, or under ``auto`` in whichever form its
values are written, when the values themselves tell the form.

Read without a flag: the year-first forms (``19670818``, ``1967-08-18``, ``1967/08/18``, ``1967.08.18``,
ISO 8601 with a time of day), the forms with the month named (``18 Aug 1967``, ``August 18, 1967``,
``18-Aug-1967``), and day-first or month-first numbers (``18/08/1967``, ``08/18/1967``, with ``/``,
``-`` or ``.``) when the column shows its order: a first number above 12 is a day, so a column in which
some values read only day first is day first.

Day and month order is never guessed (docs/protocol.md, "Encoding identifiers"): ``03/04/1967`` is the
3rd of April in one registry and the 4th of March in another, and a guess that is wrong for one party
turns true pairs into near misses without a word.  A column whose values all read both ways is refused
with one line naming the two readings and ``--date-format``; so is a column read one way on the strength
of fewer than :data:`MIN_EVIDENCE` values (one mistyped date must not decide a column's order).  The
form chosen, and why, is stated by the dry-run (:func:`date_form`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from party_client.errors import ParameterError, PartyError

AUTO = "auto"
#: Forms ``auto`` reads as they are, in order of preference on a tie.  Only whole dates: a year or a year
#: and month alone (``1967``, ``1967-08``) is never read as a day of it.
YEAR_FIRST = ("%Y%m%d", "%Y-%m-%d", "%Y/%m/%d", "%Y.%m.%d", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S")
NAMED_MONTH = ("%d %b %Y", "%d %B %Y", "%d-%b-%Y", "%b %d, %Y", "%B %d, %Y", "%b %d %Y", "%B %d %Y")
#: Day-first forms and their month-first readings, chosen between by the values.
DAY_FIRST = ("%d/%m/%Y", "%d-%m-%Y", "%d.%m.%Y")
MONTH_FIRST = ("%m/%d/%Y", "%m-%d-%Y", "%m.%d.%Y")
READING = {**dict(zip(DAY_FIRST, MONTH_FIRST)), **dict(zip(MONTH_FIRST, DAY_FIRST))}
#: Distinct values tried per form when choosing (the choice reads a sample; the column is read in full).
SAMPLE = 2000
#: Distinct values that must read only one way before a column's day/month order is taken from them.
MIN_EVIDENCE = 3
#: A value is quoted in a message only when this many records carry it (as for parsing warnings);
#: otherwise its shape is shown (``nn/nn/nnnn``), never one person's date.
MIN_EXAMPLE_RECORDS = 5


@dataclass(frozen=True)
class DateForm:
    """The form a column is read in, and why (for the dry-run)."""

    format: str
    why: str


def _format_error(date_format: str) -> str | None:
    """Why pandas cannot read dates in ``date_format`` (a bad directive, a lone ``%``), or None."""
    try:
        pd.to_datetime(pd.Series(["1970-01-01"]), format=date_format, errors="coerce")
    except ValueError as error:
        return str(error).split("\n")[0]
    return None


def check_date_format(date_format: str) -> None:
    """:class:`ParameterError` (``date_format``) unless it is ``auto`` or a format dates can be read in."""
    failed = None if date_format == AUTO else _format_error(date_format)
    if failed:
        raise ParameterError("date_format", "{name} " + repr(date_format).replace("{", "{{").replace("}", "}}")
                             + " is not a date format (" + failed.replace("{", "{{").replace("}", "}}")
                             + "); write it with strftime's directives, e.g. %d/%m/%Y, or use auto")


def read_dates(text: pd.Series, date_format: str, where: str) -> pd.Series:
    """``text`` (stripped, '' missing) as datetimes, NaT where missing or unreadable; ``where`` names the
    column in errors.  Refused when values are present and none is readable."""
    present = text[text != ""]
    if date_format == AUTO:
        date_format = date_form(present, where).format
    failed = _format_error(date_format)
    if failed:
        raise PartyError(f"{where}: {date_format!r} is not a date format ({failed})")
    dates = pd.to_datetime(text.where(text != "", None), format=date_format, errors="coerce")
    if len(present) and not dates.notna().any():
        raise PartyError(f"{where}: no value matches date_format '{date_format}' (e.g. '{present.iloc[0]}')")
    return dates


def _read(sample: pd.Series, form: str) -> pd.Series:
    return pd.to_datetime(sample, format=form, errors="coerce")


def date_form(present: pd.Series, where: str) -> DateForm:
    """The form reading most of ``present`` (non-empty values) under ``auto``; refused when none reads
    any, or when its day/month order is not shown by at least :data:`MIN_EVIDENCE` distinct values."""
    if present.empty:
        return DateForm(YEAR_FIRST[0], "no values")
    sample = pd.Series(present.unique()[:SAMPLE], dtype=object)
    forms = YEAR_FIRST + NAMED_MONTH + DAY_FIRST + MONTH_FIRST
    read = {form: _read(sample, form) for form in forms}
    best = max(forms, key=lambda form: int(read[form].notna().sum()))        # ties: the first in ``forms``
    count = int(read[best].notna().sum())
    if count == 0:
        raise PartyError(f"{where}: dates like {_example(present, sample)} are in no form read without a format: "
                         "give it with --date-format (e.g. %d/%m/%Y or %m/%d/%Y), or date_format in a rules file")
    if best not in READING:
        kind = "year first" if best in YEAR_FIRST else "month named"
        return DateForm(best, f"{kind}: {count:,} of {len(sample):,} distinct values read")
    other = READING[best]
    only_best = read[best].notna() & read[other].isna()
    if int(only_best.sum()) < MIN_EVIDENCE:
        shown = int(only_best.sum())
        day, month = (best, other) if best in DAY_FIRST else (other, best)
        example = pd.Timestamp(1970, 4, 3).strftime(day)                  # 03/04/1970, 03-04-1970, 03.04.1970
        raise PartyError(f"{where}: dates like {_example(present, sample[read[best].notna()])} read day first or "
                         f"month first ({example}: 3 April 1970 under {day}, 4 March 1970 under {month}), and "
                         f"{'no value shows' if not shown else f'only {shown} show'} which: give --date-format "
                         f"{day} or --date-format {month}, or date_format in a rules file")
    order = "day" if best in DAY_FIRST else "month"
    return DateForm(best, f"{order} first: {int(only_best.sum()):,} of {len(sample):,} distinct values read "
                          f"only {order} first")


def _example(present: pd.Series, candidates: pd.Series) -> str:
    """A value of ``candidates`` quoted if :data:`MIN_EXAMPLE_RECORDS` records carry it, else the first one's
    shape (digits as ``n``)."""
    counts = present.value_counts()
    shared = [value for value in candidates if counts.get(value, 0) >= MIN_EXAMPLE_RECORDS]
    return repr(shared[0]) if shared else "'" + re.sub(r"\d", "n", str(candidates.iloc[0])) + "'"
