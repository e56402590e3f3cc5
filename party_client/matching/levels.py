"""Graded comparison levels per field: their exact semantics, the keys each party encodes for them, and the
plaintext reference that decides a pair's level from the same keys.

docs/protocol.md, "Comparison levels" (levels after Fellegi & Sunter, "A theory for record linkage",
JASA 1969, with one categorical outcome per field as in splink's comparison levels, UK Ministry of
Justice, "Comparisons and comparison levels"; typo keys after the symmetric deletion neighbourhoods of
Bocek, Hunt & Stiller, "Fast similarity search in large dictionaries", 2007).

A level is decided by equality tests only, so that the blinded comparison can decide it: the querier
contributes a few keys per record (*slots*), the holder a fixed number of comparisons per row, each
naming one querier slot and one key of its own, and the level agrees when any comparison is equal.
Both sides encode every key with the session's keyed encoding (``encode_to(s, "pair/<group>", key)``),
and an empty key is missing: the querier sends a random ciphertext there, the holder a random value,
so a missing key never agrees.  :func:`group_agreement` evaluates exactly these tests on plaintext
keys; the property tests compare it with the stated semantics (:func:`reference_agreement`).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import jellyfish
import numpy as np
import pandas as pd

from party_client.errors import PartyError
from party_client.matching.name_forms import form_keys, umlaut_folded

MARK = "~"                          # prefixes every typo key, so a deletion leaving "" is still a key
SEPARATOR = "\x1f"                  # joins two parts of one key; normalized codes never contain it
PHONETIC = {"soundex": jellyfish.soundex, "nysiis": jellyfish.nysiis, "metaphone": jellyfish.metaphone}
TEXT_LEVELS = ("exact", "share", "frequent", "typo", "soundex", "nysiis", "metaphone", "initial", "prefix", "swapped",
               "transposed", "slip", "translit", "nickname", "compound")
DATE_LEVELS = ("exact", "day_month_swap", "year", "partial", "days")
NUMBER_LEVELS = ("exact", "within")
DEFAULT_TYPO_LENGTH = 8
DEFAULT_TRANSPOSED_LENGTH = 10
MAX_FORMS = 6                       # nickname:N and compound:N compare N x N keys per pair
MISSING_LEVEL = "missing"
ANCHOR = "anchor"                   # the missing level's constant querier slot, one for all fields
MISSING_MARKER = SEPARATOR + "missing"   # a querier's missing value in its value slot; never a normalized value
ELSE_LEVEL = "else"


@dataclass(frozen=True)
class Level:
    """One comparison level: ``kind`` (``exact``, ``typo``, ...) and its parameter where it has one
    (``typo``/``transposed``/``slip``: characters considered; ``prefix``: characters; ``days``/``within``: the
    tolerance; ``swapped``: the other field's name; ``nickname``: forms per name; ``compound``: parts per
    name)."""

    kind: str
    parameter: int | str | None = None

    @property
    def name(self) -> str:
        return self.kind if self.parameter is None else f"{self.kind}:{self.parameter}"

    @classmethod
    def parse(cls, text: str, value_type: str) -> "Level":
        kind, _, parameter = text.partition(":")
        allowed = {"text": TEXT_LEVELS, "date": DATE_LEVELS, "number": NUMBER_LEVELS}[value_type]
        if kind not in allowed:
            raise PartyError(f"level '{text}' is not one of {', '.join(allowed)} (for {value_type} fields)")
        if kind == "swapped":
            if not parameter.isidentifier():
                raise PartyError("level 'swapped' needs the other field's name, e.g. swapped:last")
            return cls(kind, parameter)
        defaults = {"typo": DEFAULT_TYPO_LENGTH, "transposed": DEFAULT_TRANSPOSED_LENGTH, "frequent": 50, "share": 5,
                    "slip": DEFAULT_TRANSPOSED_LENGTH, "prefix": 3, "nickname": 3, "compound": 2,
                    "days": 30, "within": 1}
        if kind not in defaults:
            if parameter:
                raise PartyError(f"level '{kind}' takes no parameter")
            return cls(kind)
        try:
            number = int(parameter) if parameter else defaults[kind]
        except ValueError:
            raise PartyError(f"level '{text}': the parameter must be an integer") from None
        if number < 1 or (kind in ("typo", "transposed", "slip", "nickname") and number < 2):
            raise PartyError(f"level '{text}': the parameter is too small")
        if kind in ("nickname", "compound") and number > MAX_FORMS:
            raise PartyError(f"level '{text}': at most {MAX_FORMS} (it costs the square in comparisons)")
        if kind == "share" and number > 1000:
            raise PartyError(f"level '{text}': the share is in thousandths of the values, at most 1000")
        return cls(kind, number)

    @property
    def meaning(self) -> str:
        """What agreeing at this level means, in a few words (docs/protocol.md, "Comparison levels", has
        the exact semantics)."""
        p = self.parameter
        return {
            "exact": "the same value",
            "frequent": f"the same value, among the {p} most frequent of each side's own table",
            "share": f"the same value, at least {p}‰ of each side's own values (and twice)",
            "typo": f"one edit apart (first {p} characters)",
            "soundex": "the same Soundex code", "nysiis": "the same NYSIIS code",
            "metaphone": "the same Metaphone code",
            "initial": "the same first letter", "prefix": f"the same first {p} characters",
            "swapped": f"swapped with {p}",
            "transposed": f"two adjacent characters swapped (first {p})",
            "slip": f"one character replaced or two adjacent swapped (first {p})",
            "translit": "the same after reading ae, oe, ue as a, o, u (Mueller, Müller)",
            "nickname": f"one is a nickname of the other, or both of one name (first {p} forms each)",
            "compound": f"a part of a double or prefixed name in common (first {p} parts each)",
            "day_month_swap": "day and month swapped", "year": "year one apart, same day and month",
            "partial": "two of year, month and day the same (one of them wrong)",
            "days": f"at most {p} days apart", "within": f"at most {p} apart",
        }[self.kind]

    @property
    def comparisons(self) -> int:
        """The comparisons per candidate pair this level costs (fixed, whatever the values)."""
        if self.kind == "typo":
            return 5 * int(self.parameter) - 1
        if self.kind == "transposed":
            return int(self.parameter) - 1
        if self.kind == "slip":
            return int(self.parameter) // 2
        if self.kind == "year":
            return 2
        if self.kind == "partial":
            return 3
        if self.kind in ("nickname", "compound"):
            return int(self.parameter) ** 2
        if self.kind in ("days", "within"):
            return 2 * int(self.parameter) + (1 if self.kind == "within" else 0)
        return 1


@dataclass
class GroupKeys:
    """One level of one field as keys: per querier slot a key per record, and per comparison a holder
    key per row with the querier slot it is compared with ('' = missing, never equal)."""

    querier: list[pd.Series]
    holder: list[tuple[int, pd.Series]]
    # per querier slot, what the key is (the levels of one field that compare with the same key share
    # its ciphertext; ``ANCHOR`` is one constant slot for every field)
    sources: tuple[str, ...] = ()

    @property
    def comparisons(self) -> int:
        return len(self.holder)


# -- string helpers ----------------------------------------------------------------------------------
def _deleted(values: pd.Series, position: int) -> pd.Series:
    """``value`` with the character at ``position`` removed, '' where the value is shorter."""
    return (values.str[:position] + values.str[position + 1:]).where(values.str.len() > position, "")


def _swapped(values: pd.Series, position: int) -> pd.Series:
    """``value`` with characters ``position`` and ``position + 1`` swapped, '' where that changes nothing."""
    long_enough = values.str.len() > position + 1
    first, second = values.str[position:position + 1], values.str[position + 1:position + 2]
    swapped = values.str[:position] + second + first + values.str[position + 2:]
    return swapped.where(long_enough & (first != second), "")


def _windowed(values: pd.Series, position: int) -> pd.Series:
    """``value`` with characters ``position`` to ``position + 2`` left out (a separator in place of each,
    so the length is kept), marked; '' where the value does not reach ``position + 1``."""
    inside = values.str.len() > position + 1
    left_out = values.str[position:position + 3].str.replace(r"(?s).", SEPARATOR, regex=True)
    return (MARK + values.str[:position] + left_out + values.str[position + 3:]).where(inside, "")


def _marked(values: pd.Series, present: pd.Series) -> pd.Series:
    return (MARK + values).where(present, "")


def _text(values: pd.Series) -> pd.Series:
    return values.astype("string").fillna("").astype(object)


def _one(querier: pd.Series, holder: pd.Series, source: str) -> GroupKeys:
    return GroupKeys([querier], [(0, holder)], (source,))


# -- keys per level ----------------------------------------------------------------------------------
def text_keys(level: Level, codes: pd.Series, other: pd.Series | list[pd.Series] | None = None) -> GroupKeys:
    """Keys of a text level (codes normalized; '' missing).  Querier and holder keys are computed from
    the same codes here: each party calls this on its own table and keeps its own side.  ``other``: the
    other field's codes (``swapped``), or the name parts (``compound``, :func:`name_forms.name_parts`)."""
    codes = _text(codes)
    present = codes != ""
    kind = level.kind
    if kind == "exact":
        return _one(codes, codes, "value")
    if kind in ("frequent", "share"):
        chosen = most_frequent(codes, int(level.parameter)) if kind == "frequent" else \
            shared_values(codes, int(level.parameter))
        frequent = codes.where(codes.isin(chosen), "")
        return _one(frequent, frequent, level.name)
    if kind in PHONETIC:
        encode = PHONETIC[kind]
        lookup = {v: (encode(v) if v else "") for v in pd.unique(codes)}
        phonetic = codes.map(lookup)
        return _one(phonetic, phonetic, kind)
    if kind in ("initial", "prefix"):
        prefix = codes.str[:1 if kind == "initial" else int(level.parameter)]
        return _one(prefix, prefix, level.name)
    if kind == "swapped":
        if other is None:
            raise PartyError(f"level {level.name} needs the other field's codes")
        other = _text(other)
        both = present & (other != "")
        return _one((codes + SEPARATOR + other).where(both, ""), (other + SEPARATOR + codes).where(both, ""),
                    level.name)
    if kind == "transposed":
        limit = int(level.parameter)
        return GroupKeys([codes], [(0, _swapped(codes, i)) for i in range(limit - 1)], ("value",))
    if kind == "slip":
        return slip_keys(codes, int(level.parameter))
    if kind == "typo":
        return typo_keys(codes, int(level.parameter))
    if kind == "translit":
        folded = umlaut_folded(codes).where(present, "")
        return _one(folded, folded, "translit")
    if kind == "nickname":
        return any_common(form_keys(codes, int(level.parameter)), ("value",) + tuple(
            f"form.{k}" for k in range(1, int(level.parameter))))
    if kind == "compound":
        if other is None:
            raise PartyError(f"level {level.name} needs the field's written names")
        parts = [_text(p) for p in other][:int(level.parameter)]
        return any_common(parts, tuple(f"part.{k}" for k in range(len(parts))))
    raise PartyError(f"level {level.name} is not a text level")


def any_common(keys: list[pd.Series], sources: tuple[str, ...]) -> GroupKeys:
    """Set intersection by equality tests: the querier sends its ``n`` keys per record as ``n`` slots,
    the holder compares each of its ``n`` keys with each slot (n x n comparisons); the level agrees when
    the two records have a (non-empty) key in common, whichever its position on either side."""
    return GroupKeys(list(keys), [(slot, key) for key in keys for slot in range(len(keys))], sources)


def typo_keys(codes: pd.Series, limit: int) -> GroupKeys:
    """Deletion keys on the first ``limit`` characters (docs/protocol.md, "Comparison levels", typo).

    Querier slots: ``x[:L]``, ``x[:L-1]``, ``D_i(x[:L])`` for i < L (D_i deletes character i).  The
    holder compares ``x[:L]`` with ``y[:L]``; ``x[:L-1]`` with each ``D_j(y[:L])`` (y has one more
    character); each ``D_i(x[:L])`` with ``y[:L-1]`` (x has one more), with ``D_i(y[:L])`` (one
    substitution) and with ``D_{i+1}(y[:L])`` and ``D_{i-1}(y[:L])`` (adjacent transposition):
    5L - 1 comparisons.
    """
    codes = _text(codes)
    present = codes != ""
    head = codes.str[:limit]
    shorter = codes.str[:limit - 1]
    deleted = [_deleted(head, i) for i in range(limit)]
    # a deletion exists only where the value has a character there; keys of absent deletions are ''
    deleted_marked = [_marked(d, present & (head.str.len() > i)) for i, d in enumerate(deleted)]
    querier = [_marked(head, present), _marked(shorter, present)] + deleted_marked
    holder: list[tuple[int, pd.Series]] = [(0, _marked(head, present))]
    holder += [(1, deleted_marked[j]) for j in range(limit)]
    holder += [(2 + i, _marked(shorter, present)) for i in range(limit)]
    holder += [(2 + i, deleted_marked[i]) for i in range(limit)]
    holder += [(2 + i, deleted_marked[i + 1]) for i in range(limit - 1)]
    holder += [(2 + i + 1, deleted_marked[i]) for i in range(limit - 1)]
    return GroupKeys(querier, holder, tuple(f"typo{limit}.{k}" for k in range(len(querier))))


def most_frequent(codes: pd.Series, count: int) -> set[str]:
    """The ``count`` most frequent non-empty values of a party's own column (ties broken by value, so
    the class is a function of the table alone): the term-frequency class of ``frequent:N``."""
    counts = codes[codes != ""].value_counts().sort_index(kind="stable")
    return set(counts.sort_values(ascending=False, kind="stable").index[:count])


def shared_values(codes: pd.Series, per_mille: int) -> set[str]:
    """The values making up at least ``per_mille`` thousandths of a party's own non-empty values, and held
    by at least two of its records (a single record is never a frequency class, however small the
    table): the term-frequency class of ``share:N``, a function of the table alone."""
    counts = codes[codes != ""].value_counts()
    return set(counts[(counts * 1000 >= per_mille * int(counts.sum())) & (counts >= 2)].index)


def slip_keys(codes: pd.Series, limit: int) -> GroupKeys:
    """Window keys for ``slip:L`` (docs/protocol.md, "Comparison levels", slip): per even position
    ``i < L - 1`` the value with characters ``i``, ``i + 1`` and ``i + 2`` left out, on both sides; the
    holder compares the querier's window ``i`` with its own window ``i``: L // 2 comparisons.  Every
    adjacent pair of positions lies in some window, so one substituted character and two adjacent
    characters transposed always agree; equal keys mean the same length and every difference within
    one window."""
    codes = _text(codes)
    windows = [_windowed(codes, i) for i in range(0, limit - 1, 2)]
    return GroupKeys(windows, [(k, w) for k, w in enumerate(windows)],
                     tuple(f"slip{limit}.{k}" for k in range(len(windows))))


def date_keys(level: Level, dates: pd.Series) -> GroupKeys:
    """Keys of a date level; ``dates``: ``YYYYMMDD`` text ('' missing or not a valid date)."""
    dates = _text(dates)
    present = dates != ""
    year, month, day = dates.str[:4], dates.str[4:6], dates.str[6:8]
    kind = level.kind
    if kind == "exact":
        return _one(dates, dates, "value")
    if kind == "day_month_swap":
        swapped = (year + day + month).where(present & (day != month), "")
        return _one(dates, swapped, "value")
    if kind == "year":
        numeric = pd.to_numeric(year.where(present, None), errors="coerce")
        shifted = [((numeric + d).astype("Int64").astype("string").str.zfill(4) + month + day)
                   .astype(object).where(present, "").fillna("") for d in (-1, 1)]
        return GroupKeys([dates], [(0, s) for s in shifted], ("value",))
    if kind == "partial":             # one component wrong: year and month, year and day, or month and day agree
        keys = [(year + month).where(present, ""), (year + day).where(present, ""), (month + day).where(present, "")]
        return GroupKeys(keys, list(enumerate(keys)), ("year_month", "year_day", "month_day"))
    if kind == "days":
        ordinal = day_numbers(dates)
        return number_keys(Level("within", level.parameter), ordinal, exclude_zero=True, source="day_number")
    raise PartyError(f"level {level.name} is not a date level")


def number_keys(level: Level, numbers: pd.Series, exclude_zero: bool = False, source: str = "value") -> GroupKeys:
    """Keys of a number level on integers ('' missing): ``exact``, or ``within:T`` (|x - y| <= T)."""
    numbers = _text(numbers)
    if level.kind == "exact":
        return _one(numbers, numbers, source)
    tolerance = int(level.parameter)
    value = pd.to_numeric(numbers.where(numbers != "", None), errors="coerce").astype("Int64")
    deltas = [d for d in range(-tolerance, tolerance + 1) if not (exclude_zero and d == 0)]
    holder = [(0, (value + d).astype("string").fillna("").astype(object)) for d in deltas]
    return GroupKeys([numbers], holder, (source,))


def day_numbers(dates: pd.Series) -> pd.Series:
    """Days since 0001-01-01 of ``YYYYMMDD`` text ('' when missing or invalid)."""
    parsed = pd.to_datetime(_text(dates), format="%Y%m%d", errors="coerce")
    days = (parsed - pd.Timestamp("1970-01-01")).dt.days + dt.date(1970, 1, 1).toordinal()
    return days.astype("Int64").astype("string").fillna("").astype(object)


def missing_keys(codes: pd.Series, value_slot: bool = False) -> GroupKeys:
    """The ``missing`` level: agrees when either side's value is missing.

    Querier slots: a slot that says whether its value is missing, and a constant anchor; the holder
    compares the first with the missing marker when it has a value, and the anchor with itself when it
    has none: one comparison.  With ``value_slot`` the first slot is the field's ``value`` slot (the key
    its exact-like levels compare with), which holds :data:`MISSING_MARKER` where the querier has no
    value: no holder key of those levels is ever the marker, so they still never agree there, and the
    field needs no slot of its own for missing.  Otherwise it is an indicator (``missing``/``present``).
    """
    absent = _text(codes) == ""
    if value_slot:
        first, marker, source = marked_values(codes), MISSING_MARKER, "value"
    else:
        first = pd.Series(np.where(absent, "missing", "present"), index=codes.index, dtype=object)
        marker, source = "missing", MISSING_LEVEL
    anchor = pd.Series("anchor", index=codes.index, dtype=object)
    # the holder's slot choice is per row: keep it as a (slot, key) pair per row
    holder = pd.Series([(1, "anchor") if a else (0, marker) for a in absent], index=codes.index, dtype=object)
    return GroupKeys([first, anchor], [(-1, holder)], (source, ANCHOR))


def marked_values(codes: pd.Series) -> pd.Series:
    """A field's ``value`` slot as the querier sends it: the value, or :data:`MISSING_MARKER` where missing."""
    codes = _text(codes)
    return codes.where(codes != "", MISSING_MARKER)


# -- evaluation on plaintext keys ----------------------------------------------------------------
def holder_comparison(slot: int, keys: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the querier slot compared and the holder's key (slot -1: a (slot, key) pair per row)."""
    values = keys.to_numpy(dtype=object)
    if slot >= 0:
        return np.full(len(values), slot), values
    return np.array([v[0] for v in values]), np.array([v[1] for v in values], dtype=object)


def group_agreement(querier: GroupKeys, holder: GroupKeys, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Whether querier record left[i] and holder row right[i] agree at this level: some comparison's
    keys are equal and not missing (exactly the tests the blinded comparison makes)."""
    left, right = np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)
    slots = np.array([q.to_numpy(dtype=object) for q in querier.querier], dtype=object).reshape(
        len(querier.querier), -1)
    agree = np.zeros(len(left), dtype=bool)
    for slot, keys in holder.holder:
        chosen, values = holder_comparison(slot, keys)
        theirs = values[right]
        ours = slots[chosen[right], left]
        agree |= (theirs != "") & (ours == theirs)
    return agree


# -- the stated semantics, written independently (the property tests compare) ------------------
def osa_distance(x: str, y: str) -> int:
    """Optimal string alignment distance (insertions, deletions, substitutions, adjacent transpositions;
    Damerau's restricted edit distance): no library exposes it (jellyfish's is the unrestricted one)."""
    rows = [[0] * (len(y) + 1) for _ in range(len(x) + 1)]
    for i in range(len(x) + 1):
        rows[i][0] = i
    for j in range(len(y) + 1):
        rows[0][j] = j
    for i in range(1, len(x) + 1):
        for j in range(1, len(y) + 1):
            cost = 0 if x[i - 1] == y[j - 1] else 1
            rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and x[i - 1] == y[j - 2] and x[i - 2] == y[j - 1]:
                rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
    return rows[len(x)][len(y)]


def slip_reference(x: str, y: str, limit: int) -> bool:
    """The slip level's semantics on values: the same length (at least 2), and every position where they
    differ lies in one window ``{i, i + 1, i + 2}`` with ``i`` even and ``i < limit - 1`` (so one
    substituted character, or two adjacent characters transposed, among the first ``limit``; at most
    three differences, all within such a window)."""
    if not x or not y or len(x) != len(y) or len(x) < 2:
        return False
    differ = [k for k in range(len(x)) if x[k] != y[k]]
    if not differ:
        return True
    return any(i <= differ[0] and differ[-1] <= i + 2 for i in range(0, min(limit - 1, len(x) - 1), 2))


def typo_reference(x: str, y: str, limit: int) -> bool:
    """The typo level's semantics on values (not keys): on the first ``limit`` characters, the two
    values are equal, or one is the other with one character deleted, or deleting one character from
    each at positions at most one apart leaves the same text (this admits all pairs at optimal string
    alignment distance 1, and some at distance 2: two neighbouring substitutions where one shifts)."""
    if not x or not y:
        return False
    a, b = x[:limit], y[:limit]
    if a == b:
        return True
    deletions_a = {i: a[:i] + a[i + 1:] for i in range(len(a))}
    deletions_b = {j: b[:j] + b[j + 1:] for j in range(len(b))}
    if any(d == a[:limit - 1] for d in deletions_b.values()) or any(d == b[:limit - 1] for d in deletions_a.values()):
        return True
    return any(deletions_a[i] == deletions_b[j] for i in deletions_a for j in (i - 1, i, i + 1) if j in deletions_b)
