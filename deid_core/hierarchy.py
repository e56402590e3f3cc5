"""Generalization hierarchies: ARX-layout CSV and built-in builders.

A :class:`Hierarchy` holds, for every leaf value, its generalized value at
each level (level 0 = the original value, the top level is normally ``*``).
It is stored as integer maps ``leaf index -> code at level l`` so that
generalizing a column is one fancy-index on an int array (no per-row Python).
Levels must nest (each level a function of the previous one): this is what
makes the risk measures monotone under generalization (Benitez, Loukides & Malin 2010 Thm 2.1,
Liu et al. 2016 Prop. 3).
"""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from .errors import DeidInputError
from .spec import HierarchySpec
from .vocabulary import SUPPRESSED, detect_separator

TOP = "*"


class Hierarchy:
    """Value -> list of generalized values per level (level 0 = original)."""

    def __init__(self, rows: Sequence[Sequence[str]], name: str = "") -> None:
        self.name = name
        if not rows:
            raise DeidInputError(f"hierarchy {name!r} is empty")
        width = len(rows[0])
        if any(len(r) != width for r in rows):
            raise DeidInputError(f"hierarchy {name!r}: rows have different numbers of levels")
        table = np.array([[str(v) for v in r] for r in rows], dtype=object)
        self.leaves = pd.Index(table[:, 0])
        if not self.leaves.is_unique:
            dup = self.leaves[self.leaves.duplicated()][0]
            raise DeidInputError(f"hierarchy {name!r}: value {dup!r} appears twice")
        self._maps: list[np.ndarray] = []
        self._labels: list[np.ndarray] = []
        for lvl in range(width):
            codes, uniques = pd.factorize(table[:, lvl])
            self._maps.append(np.append(codes.astype(np.int32), np.int32(-1)))  # index -1 -> -1 (missing)
            self._labels.append(np.asarray(uniques, dtype=object))
        for lvl in range(1, width):  # nesting check: code at lvl-1 determines code at lvl
            pairs = pd.DataFrame({"a": self._maps[lvl - 1][:-1], "b": self._maps[lvl][:-1]}).drop_duplicates()
            if pairs["a"].duplicated().any():
                bad = self._labels[lvl - 1][pairs.loc[pairs["a"].duplicated(), "a"].iloc[0]]
                raise DeidInputError(f"hierarchy {name!r}: {bad!r} at level {lvl - 1} has two parents at level {lvl}")

    @property
    def height(self) -> int:
        """Number of generalization steps (levels - 1)."""
        return len(self._maps) - 1

    def level_map(self, level: int) -> np.ndarray:
        """Int array: leaf index -> code at ``level``; has an extra trailing -1 so index -1 stays -1."""
        self._check_level(level)
        return self._maps[level]

    def labels(self, level: int) -> np.ndarray:
        self._check_level(level)
        return self._labels[level]

    def cardinality(self, level: int) -> int:
        return len(self.labels(level))

    def rows(self) -> list[list[str]]:
        return [[str(self._labels[l][self._maps[l][i]]) for l in range(len(self._maps))] for i in range(len(self.leaves))]

    def _check_level(self, level: int) -> None:
        if not 0 <= level <= self.height:
            raise DeidInputError(f"hierarchy {self.name!r}: level {level} outside 0..{self.height}")

    def encode(self, values: pd.Series, column: str | None = None) -> np.ndarray:
        """Leaf index per record (int32, -1 = missing); a value not in the hierarchy is an error.

        The suppression marker counts as missing, as it does when a table is read from disk.
        """
        cat = values if isinstance(values.dtype, pd.CategoricalDtype) else values.astype("category")
        cats = cat.cat.categories.astype(str)
        idx = self.leaves.get_indexer(cats)
        codes = cat.cat.codes.to_numpy()
        used = np.bincount(codes[codes >= 0], minlength=len(cats)) > 0   # a category no record holds any more
        missing = np.flatnonzero((idx < 0) & (cats != SUPPRESSED) & used)  # (all suppressed) needs no leaf
        if len(missing):
            raise DeidInputError(f"column {column or self.name!r}: value {cats[missing[0]]!r} is missing from its hierarchy")
        lut = np.append(idx.astype(np.int32), np.int32(-1))
        return lut[codes]

    def decode(self, codes: np.ndarray, level: int) -> pd.Categorical:
        """Generalized labels for level codes (-1 -> NaN), as a categorical."""
        return pd.Categorical.from_codes(codes, categories=pd.Index(self.labels(level)).astype(str))

    def generalize(self, values: pd.Series, level: int, column: str | None = None) -> pd.Series:
        """Map a whole column to ``level`` (vectorized through integer codes)."""
        codes = self.level_map(level)[self.encode(values, column)]
        return pd.Series(self.decode(codes, level), index=values.index, name=values.name)


def distinct_values(s: pd.Series) -> set[str]:
    """Distinct non-missing values as strings (categoricals: the used categories, no per-row work)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        codes = s.cat.codes.to_numpy()
        used = np.bincount(codes[codes >= 0], minlength=len(s.cat.categories)) > 0
        return {str(v) for v in s.cat.categories[used]}
    return {str(v) for v in pd.unique(s.dropna())}


# ---------------------------------------------------------------- loaders/builders

def from_csv(path: str | Path, name: str = "") -> Hierarchy:
    """ARX layout: no header, one row per value, one column per level, ``;`` detected.

    Cells are kept as text exactly (``02139`` stays ``02139``, ``NA`` is a value); a cell holding the
    separator may be quoted (RFC 4180 quoting, Python's :mod:`csv`); blank lines are skipped.
    """
    path = Path(path)
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            text = fh.read()
    except OSError as exc:
        raise DeidInputError(f"cannot read hierarchy {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise DeidInputError(f"cannot read hierarchy {str(path)!r}: not UTF-8 text") from None
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if not first:
        raise DeidInputError(f"hierarchy {str(path)!r} is empty")
    try:
        rows = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=detect_separator(first), strict=True)
                if any(c.strip() for c in r)]
    except csv.Error as exc:
        raise DeidInputError(f"cannot read hierarchy {str(path)!r}: {exc}") from None
    return Hierarchy(rows, name=name or path.stem)


#: A CSV hierarchy with at most this many rows is embedded in a saved policy (its rows inline), so the
#: policy travels alone; a larger one is referenced by a path relative to the policy file.
EMBED_MAX_ROWS = 10_000


def portable(hspec: HierarchySpec, max_rows: int = EMBED_MAX_ROWS) -> HierarchySpec:
    """The same hierarchy with a small CSV file's rows embedded (larger files keep their path)."""
    if hspec.builder != "csv" or "rows" in hspec.params:
        return hspec
    rows = from_csv(hspec.params["csv"]).rows()
    if len(rows) > max_rows:
        return hspec
    params = {k: v for k, v in hspec.params.items() if k != "csv"}
    return HierarchySpec("csv", {"rows": rows, "source": Path(hspec.params["csv"]).name, **params})


def _numbers(values: Sequence[str], name: str) -> np.ndarray:
    nums = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(nums))
    if len(bad):
        raise DeidInputError(f"column {name!r}: value {values[bad[0]]!r} is not a number (interval hierarchy)")
    return nums


def interval_rows(values: Sequence[str], widths: Sequence[int], top_code: float | None = None,
                  bottom_code: float | None = None, name: str = "") -> list[list[str]]:
    """Intervals of the given widths (each a multiple of the previous), then ``*``.

    ``top_code=90`` puts every value >= 90 in ``"90+"`` from level 1 on
    (HIPAA: ages over 89, Benitez, Loukides & Malin 2010 Table 4 item 3); ``bottom_code=b`` puts
    values < b in ``"<b"``. Interval labels are ``lo-hi`` (inclusive, integer
    bounds), cut at the top/bottom codes.
    """
    widths = [int(w) for w in widths]
    if any(w <= 0 for w in widths) or any(b % a for a, b in zip(widths, widths[1:])):
        raise DeidInputError(f"hierarchy of {name!r}: widths {widths} must be positive and each a multiple of the previous")
    nums = _numbers(values, name)
    cols = [list(values)]
    for w in widths:
        lo = np.floor(nums / w) * w
        hi = lo + w - 1
        if top_code is not None:
            hi = np.minimum(hi, top_code - 1)
        if bottom_code is not None:
            lo = np.maximum(lo, bottom_code)
        lab = np.array([f"{int(a)}-{int(b)}" for a, b in zip(lo, hi)], dtype=object)
        if top_code is not None:
            lab[nums >= top_code] = f"{int(top_code)}+"
        if bottom_code is not None:
            lab[nums < bottom_code] = f"<{int(bottom_code)}"
        cols.append(list(lab))
    cols.append([TOP] * len(values))
    return [list(r) for r in zip(*cols)]


DATE_LEVELS = ("week", "month", "quarter", "year", "5y", "10y")


def date_rows(values: Sequence[str], levels: Sequence[str] = DATE_LEVELS, name: str = "") -> list[list[str]]:
    """Day -> week -> month -> quarter -> year -> 5y -> 10y -> ``*`` (El Emam & Arbuckle, ch. 3,
    "BORN Data Set", Table 3-2).

    "week" is the week of the month (days 1–7, 8–14, 15–21, 22–end, label
    ``2001-04/W2``) so that weeks nest in months, as a hierarchy must.
    """
    d = pd.to_datetime(pd.Series(values, dtype=object), errors="coerce", format="ISO8601")
    bad = np.flatnonzero(d.isna().to_numpy())
    if len(bad):
        raise DeidInputError(f"column {name!r}: value {values[bad[0]]!r} is not an ISO date (dates hierarchy)")
    y, m, day = d.dt.year.to_numpy(), d.dt.month.to_numpy(), d.dt.day.to_numpy()
    make = {
        "week": lambda: [f"{a:04d}-{b:02d}/W{min((c - 1) // 7, 3) + 1}" for a, b, c in zip(y, m, day)],
        "month": lambda: [f"{a:04d}-{b:02d}" for a, b in zip(y, m)],
        "quarter": lambda: [f"{a:04d}-Q{(b - 1) // 3 + 1}" for a, b in zip(y, m)],
        "year": lambda: [f"{a:04d}" for a in y],
        "5y": lambda: [f"{a - a % 5}-{a - a % 5 + 4}" for a in y],
        "10y": lambda: [f"{a - a % 10}-{a - a % 10 + 9}" for a in y],
    }
    unknown = [lv for lv in levels if lv not in make]
    if unknown or list(levels) != sorted(levels, key=DATE_LEVELS.index):
        raise DeidInputError(f"hierarchy of {name!r}: date levels must be an ordered subset of {', '.join(DATE_LEVELS)}")
    cols = [list(values)] + [make[lv]() for lv in levels] + [[TOP] * len(values)]
    return [list(r) for r in zip(*cols)]


def prefix_rows(values: Sequence[str], levels: int | None = None, name: str = "") -> list[list[str]]:
    """ZIP/postal codes: crop one more trailing character per level (``12345 -> 1234* -> ...``), then ``*``."""
    maxlen = max((len(v) for v in values), default=1)
    levels = maxlen if levels is None else int(levels)
    cols = [list(values)]
    for i in range(1, levels + 1):
        cols.append([v[: max(len(v) - i, 0)] + TOP * min(i, len(v)) for v in values])
    if not cols[-1] or any(c != TOP * len(c) for c in cols[-1]) or len(set(cols[-1])) > 1:
        cols.append([TOP] * len(values))
    return [list(r) for r in zip(*cols)]


# ICD-9-CM chapters by 3-digit range; V and E codes are their own supplementary chapters.
_ICD9_CHAPTERS = [(1, 139), (140, 239), (240, 279), (280, 289), (290, 319), (320, 389), (390, 459),
                  (460, 519), (520, 579), (580, 629), (630, 679), (680, 709), (710, 739), (740, 759),
                  (760, 779), (780, 799), (800, 999)]
# ICD-10 (WHO) chapters by first letter + 2 digits.
_ICD10_CHAPTERS = [("A00", "B99"), ("C00", "D49"), ("D50", "D89"), ("E00", "E90"), ("F00", "F99"),
                   ("G00", "G99"), ("H00", "H59"), ("H60", "H95"), ("I00", "I99"), ("J00", "J99"),
                   ("K00", "K93"), ("L00", "L99"), ("M00", "M99"), ("N00", "N99"), ("O00", "O99"),
                   ("P00", "P96"), ("Q00", "Q99"), ("R00", "R99"), ("S00", "T98"), ("V01", "Y98"),
                   ("Z00", "Z99"), ("U00", "U99")]


def icd_chapter(code3: str) -> str:
    """Chapter of a 3-character category: digits-only codes are ICD-9, letter-initial codes ICD-10.

    (ICD-9 V/E supplementary codes are read as ICD-10: the schemes overlap on
    letters, so declare a CSV hierarchy if you need the ICD-9 reading.)
    Unknown codes fall back to their first character + ``*``.
    """
    c = code3.upper()[:3]
    if c.isdigit():
        n = int(c)
        for lo, hi in _ICD9_CHAPTERS:
            if lo <= n <= hi:
                return f"ICD9 {lo:03d}-{hi:03d}"
    elif c[:1].isalpha() and c[1:3].isdigit():
        for lo, hi in _ICD10_CHAPTERS:
            if lo <= c <= hi:
                return f"ICD10 {lo}-{hi}"
    return c[:1] + TOP


def icd_rows(values: Sequence[str], name: str = "") -> list[list[str]]:
    """ICD-9/ICD-10 codes: full -> 4 characters -> 3-character category -> chapter -> ``*``.

    El Emam & Arbuckle, ch. 10, "The Digits of Diseases", Table 10-1 (5/4-digit -> 3-digit -> section -> chapter). Sections
    are not derivable without the full code tables, so the chapter (derived
    from the 3-character category) follows directly; unknown schemes fall back
    to the first character. The dot is ignored when cropping (``411.81`` ->
    ``411.8`` -> ``411``).
    """
    cols: list[list[str]] = [list(values), [], [], []]
    for v in values:
        s = v.strip().upper().replace(".", "")
        if len(s) < 3:
            raise DeidInputError(f"column {name!r}: value {v!r} is not an ICD code (needs >= 3 characters)")
        four = s[:3] + ("." + s[3] if len(s) > 3 else "")
        cols[1].append(four)
        cols[2].append(s[:3])
        cols[3].append(icd_chapter(s[:3]))
    cols.append([TOP] * len(values))
    return [list(r) for r in zip(*cols)]


_ATC = re.compile(r"^[A-Z]([0-9]{2}([A-Z]([A-Z]([0-9]{2})?)?)?)?$")


def atc_rows(values: Sequence[str], name: str = "") -> list[list[str]]:
    """ATC codes: 7 → 5 → 4 → 3 → 1 characters → ``*`` (El Emam & Arbuckle, ch. 10, ATC levels).

    ``C01DA02`` (glyceryl trinitrate) → ``C01DA`` → ``C01D`` → ``C01`` → ``C`` → ``*``.
    Codes given at a coarser level (1, 3, 4 or 5 characters) repeat themselves
    on the finer levels so the levels nest.
    """
    cols: list[list[str]] = [list(values), [], [], [], []]
    for v in values:
        s = v.strip().upper()
        if not _ATC.match(s):
            raise DeidInputError(f"column {name!r}: value {v!r} is not an ATC code (e.g. C01DA02)")
        for i, n in enumerate((5, 4, 3, 1)):
            cols[i + 1].append(s[:n])
    cols.append([TOP] * len(values))
    return [list(r) for r in zip(*cols)]


def build_hierarchy(hspec: HierarchySpec, values: Iterable[str], name: str = "") -> Hierarchy:
    """Hierarchy for ``values`` (the distinct values of data + population) from a spec."""
    p = dict(hspec.params)
    if hspec.builder == "csv":
        return Hierarchy(p["rows"], name=name) if "rows" in p else from_csv(p["csv"], name=name)
    vals = sorted({str(v) for v in values})
    if not vals:  # keep the builder's height even for an all-missing column: one placeholder leaf
        vals = [{"interval": "0", "dates": "2000-01-01", "icd": "001", "atc": "A", "prefix": "00000"}.get(hspec.builder, "0")]
    if hspec.builder == "interval":
        rows = interval_rows(vals, p.get("widths", [5, 10, 20]), p.get("top_code"), p.get("bottom_code"), name)
    elif hspec.builder == "dates":
        rows = date_rows(vals, p.get("levels", DATE_LEVELS), name)
    elif hspec.builder == "prefix":
        rows = prefix_rows(vals, p.get("levels"), name)
    elif hspec.builder == "icd":
        rows = icd_rows(vals, name)
    elif hspec.builder == "atc":
        rows = atc_rows(vals, name)
    elif hspec.builder == "flat":
        return flat_hierarchy(vals, name)
    else:  # pragma: no cover - validated in spec
        raise DeidInputError(f"unknown builder {hspec.builder!r}")
    return Hierarchy(rows, name=name)


def flat_hierarchy(values: Iterable[str], name: str = "") -> Hierarchy:
    """Two levels (value, ``*``): the default for a QI without a declared hierarchy."""
    vals = sorted({str(v) for v in values}) or [TOP]
    return Hierarchy([[v, TOP] for v in vals], name=name)
