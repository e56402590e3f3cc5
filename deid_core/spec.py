"""The declarative de-identification spec (TOML) and its dataclasses.

Minimal form::

    [columns]   name = "direct"   zip = "quasi"   disease = "sensitive"
                default = "drop"    # optional: the fate of every column not listed
    [types]     zip = "zip"       age = "age"
    [hierarchies]
    age = { builder = "interval", widths = [5, 10, 20], top_code = 90 }
    race = { csv = "hierarchies/race.csv" }      # or rows = [["White", "*"], ...]
    [release]   type = "public"   threshold = 0.05

Optional tables: ``[release]`` attack parameters (``pr_attempt``,
``prevalence``, ``friends``, ``friends_divisor``, ``strict_cut``), ``[risk]``
(``missing = "own_class" | "match_any"``, ``gamma``), ``[data]``
(``missing_values``), ``[transform]`` (``levels``, ``record_suppression``),
``[longitudinal]`` (``person``, ``level1``, ``level2``, ``adversary_power``).
"""
from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

from .errors import DeidInputError
# the spec's words live in a leaf module that the hierarchies and the table reader share (no cycle)
from .vocabulary import (BUILDERS, MISSING_CHOICES, RELEASE_TYPES, REST_FATES, ROLES, SUPPRESSED,  # noqa: F401
                         TEXT_RELEASE_MODES)


@dataclass(frozen=True)
class HierarchySpec:
    """How to obtain the hierarchy of one QI: ``builder`` + its parameters.

    A ``csv`` hierarchy is either a file (``csv = "path"``; relative paths are
    resolved against the spec's or the policy's folder when loaded, absolute
    paths of older policies are kept) or embedded (``rows = [[leaf, level 1,
    ...], ...]``, what :func:`deid_core.hierarchy.portable` makes for a saved policy).
    """

    builder: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"builder": self.builder, **dict(self.params)}

    def relative_to(self, folder: Path) -> "HierarchySpec":
        """A file-based CSV hierarchy with its path relative to ``folder`` (where a policy is saved)."""
        if self.builder != "csv" or "csv" not in self.params:
            return self
        try:
            rel = os.path.relpath(Path(self.params["csv"]).resolve(), Path(folder).resolve())
        except ValueError:  # another drive (Windows): keep the absolute path
            return self
        return HierarchySpec("csv", {**self.params, "csv": Path(rel).as_posix()})

    @classmethod
    def from_dict(cls, column: str, raw: Mapping[str, Any], base_dir: Path | None = None,
                  refuse_files: str | None = None) -> "HierarchySpec":
        """``refuse_files`` (a reason) is for a spec from someone who may not read this computer's files (one
        uploaded to the workbench): a ``csv = "path"`` key is refused with it, only embedded ``rows`` are taken."""
        if not isinstance(raw, Mapping):
            raise DeidInputError(f"hierarchy of {column!r} must be a table")
        raw = dict(raw)
        builder = raw.pop("builder", None)
        if builder is None and ("csv" in raw or "rows" in raw):
            builder = "csv"
        if builder not in BUILDERS:
            raise DeidInputError(f"hierarchy of {column!r}: unknown builder {builder!r} (expected one of {', '.join(BUILDERS)})")
        _check_builder_params(column, builder, raw)
        if refuse_files is not None and "csv" in raw:
            raise DeidInputError(f"hierarchy of {column!r}: {refuse_files}")
        if builder == "csv" and "rows" in raw:
            rows = raw["rows"]
            if (not isinstance(rows, list) or not rows
                    or not all(isinstance(r, list) and r and all(isinstance(v, str) for v in r) for r in rows)):
                raise DeidInputError(f"hierarchy of {column!r}: rows must be a non-empty list of lists of strings")
            raw.pop("csv", None)
        elif builder == "csv":
            if "csv" not in raw:
                raise DeidInputError(f"hierarchy of {column!r}: builder 'csv' needs csv = \"path\" or rows = [...]")
            path = Path(raw["csv"])
            if base_dir is not None and not path.is_absolute():
                path = base_dir / path
            raw["csv"] = str(path.resolve())
        return cls(builder, raw)


def _positive_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


#: builder -> {parameter: (check, what it must be)}: any other key, or a value failing its check, is refused.
BUILDER_PARAMS: dict[str, dict[str, tuple[Any, str]]] = {
    "csv": {"csv": (lambda v: isinstance(v, str) and v != "", "a file path"),
            "rows": (lambda v: isinstance(v, list), "a list of rows"),
            "source": (lambda v: isinstance(v, str), "a file name")},
    "interval": {"widths": (lambda v: isinstance(v, list) and v and all(_positive_number(w) for w in v),
                            "a non-empty list of positive numbers"),
                 "top_code": (_finite, "a number"), "bottom_code": (_finite, "a number")},
    "dates": {"levels": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of level names")},
    "prefix": {"levels": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1, "an integer >= 1")},
    "icd": {}, "atc": {}, "flat": {},
}


def _check_builder_params(column: str, builder: str, params: Mapping[str, Any]) -> None:
    """Refuse an unknown parameter of a hierarchy builder, or one of the wrong type, naming column and key."""
    known = BUILDER_PARAMS[builder]
    for key, value in params.items():
        if key not in known:
            raise DeidInputError(f"hierarchy of {column!r}: unknown key {key!r} for builder {builder!r} (it takes "
                                 f"{', '.join(known) or 'no parameters'})")
        check, what = known[key]
        if not check(value):
            raise DeidInputError(f"hierarchy of {column!r}: {key} = {value!r:.60} must be {what}")


def _check_section(raw: Mapping[str, Any], section: str, keys: Iterable[str]) -> dict:
    """A spec section as a dict, refused when it is not a table or has a key outside ``keys``."""
    value = raw.get(section)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise DeidInputError(f"[{section}] must be a table")
    unknown = sorted(k for k in value if k not in keys)
    if unknown:
        raise DeidInputError(f"[{section}] unknown key(s): {', '.join(unknown)}")
    return dict(value)


#: The sections of a spec; any other is refused (a misspelt [relase] would silently use the defaults).
SECTIONS = ("columns", "types", "hierarchies", "release", "risk", "data", "transform", "longitudinal", "text")


@dataclass(frozen=True)
class ReleaseSpec:
    """Release context, threshold and attack parameters.

    El Emam & Arbuckle, *Anonymizing Health Data*, ch. 2, "Measuring Risk Under
    Plausible Attacks" and "Risk Thresholds" (Table 2-1).
    """

    type: str = "non-public"
    threshold: float = 0.05
    pr_attempt: float | None = None
    prevalence: float | None = None
    friends: float = 150.0
    friends_divisor: float = 2.0
    strict_cut: float = 0.33


@dataclass(frozen=True)
class LongitudinalSpec:
    """``[longitudinal]``: one person, many rows (El Emam & Arbuckle, *Anonymizing Health Data*, ch. 4;
    El Emam et al. 2012, the Heritage Health Prize claims release).

    ``person`` names the column identifying the person (never released as-is); ``level1`` the
    quasi-identifiers fixed per person, ``level2`` those of each event; ``adversary_power`` is
    ``p_max``, the most level-2 values an adversary is assumed to know (docs/longitudinal.md).
    """

    person: str
    level1: tuple[str, ...] = ()
    level2: tuple[str, ...] = ()
    adversary_power: int = 5


@dataclass(frozen=True)
class TextSpec:
    """``[text]``: how the ``text`` columns (free-text notes) are de-identified in every release (docs/text.md,
    "Notes in a release"): ``mode`` (tag, redact, generalize, surrogate) and ``hints``, hint key -> a column of
    the same row whose value is searched in the note first (``name = "patient"``, ``mrn = "mrn"``; El Emam &
    Arbuckle, ch. 8: the record's own identifiers are the surest guide to those in its notes); ``patient``, the
    column keying surrogate mode's one date shift per patient (default: the ``mrn`` hint, else the row)."""

    mode: str = "tag"
    hints: Mapping[str, str] = field(default_factory=dict)
    patient: str | None = None

    def to_dict(self) -> dict:
        return {"mode": self.mode, "hints": dict(self.hints), **({"patient": self.patient} if self.patient else {})}


@dataclass(frozen=True)
class Spec:
    """Column roles, semantic types, hierarchies, release and risk options."""

    columns: Mapping[str, str]
    types: Mapping[str, str] = field(default_factory=dict)
    hierarchies: Mapping[str, HierarchySpec] = field(default_factory=dict)
    release: ReleaseSpec = field(default_factory=ReleaseSpec)
    missing: str = "own_class"
    gamma: float = 1.0
    missing_values: tuple[str, ...] = ("",)
    levels: Mapping[str, int] = field(default_factory=dict)
    record_suppression: bool = False
    #: ``[columns] default``: the fate of columns the spec does not list (None: such columns are refused).
    rest: str | None = None
    #: ``[longitudinal]`` (None: every row is its own person, the cross-sectional measures).
    longitudinal: LongitudinalSpec | None = None
    #: ``[text]``: how notes columns are de-identified (the defaults when a column is ``text`` and the
    #: section is absent).
    text: TextSpec = field(default_factory=TextSpec)

    def role(self, role: str) -> list[str]:
        return [c for c, r in self.columns.items() if r == role]

    @property
    def quasi(self) -> list[str]:
        return self.role("quasi")

    @property
    def direct(self) -> list[str]:
        return self.role("direct")

    def check_columns(self, available: Iterable[str]) -> None:
        """Raise :class:`DeidInputError` if the spec names a column the data lacks."""
        available = set(available)
        for col in self.columns:
            if col not in available:
                raise DeidInputError(f"unknown column {col!r}: not in the input (columns: {', '.join(sorted(available))})")


    def unlisted(self, available: Iterable[str]) -> list[str]:
        """Columns of the data the spec does not list."""
        return [c for c in available if c not in self.columns]

    def fates(self, available: Iterable[str]) -> dict[str, str]:
        """Role of every column of the data: listed, or ``[columns] default`` (``drop`` -> ``direct``).

        Raises :class:`DeidInputError` naming the unlisted columns when the spec has no default:
        every released column must have a declared fate (docs/deid.md, "Every column has a fate").
        """
        available = list(available)
        rest = self.unlisted(available)
        if rest and self.rest is None:
            shown = ", ".join(repr(c) for c in rest[:10]) + (f" and {len(rest) - 10} more" if len(rest) > 10 else "")
            raise DeidInputError(f"{len(rest)} column(s) of the input are not in the spec's [columns]: {shown} - "
                                 "declare each, or say what to do with the rest: [columns] default = "
                                 "\"drop\" | \"other\" | \"quasi\"")
        default = "direct" if self.rest == "drop" else self.rest
        return {c: self.columns.get(c, default) for c in available}

    def resolve(self, available: Iterable[str]) -> "Spec":
        """This spec with every column of the data listed (see :meth:`fates`)."""
        available = list(available)
        fates = self.fates(available)
        return replace(self, columns={**self.columns, **{c: fates[c] for c in self.unlisted(available)}})


def _columns(raw: Any) -> tuple[dict[str, str], str | None]:
    """``[columns]``: name -> role or ``{ role = ... }``; the key ``default`` with a string value is the rest rule.

    A column literally named ``default`` is declared in the table form, ``default = { role = "quasi" }``
    (or ``[columns.default]`` + ``role = "quasi"``).
    """
    if not isinstance(raw, Mapping) or not raw:
        raise DeidInputError("spec needs a non-empty [columns] table")
    columns, rest = {}, None
    for col, role in raw.items():
        if col == "default" and isinstance(role, str):
            if role not in REST_FATES:
                raise DeidInputError(f"[columns] default = {role!r} must be one of {', '.join(REST_FATES)} (a column "
                                     "named 'default' is declared as default = { role = \"...\" })")
            rest = role
            continue
        if isinstance(role, Mapping):
            if set(role) != {"role"}:
                raise DeidInputError(f"column {col!r}: the table form takes exactly one key, role")
            role = role["role"]
        if role not in ROLES:
            raise DeidInputError(f"column {col!r}: unknown role {role!r} (expected one of {', '.join(ROLES)})")
        columns[col] = role
    if not columns and rest is None:
        raise DeidInputError("spec needs a non-empty [columns] table")
    return columns, rest


def _number(section: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise DeidInputError(f"[{section}] {key} must be a number, got {value!r}")
    return float(value)


def _probability(section: str, key: str, value: Any) -> float:
    x = _number(section, key, value)
    if not 0 < x <= 1:
        raise DeidInputError(f"[{section}] {key} = {value!r} is outside (0, 1]")
    return x


def _longitudinal(raw: Any, columns: Mapping[str, str]) -> LongitudinalSpec | None:
    """Validate ``[longitudinal]`` against ``[columns]``: level-1 and level-2 columns are quasi-identifiers."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise DeidInputError("[longitudinal] must be a table")
    raw = dict(raw)
    person = raw.pop("person", None)
    if not isinstance(person, str) or not person:
        raise DeidInputError("[longitudinal] person must name the column that identifies the person")
    if columns.get(person) not in (None, "direct"):
        raise DeidInputError(f"[longitudinal] person {person!r} is declared {columns[person]!r} in [columns]; "
                             "the person column is never released as-is: declare it \"direct\"")
    levels = {}
    for key in ("level1", "level2"):
        value = raw.pop(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise DeidInputError(f"[longitudinal] {key} must be a list of column names")
        for col in value:
            if columns.get(col) != "quasi":
                raise DeidInputError(f"[longitudinal] {key}: {col!r} is not a quasi-identifier in [columns]")
        levels[key] = tuple(value)
    if set(levels["level1"]) & set(levels["level2"]):
        raise DeidInputError("[longitudinal] a column cannot be both level1 and level2: "
                             + ", ".join(sorted(set(levels["level1"]) & set(levels["level2"]))))
    power = raw.pop("adversary_power", 5)
    if isinstance(power, bool) or not isinstance(power, int) or power < 1:
        raise DeidInputError("[longitudinal] adversary_power must be an integer >= 1")
    if raw:
        raise DeidInputError(f"[longitudinal] unknown key(s): {', '.join(sorted(raw))}")
    return LongitudinalSpec(person=person, level1=levels["level1"], level2=levels["level2"], adversary_power=power)


def parse_spec(raw: Mapping[str, Any], base_dir: Path | None = None, refuse_files: str | None = None) -> Spec:
    """Build a validated :class:`Spec` from a parsed TOML mapping; with ``refuse_files`` (the reason) a hierarchy
    naming a file is refused (:meth:`HierarchySpec.from_dict`)."""
    unknown = sorted(k for k in raw if k not in SECTIONS)
    if unknown:
        raise DeidInputError(f"spec: unknown section [{unknown[0]}] (sections: {', '.join(SECTIONS)})")
    columns, rest = _columns(raw.get("columns"))
    types = raw.get("types") or {}
    if not isinstance(types, Mapping) or not all(isinstance(t, str) for t in types.values()):
        raise DeidInputError("[types] must map a column to a type name (a string)")
    if not isinstance(raw.get("hierarchies") or {}, Mapping):
        raise DeidInputError("[hierarchies] must be a table")
    for section in ("types", "hierarchies"):
        for col in raw.get(section, {}) or {}:
            if col not in columns:
                raise DeidInputError(f"unknown column {col!r} in [{section}]: not declared in [columns]")
    hierarchies = {c: HierarchySpec.from_dict(c, h, base_dir, refuse_files)
                   for c, h in (raw.get("hierarchies") or {}).items()}
    rel = _check_section(raw, "release", ("type", "threshold", "pr_attempt", "prevalence", "friends",
                                           "friends_divisor", "strict_cut"))
    rtype = rel.pop("type", "non-public")
    if rtype not in RELEASE_TYPES:
        raise DeidInputError(f"[release] type {rtype!r} must be one of {', '.join(RELEASE_TYPES)}")
    release = ReleaseSpec(
        type=rtype,
        threshold=_probability("release", "threshold", rel.pop("threshold", 0.09 if rtype == "public" else 0.05)),
        pr_attempt=None if rel.get("pr_attempt") is None else _probability("release", "pr_attempt", rel.pop("pr_attempt")),
        prevalence=None if rel.get("prevalence") is None else _probability("release", "prevalence", rel.pop("prevalence")),
        friends=_number("release", "friends", rel.pop("friends", 150)),
        friends_divisor=_number("release", "friends_divisor", rel.pop("friends_divisor", 2)),
        strict_cut=_probability("release", "strict_cut", rel.pop("strict_cut", 0.33)),
    )
    risk = _check_section(raw, "risk", ("missing", "gamma"))
    missing = risk.get("missing", "own_class")
    if missing not in MISSING_CHOICES:
        raise DeidInputError(f"[risk] missing must be one of {', '.join(MISSING_CHOICES)}, got {missing!r}")
    gamma = _number("risk", "gamma", risk.get("gamma", 1.0))
    if gamma <= 0:
        raise DeidInputError("[risk] gamma must be positive")
    data = _check_section(raw, "data", ("missing_values",))
    if not isinstance(data.get("missing_values", []), list) or not all(isinstance(v, str) for v in data.get("missing_values", [])):
        raise DeidInputError("[data] missing_values must be a list of strings")
    missing_values = tuple(data.get("missing_values", [""]))
    tr = _check_section(raw, "transform", ("levels", "record_suppression"))
    if not isinstance(tr.get("levels") or {}, Mapping) or not isinstance(tr.get("record_suppression", False), bool):
        raise DeidInputError("[transform] levels must be a table and record_suppression true or false")
    levels = dict(tr.get("levels") or {})
    for col, lvl in levels.items():
        if col not in columns or columns[col] != "quasi":
            raise DeidInputError(f"[transform] levels: {col!r} is not a quasi-identifier")
        if isinstance(lvl, bool) or not isinstance(lvl, int) or lvl < 0:
            raise DeidInputError(f"[transform] levels: level of {col!r} must be a non-negative integer")
    longitudinal = _longitudinal(raw.get("longitudinal"), columns)
    if longitudinal is not None:  # the person column is never released: direct, even when [columns] omits it
        columns.setdefault(longitudinal.person, "direct")
    text = _text(raw, columns)
    return Spec(
        columns=dict(columns), types=dict(raw.get("types") or {}), hierarchies=hierarchies,
        release=release, missing=missing, gamma=gamma, missing_values=missing_values,
        levels=levels, record_suppression=bool(tr.get("record_suppression", False)), rest=rest,
        longitudinal=longitudinal, text=text,
    )


def _text(raw: Mapping[str, Any], columns: Mapping[str, str]) -> TextSpec:
    """``[text]``: the mode and the hint columns, each a declared column of the same table."""
    section = _check_section(raw, "text", ("mode", "hints", "patient"))
    mode = section.get("mode", "tag")
    if mode not in TEXT_RELEASE_MODES:
        raise DeidInputError(f"[text] mode must be one of {', '.join(TEXT_RELEASE_MODES)}, got {mode!r}")
    hints = section.get("hints") or {}
    if not isinstance(hints, Mapping) or not all(isinstance(c, str) for c in hints.values()):
        raise DeidInputError("[text] hints must map a hint (name, mrn, dob, ...) to a column")
    for key, column in hints.items():
        if column not in columns:
            raise DeidInputError(f"[text] hints: {key} = {column!r} is not declared in [columns]")
    patient = section.get("patient")
    if patient is not None and (not isinstance(patient, str) or patient not in columns):
        raise DeidInputError(f"[text] patient = {patient!r} is not a column declared in [columns]")
    if section and "text" not in columns.values():
        raise DeidInputError("[text] is set but no column is declared \"text\"")
    return TextSpec(mode, dict(hints), patient)


def load_spec(path: str | Path) -> Spec:
    """Read and validate a TOML spec; relative hierarchy paths are relative to it."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            raw = tomllib.load(fh)
    except OSError as exc:
        raise DeidInputError(f"cannot read spec {str(path)!r}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise DeidInputError(f"spec {str(path)!r} is not valid TOML: {exc}") from None
    return parse_spec(raw, base_dir=path.resolve().parent)
