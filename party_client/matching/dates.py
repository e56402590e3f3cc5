"""Reading a party's date column: in the format it declares, or under ``auto`` in whichever year-first
form its values are written (``19670818``, ``1967-08-18``, ``1967/08/18``, ``1967.08.18``, or ISO 8601
with a time of day).

Day and month order is never guessed (docs/protocol.md, "Encoding identifiers"): ``03/04/1967`` is the
3rd of April in one registry and the 4th of March in another, and a guess that is wrong for one party
turns true pairs into near misses without a word.  ``auto`` therefore reads only forms whose order is
fixed, and refuses a column in any other form with one line asking for ``--date-format``.
"""
from __future__ import annotations

import pandas as pd

from party_client.errors import PartyError

AUTO = "auto"
#: The forms ``auto`` tries, in order; the one reading the most of a column's values is used for all of it.
#: Only whole dates: a year or a year and month alone (``1967``, ``1967-08``) is never read as a day of it.
YEAR_FIRST = ("%Y%m%d", "%Y-%m-%d", "%Y/%m/%d", "%Y.%m.%d", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S")
#: Distinct values tried per form when choosing (the choice reads a sample; the column is read in full).
SAMPLE = 2000


def read_dates(text: pd.Series, date_format: str, where: str) -> pd.Series:
    """``text`` (stripped, '' missing) as datetimes, NaT where missing or unreadable; ``where`` names the
    column in errors.  Refused when values are present and none is readable."""
    present = text[text != ""]
    if date_format == AUTO:
        date_format = year_first_format(present, where)
    dates = pd.to_datetime(text.where(text != "", None), format=date_format, errors="coerce")
    if len(present) and not dates.notna().any():
        raise PartyError(f"{where}: no value matches date_format '{date_format}' (e.g. '{present.iloc[0]}')")
    return dates


def year_first_format(present: pd.Series, where: str) -> str:
    """The year-first form reading most of ``present`` (non-empty values); refused when none reads any."""
    if present.empty:
        return YEAR_FIRST[0]
    sample = pd.Series(present.unique()[:SAMPLE], dtype=object)
    read = {form: int(pd.to_datetime(sample, format=form, errors="coerce").notna().sum()) for form in YEAR_FIRST}
    best = max(YEAR_FIRST, key=lambda form: read[form])           # ties: the first in YEAR_FIRST
    if read[best] == 0:
        raise PartyError(f"{where}: dates like '{sample.iloc[0]}' are not written year first, and their day/month "
                         "order is never guessed: give it with --date-format (e.g. %d/%m/%Y or %m/%d/%Y), or "
                         "date_format in a rules file")
    return best
