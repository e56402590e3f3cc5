"""Transformations and the re-appliable :class:`Policy`.

A policy is an ordered list of JSON steps (``{"op": ..., ...}``); each op is
one small function over a DataFrame, vectorized through the column's
categories (each distinct value is transformed once, records follow by
code). The same policy JSON can be applied to the next batch of the same
kind of data (``deid apply``): builders are deterministic functions of a
value, so new values get the same treatment.

Ops: ``drop``, ``generalize`` (full-domain: one hierarchy level per QI),
``map`` (full-subtree: value -> released value), ``suppress_records``
(records in ECs smaller than k get :data:`SUPPRESSED` in every QI),
``suppress_cells``, ``zip3``, ``year``, ``top_code``, ``birth_year_cap``,
``pseudonymize``, ``randomize``, ``dates_intervals``.
"""
from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import DeidInputError
from .hierarchy import build_hierarchy, distinct_values
from .risk import pack_keys, sizes_from_keys
from .spec import SUPPRESSED, HierarchySpec


def map_categories(s: pd.Series, fn: Callable[[pd.Index], Sequence[Any]]) -> pd.Series:
    """Apply ``fn`` to the distinct values of ``s`` only; missing stays missing."""
    cat = s if isinstance(s.dtype, pd.CategoricalDtype) else s.astype("category")
    cats = cat.cat.categories
    new = pd.Series(list(fn(cats.astype(str))), dtype=object)
    codes, uniques = pd.factorize(new)  # NaN results -> -1
    lut = np.append(codes, -1).astype(np.int32)
    return pd.Series(pd.Categorical.from_codes(lut[cat.cat.codes.to_numpy()], categories=pd.Index(uniques).astype(str)),
                     index=s.index, name=s.name)


def set_marker(s: pd.Series, mask: np.ndarray, marker: str = SUPPRESSED) -> pd.Series:
    """Replace the cells where ``mask`` is true by the suppression marker."""
    cat = s if isinstance(s.dtype, pd.CategoricalDtype) else s.astype("category")
    if marker not in cat.cat.categories:
        cat = cat.cat.add_categories([marker])
    out = cat.copy()
    out[mask] = marker
    return out


def ec_sizes_of(df: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """Class size per record on the current values of ``columns`` (missing = its own value)."""
    codes, cards = [], []
    for c in columns:
        cat = df[c] if isinstance(df[c].dtype, pd.CategoricalDtype) else df[c].astype("category")
        codes.append(cat.cat.codes.to_numpy())
        cards.append(len(cat.cat.categories))
    inv, sizes = sizes_from_keys(pack_keys(codes, cards))
    return sizes[inv]


# ------------------------------------------------------------------ ops

def _need(step: Mapping[str, Any], *keys: str) -> None:
    for k in keys:
        if k not in step:
            raise DeidInputError(f"policy step {step.get('op')!r} needs {k!r}")


def _col(df: pd.DataFrame, step: Mapping[str, Any]) -> str:
    _need(step, "column")
    c = step["column"]
    if c not in df.columns:
        raise DeidInputError(f"unknown column {c!r}: not in the input")
    return c


def op_drop(df: pd.DataFrame, step: Mapping[str, Any], ctx: dict) -> pd.DataFrame:
    unknown = [c for c in step.get("columns", []) if c not in df.columns]
    if unknown:
        raise DeidInputError(f"unknown column {unknown[0]!r}: not in the input")
    return df.drop(columns=list(step.get("columns", [])))


def op_generalize(df: pd.DataFrame, step: Mapping[str, Any], ctx: dict) -> pd.DataFrame:
    c = _col(df, step)
    _need(step, "hierarchy", "level")
    hs = HierarchySpec.from_dict(c, step["hierarchy"])
    h = build_hierarchy(hs, distinct_values(df[c]), name=c)
    df[c] = h.generalize(df[c], int(step["level"]), c)
    return df


def op_map(df: pd.DataFrame, step: Mapping[str, Any], ctx: dict) -> pd.DataFrame:
    c = _col(df, step)
    mapping = {str(k): str(v) for k, v in step.get("mapping", {}).items()}
    df[c] = map_categories(df[c], lambda cats: [mapping.get(v, v) for v in cats])
    return df


def op_suppress_records(df: pd.DataFrame, step: Mapping[str, Any], ctx: dict) -> pd.DataFrame:
    _need(step, "columns", "k")
    cols = list(step["columns"])
    for c in cols:
        if c not in df.columns:
            raise DeidInputError(f"unknown column {c!r}: not in the input")
    mask = ec_sizes_of(df, cols) < int(step["k"])
    for c in cols:
        df[c] = set_marker(df[c], mask)
    ctx["suppressed_records"] = ctx.get("suppressed_records", 0) + int(mask.sum())
    return df


def op_suppress_cells(df: pd.DataFrame, step: Mapping[str, Any], ctx: dict) -> pd.DataFrame:
    c = _col(df, step)
    values = {str(v) for v in step.get("values", [])}
    mask = df[c].astype(object).isin(values).to_numpy()
    df[c] = set_marker(df[c], mask)
    return df


def op_blank(df: pd.DataFrame, step: Mapping[str, Any], ctx: dict) -> pd.DataFrame:
    c = _col(df, step)
    df[c] = set_marker(df[c], np.ones(len(df), dtype=bool))
    return df


def _op_from(name: str) -> Callable[[pd.DataFrame, Mapping[str, Any], dict], pd.DataFrame]:
    """Lazy import of ops defined in other modules (safe_harbor, masking, dates)."""
    def run(df: pd.DataFrame, step: Mapping[str, Any], ctx: dict) -> pd.DataFrame:
        module = {"pseudonymize": "masking", "randomize": "masking", "dates_intervals": "dates"}.get(name, "safe_harbor")
        return getattr(importlib.import_module(f"{__package__}.{module}"), f"op_{name}")(df, step, ctx)
    return run


OPS: dict[str, Callable[[pd.DataFrame, Mapping[str, Any], dict], pd.DataFrame]] = {
    "drop": op_drop, "generalize": op_generalize, "map": op_map, "suppress_records": op_suppress_records,
    "suppress_cells": op_suppress_cells, "blank": op_blank,
    **{n: _op_from(n) for n in ("zip3", "year", "top_code", "birth_year_cap", "pseudonymize", "randomize", "dates_intervals")},
}


def _map_hierarchy(step: dict, fn: Callable[[HierarchySpec], HierarchySpec], base_dir: Path | None = None) -> dict:
    """A copy of a ``generalize`` step with ``fn`` applied to its hierarchy (other steps unchanged)."""
    if step.get("op") != "generalize" or not isinstance(step.get("hierarchy"), Mapping):
        return step
    hs = HierarchySpec.from_dict(str(step.get("column")), step["hierarchy"], base_dir)
    return {**step, "hierarchy": fn(hs).to_dict()}


@dataclass
class Policy:
    """An ordered list of transformation steps, JSON-serializable and re-appliable."""

    steps: list[dict] = field(default_factory=list)
    description: str = ""
    version: int = 1
    #: The declared fate (role) of every column of the data the policy was made for, and of the rest
    #: (``default``: ``drop`` | ``other`` | ``quasi`` or None); ``safe_harbor``: whether releases made
    #: with it are checked as Safe Harbor releases (docs/deid.md, "Every column has a fate").
    columns: dict[str, str] = field(default_factory=dict)
    default: str | None = None
    safe_harbor: bool | None = None

    def to_dict(self, relative_to: str | Path | None = None) -> dict:
        """JSON form; with ``relative_to`` (the folder the policy is saved in) CSV hierarchy paths become
        relative to it, so the folder can be moved as a whole."""
        steps = self.steps
        if relative_to is not None:
            steps = [_map_hierarchy(st, lambda h: h.relative_to(Path(relative_to))) for st in steps]
        out = {"format": "deid_core.policy", "version": self.version, "description": self.description, "steps": steps}
        if self.columns or self.default is not None:
            out.update(columns=dict(self.columns), default=self.default, safe_harbor=self.is_safe_harbor())
        return out

    def with_fates(self, fates: Mapping[str, str], default: str | None = None, safe_harbor: bool | None = None) -> "Policy":
        """This policy recording each column's fate (from the spec it was made with)."""
        return Policy(self.steps, self.description, self.version, dict(fates), default,
                      self.safe_harbor if safe_harbor is None else safe_harbor)

    def step_columns(self) -> dict[str, str]:
        """Columns the steps name -> fate they imply (``direct`` dropped, ``masked``, else ``quasi``)."""
        out: dict[str, str] = {}
        for st in self.steps:
            cols = st.get("columns", []) if st.get("op") in ("drop", "suppress_records") else [st.get("column")]
            fate = {"drop": "direct", "pseudonymize": "masked", "randomize": "masked", "blank": "masked"}.get(st.get("op"), "quasi")
            for c in cols:
                if c is not None and out.get(c) not in ("direct", "masked"):
                    out[str(c)] = fate
        return out

    def fates(self, available: Sequence[str]) -> dict[str, str]:
        """Fate of every input column: recorded, implied by a step, or the recorded default; else refused."""
        steps = self.step_columns()
        rest = [c for c in available if c not in self.columns and c not in steps]
        if rest and self.default is None:
            shown = ", ".join(repr(c) for c in rest[:10]) + (f" and {len(rest) - 10} more" if len(rest) > 10 else "")
            raise DeidInputError(f"{len(rest)} column(s) of the input are not in the policy: {shown} - re-create the "
                                 "policy from a spec that declares them (or sets [columns] default)")
        default = "direct" if self.default == "drop" else self.default
        return {c: steps[c] if steps.get(c) in ("direct", "masked") else self.columns.get(c) or steps.get(c) or default
                for c in available}

    def is_safe_harbor(self) -> bool:
        """Recorded, or (older policies) inferred from Safe Harbor steps."""
        if self.safe_harbor is not None:
            return self.safe_harbor
        return any(st.get("op") in ("zip3", "year", "top_code", "birth_year_cap") for st in self.steps)

    def to_json(self, relative_to: str | Path | None = None) -> str:
        return json.dumps(self.to_dict(relative_to), indent=2)

    def save(self, path: str | Path) -> None:
        """Write the policy JSON to ``path`` with hierarchy files referenced relative to its folder."""
        from .io import write_text
        write_text(self.to_json(relative_to=Path(path).resolve().parent) + "\n", path)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], base_dir: str | Path | None = None) -> "Policy":
        """Validate a policy; relative CSV hierarchy paths are resolved against ``base_dir`` (absolute ones,
        as older policies wrote them, are kept)."""
        if not isinstance(raw, Mapping) or raw.get("format") != "deid_core.policy" or not isinstance(raw.get("steps"), list):
            raise DeidInputError("not a deid_core policy (expected format = 'deid_core.policy' and a list of steps)")
        for st in raw["steps"]:
            if not isinstance(st, Mapping) or st.get("op") not in OPS:
                raise DeidInputError(f"policy: unknown step {st!r:.80}")
        columns = raw.get("columns") or {}
        if not isinstance(columns, Mapping) or raw.get("default") not in (None, "drop", "other", "quasi"):
            raise DeidInputError("policy: 'columns' must map column -> role and 'default' be drop, other or quasi")
        steps = [dict(s) for s in raw["steps"]]
        if base_dir is not None:
            steps = [_map_hierarchy(st, lambda h: h, Path(base_dir)) for st in steps]
        return cls(steps=steps, description=str(raw.get("description", "")),
                   version=int(raw.get("version", 1)), columns={str(k): str(v) for k, v in columns.items()},
                   default=raw.get("default"), safe_harbor=raw.get("safe_harbor"))

    @classmethod
    def load(cls, path: str | Path) -> "Policy":
        """Read a saved policy; its hierarchy files are looked up relative to the policy's folder."""
        try:
            with open(path, encoding="utf-8") as fh:
                raw = json.load(fh)
        except OSError as exc:
            raise DeidInputError(f"cannot read policy {str(path)!r}: {exc.strerror or exc}") from None
        except json.JSONDecodeError as exc:
            raise DeidInputError(f"policy {str(path)!r} is not valid JSON: {exc}") from None
        return cls.from_dict(raw, base_dir=Path(path).resolve().parent)

    def apply(self, df: pd.DataFrame, key: bytes | None = None) -> tuple[pd.DataFrame, dict]:
        """Apply every step to a copy of ``df``; returns (output, context with counts)."""
        out = df.copy()
        ctx: dict = {"key": key, "suppressed_records": 0, "warnings": []}
        for step in self.steps:
            out = OPS[step["op"]](out, step, ctx)
        ctx.pop("key", None)
        return out, ctx


def full_domain_policy(hierarchies: Mapping[str, HierarchySpec], levels: Mapping[str, int],
                       drop: Sequence[str] = (), suppress_k: int | None = None,
                       qis: Sequence[str] = ()) -> Policy:
    """Policy = drop direct identifiers, generalize each QI to its level, then suppress records in ECs < k.

    Small CSV hierarchies are embedded (:meth:`HierarchySpec.portable`), so the policy re-applies anywhere.
    """
    steps: list[dict] = []
    if drop:
        steps.append({"op": "drop", "columns": list(drop)})
    for col, lvl in levels.items():
        if lvl:
            if col not in hierarchies:
                if lvl != 1:
                    raise DeidInputError(f"level {lvl} for {col!r}, which has no hierarchy (only 0 or 1 = '*')")
                steps.append({"op": "generalize", "column": col, "hierarchy": {"builder": "flat"}, "level": 1})
            else:
                steps.append({"op": "generalize", "column": col, "hierarchy": hierarchies[col].portable().to_dict(),
                              "level": int(lvl)})
    if suppress_k and suppress_k > 1:
        steps.append({"op": "suppress_records", "columns": list(qis or levels), "k": int(suppress_k)})
    return Policy(steps)
