"""Values a field could not use: counted per field, warned about, refused above half unless forced.

A field turns each record's text into a code (a date into ``YYYYMMDD``, a number into an integer, a
name into letters); a value that is present but yields no code (``31/02/1970``, ``1970-13-01`` under
``%Y%m%d``, ``n/a`` as a number) would otherwise become "missing" and quietly lose the record its
matches.  :func:`unparsed_fields` counts them per field from the same codes the keys are built from;
:func:`check_unparsed` says so above :data:`WARN_SHARE` and refuses above :data:`REFUSE_SHARE`
unless the user forces it (docs/linking.md, values a field cannot read).  Example values are shown
only when at least :data:`MIN_EXAMPLE_RECORDS` records carry them, so a warning never prints one
person's value.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

import pandas as pd

from party_client.errors import PartyError
from party_client.matching.dates import AUTO, date_form

log = logging.getLogger("party_client.matching")

WARN_SHARE = 0.05        # above this share of present values unread: a warning
REFUSE_SHARE = 0.5       # above this share: refused unless forced
MIN_EXAMPLE_RECORDS = 5  # an example value is printed only when this many records carry it
EXAMPLES = 3


@dataclass(frozen=True)
class Unparsed:
    """One field's values that were present in the table but gave no code."""

    field: str
    columns: tuple[str, ...]
    present: int
    unparsed: int
    examples: tuple[str, ...]
    hint: str = ""

    @property
    def share(self) -> float:
        return self.unparsed / self.present if self.present else 0.0

    def describe(self) -> str:
        shown = f" (e.g. {', '.join(repr(e) for e in self.examples)})" if self.examples else ""
        return (f"field '{self.field}' (column {', '.join(repr(c) for c in self.columns)}): {self.unparsed:,} of "
                f"{self.present:,} values ({self.share:.0%}) could not be read{self.hint} and count as missing{shown}")


def _sources(rules) -> list[tuple[str, tuple[str, ...], str, str]]:
    """(field, source columns, code key, hint) per field of either kind of rules."""
    from party_client.matching.level_rules import LevelRules
    if isinstance(rules, LevelRules):
        out = []
        for f in rules.model.fields:
            hint = " as a date in the form found in the column" if f.value_type == "date" and f.date_format == AUTO else \
                f" as date_format '{f.date_format}'" if f.value_type == "date" and f.date_format else \
                " as a date (year, month, day)" if f.value_type == "date" else \
                " as a whole number" if f.value_type == "number" else ""
            out.append((f.name, tuple(f.columns), f.name, hint))
        return out
    return [(f.name, (f.column,), f"{f.name}.year" if f.encoder == "dob_ndi" else f.name,
             f" as date_format '{f.date_format}'" if f.encoder == "dob_ndi" else "") for f in rules.fields.values()]


def _auto_dates(rules) -> list[tuple[str, str]]:
    """(field, column) of every date field whose form is read from its column (``date_format`` auto)."""
    from party_client.matching.level_rules import LevelRules
    if isinstance(rules, LevelRules):
        return [(f.name, f.column) for f in rules.model.fields
                if f.value_type == "date" and not f.parts and (f.date_format or AUTO) == AUTO]
    return [(f.name, f.column) for f in rules.fields.values() if f.encoder == "dob_ndi" and f.date_format == AUTO]


def date_forms(rules, frame: pd.DataFrame) -> list[str]:
    """Per date field read under ``auto``, the form found in its column and why (the dry-run says so)."""
    said = []
    for name, column in _auto_dates(rules):
        text = frame[column].astype("string").fillna("").str.strip()
        where = f"field '{name}' (column '{column}')"
        form = date_form(text[text != ""], where)
        said.append(f"{where}: dates read as {form.format} ({form.why})")
    return said


def unparsed_fields(rules, frame: pd.DataFrame, codes: dict[str, pd.Series] | None = None) -> list[Unparsed]:
    """Per field, the present values (every source column non-empty) that gave no code."""
    codes = rules.codes(frame) if codes is None else codes
    found = []
    for name, columns, key, hint in _sources(rules):
        text = [frame[c].reset_index(drop=True).astype("string").fillna("").str.strip() for c in columns]
        present = text[0] != ""
        for part in text[1:]:
            present &= part != ""
        failed = present & (codes[key].reset_index(drop=True).astype("string").fillna("") == "")
        count = int(failed.sum())
        if not count:
            continue
        shown = text[0] if len(text) == 1 else text[0].str.cat(text[1:], sep="-")
        counts = shown[failed].value_counts()
        examples = tuple(counts[counts >= MIN_EXAMPLE_RECORDS].index[:EXAMPLES])
        found.append(Unparsed(name, columns, int(present.sum()), count, examples, hint))
    return found


def check_unparsed(found: list[Unparsed], force: bool = False,
                   warn: Callable[[str], None] = log.warning) -> list[str]:
    """Warn about fields above :data:`WARN_SHARE` unread; refuse one above :data:`REFUSE_SHARE` unless
    ``force``.  Returns the warnings said (for a report)."""
    said = []
    for item in found:
        if item.share > REFUSE_SHARE and not force:
            raise PartyError(f"{item.describe()}; check the column and its date format (--date-format, or "
                             f"date_format in the rules file), or add --force to link without them")
        if item.share > WARN_SHARE:
            said.append(item.describe())
            warn(said[-1])
    return said
