"""The workbench's spec form: one row of fields per column plus the release and ``[longitudinal]`` fields,
turned into the TOML spec of docs/deid.md ("Spec (TOML)") and back (a loaded spec fills the form)."""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import tomli_w

from ..errors import DeidInputError
from ..spec import BUILDERS, RELEASE_TYPES, ROLES, Spec, parse_spec

#: ``[types]`` the Safe Harbor treatment and the detector know (docs/deid.md, "Spec (TOML)").
TYPES = ("zip", "age", "date", "dob", "birth_date", "year", "birth_year", "name", "address", "city", "phone", "fax",
         "email", "ssn", "mrn", "health_plan", "account", "license", "vehicle", "device", "url", "ip", "biometric",
         "photo", "id")
#: Builders offered in the form; ``csv`` is an uploaded ARX-layout file, embedded in the spec as rows.
FORM_BUILDERS = tuple(b for b in BUILDERS if b != "csv") + ("csv",)
#: Sections and keys a loaded spec may carry that the form does not edit: kept as they are.
KEPT_SECTIONS = ("risk", "data", "transform")
KEPT_RELEASE_KEYS = ("pr_attempt", "prevalence", "friends", "friends_divisor", "strict_cut")
#: The workbench reads no file on the server it was not given: a spec it is handed names none.
NO_FILES = ("a spec uploaded to the workbench may not name files (csv = ...); upload the hierarchy's CSV in its "
            "column instead, or embed rows = [...]")


@dataclass
class ColumnForm:
    """The fields of one column: role, semantic type, hierarchy (builder and its parameters), level."""

    role: str = "other"
    type: str = ""
    builder: str = ""
    widths: str = ""
    top_code: str = ""
    bottom_code: str = ""
    prefix_levels: str = ""
    rows: list[list[str]] | None = None
    source: str = ""
    #: ``[longitudinal]``: "1" (fixed per person), "2" (per event) or "".
    level: str = ""

    def hierarchy(self, column: str) -> dict[str, Any] | None:
        """The ``[hierarchies]`` entry of a quasi-identifier (None: none declared, (value, *) is used)."""
        if self.role != "quasi" or not self.builder:
            return None
        if self.builder == "csv":
            if not self.rows:
                raise DeidInputError(f"hierarchy of {column!r}: upload its CSV file (ARX layout, one row per value)")
            return {"rows": self.rows, **({"source": self.source} if self.source else {})}
        out: dict[str, Any] = {"builder": self.builder}
        if self.builder == "interval":
            out["widths"] = _numbers(self.widths, f"interval widths of {column!r}") or [5, 10, 20]
            for key in ("top_code", "bottom_code"):
                text = getattr(self, key).strip()
                if text:
                    out[key] = _number(text, f"{key.replace('_', ' ')} of {column!r}")
        elif self.builder == "prefix" and self.prefix_levels.strip():
            out["levels"] = int(_number(self.prefix_levels, f"prefix levels of {column!r}", integer=True))
        return out


def _number(text: str, what: str, integer: bool = False) -> int | float:
    try:
        x = float(text)
    except ValueError:
        raise DeidInputError(f"{what}: {text.strip()!r} is not a number") from None
    if not math.isfinite(x) or (integer and not x.is_integer()):
        raise DeidInputError(f"{what}: {text.strip()!r} is not {'a whole number' if integer else 'a finite number'}")
    return int(x) if x.is_integer() else x


def _numbers(text: str, what: str) -> list[int | float]:
    return [_number(part, what) for part in text.replace(";", ",").split(",") if part.strip()]


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value)
    return str(value)


@dataclass
class SpecForm:
    """The whole form: a :class:`ColumnForm` per column of the loaded table, in its order."""

    columns: dict[str, ColumnForm]
    release_type: str = "non-public"
    threshold: str = "0.05"
    person: str = ""
    adversary_power: str = "5"
    #: what a loaded spec says that the form does not edit ([risk], [data], [transform], attack parameters)
    kept: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def for_columns(cls, columns: Sequence[str], flagged: Mapping[str, Any]) -> "SpecForm":
        """A fresh form: flagged columns (the identifier detector found something) start as direct identifiers."""
        return cls({c: ColumnForm(role="direct" if c in flagged else "other") for c in columns})

    def update(self, fields: Mapping[str, str]) -> None:
        """Apply posted fields: ``release_type``, ``threshold``, ``person``, ``adversary_power`` and per column
        ``role:C``, ``type:C``, ``builder:C``, ``widths:C``, ``top_code:C``, ``bottom_code:C``,
        ``prefix_levels:C``, ``level:C``."""
        for key in ("release_type", "threshold", "person", "adversary_power"):
            if key in fields:
                setattr(self, key, str(fields[key]).strip())
        for name, value in fields.items():
            attr, sep, column = name.partition(":")
            if sep and column in self.columns and attr in ("role", "type", "builder", "widths", "top_code",
                                                            "bottom_code", "prefix_levels", "level"):
                setattr(self.columns[column], attr, str(value).strip())

    def set_rows(self, column: str, rows: list[list[str]], source: str) -> None:
        """An uploaded CSV hierarchy for ``column`` (embedded in the spec as rows)."""
        if column not in self.columns:
            raise DeidInputError(f"unknown column {column!r}")
        col = self.columns[column]
        col.rows, col.source, col.builder = rows, source, "csv"

    def raw(self) -> dict[str, Any]:
        """The spec as a TOML mapping (validated by :meth:`spec`)."""
        for column, col in self.columns.items():
            if col.role not in ROLES:
                raise DeidInputError(f"column {column!r}: unknown role {col.role!r}")
            if col.type and col.type not in TYPES:
                raise DeidInputError(f"column {column!r}: unknown type {col.type!r}")
            if col.builder and col.builder not in FORM_BUILDERS:
                raise DeidInputError(f"column {column!r}: unknown hierarchy builder {col.builder!r}")
        if self.release_type not in RELEASE_TYPES:
            raise DeidInputError(f"release type must be one of {', '.join(RELEASE_TYPES)}")
        out: dict[str, Any] = {"columns": {c: col.role for c, col in self.columns.items()}}
        types = {c: col.type for c, col in self.columns.items() if col.type}
        if types:
            out["types"] = types
        hierarchies = {c: h for c, col in self.columns.items() if (h := col.hierarchy(c)) is not None}
        if hierarchies:
            out["hierarchies"] = hierarchies
        out["release"] = {"type": self.release_type, "threshold": _number(self.threshold, "threshold"),
                          **self.kept.get("release", {})}
        if self.person:
            if self.person not in self.columns:
                raise DeidInputError(f"[longitudinal] person: unknown column {self.person!r}")
            out["longitudinal"] = {
                "person": self.person,
                "level1": [c for c, col in self.columns.items() if col.role == "quasi" and col.level == "1"],
                "level2": [c for c, col in self.columns.items() if col.role == "quasi" and col.level == "2"],
                "adversary_power": int(_number(self.adversary_power or "5", "adversary power", integer=True)),
            }
        out.update({k: v for k, v in self.kept.items() if k != "release"})
        return out

    def spec(self) -> Spec:
        """The validated spec (:func:`deid_core.spec.parse_spec`)."""
        return parse_spec(self.raw(), refuse_files=NO_FILES)

    def toml(self) -> str:
        """The spec as TOML text, as it is shown and downloaded."""
        return tomli_w.dumps(self.raw())

    @classmethod
    def from_toml(cls, text: str, columns: Sequence[str]) -> "SpecForm":
        """The form a loaded spec fills: every column of the table must be declared (or covered by ``[columns]
        default``); a CSV hierarchy comes embedded (``rows``), a file it names is refused (:data:`NO_FILES`)."""
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise DeidInputError(f"the spec is not valid TOML: {exc}") from None
        spec = parse_spec(raw, refuse_files=NO_FILES)
        spec.check_columns(columns)
        fates = spec.fates(columns)
        form = cls({c: ColumnForm(role="direct" if fates[c] == "direct" else fates[c]) for c in columns})
        for c, t in spec.types.items():
            form.columns[c].type = str(t)
        for c, h in spec.hierarchies.items():
            col, params = form.columns[c], dict(h.params)
            if h.builder == "csv":
                col.builder, col.rows, col.source = "csv", params["rows"], str(params.get("source", ""))
                continue
            col.builder = h.builder
            col.widths, col.top_code = _text(params.get("widths")), _text(params.get("top_code"))
            col.bottom_code, col.prefix_levels = _text(params.get("bottom_code")), _text(params.get("levels"))
        form.release_type, form.threshold = spec.release.type, repr(spec.release.threshold)
        release_raw = raw.get("release") or {}
        kept_release = {k: release_raw[k] for k in KEPT_RELEASE_KEYS if k in release_raw}
        form.kept = {k: raw[k] for k in KEPT_SECTIONS if k in raw} | ({"release": kept_release} if kept_release else {})
        lg = spec.longitudinal
        if lg is not None:
            form.person, form.adversary_power = lg.person, str(lg.adversary_power)
            for c in lg.level1:
                form.columns[c].level = "1"
            for c in lg.level2:
                form.columns[c].level = "2"
        return form
