"""The steps of a policy: one small function per op over a DataFrame, vectorized through the column's
categories (each distinct value is transformed once, records follow by code; docs/deid.md).

Ops here: ``drop``, ``generalize`` (full-domain: one hierarchy level per QI), ``map`` (full-subtree:
value -> released value), ``suppress_records`` (records in classes smaller than k get
:data:`~deid_core.spec.SUPPRESSED` in every QI; with ``person``, all records of the persons in classes of
fewer than k persons), ``suppress_cells``, ``blank``; ``zip3``, ``year``,
``top_code``, ``birth_year_cap`` (:mod:`.safe_harbor`), ``pseudonymize``, ``randomize``
(:mod:`.masking`), ``fpe`` (:mod:`.fpe`), ``names`` (:mod:`.names`) and ``dates_intervals`` (:mod:`.dates`)
are looked up in their modules when run.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from ..hierarchy import build_hierarchy, distinct_values
from ..longitudinal.persons import person_codes, persons_to_suppress
from ..metric.missingness import missing_mask
from ..risk.equivalence_classes import class_index
from ..spec import SUPPRESSED, HierarchySpec
from .dates import step_columns as date_step_columns


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


def suppression_mask(df: pd.DataFrame, columns: Sequence[str], k: int, person: str | None = None,
                     ) -> tuple[np.ndarray, int | None]:
    """Records to suppress for k on ``columns``, and (with ``person``) the number of persons suppressed.

    Without ``person``: the records in classes smaller than k. With ``person`` (``[longitudinal]``, El Emam &
    Arbuckle, ch. 4): every record of each person one of whose records is in a class of fewer than k
    *distinct persons*, repeated until every class of the persons kept holds k of them
    (:func:`deid_core.longitudinal.persons.persons_to_suppress`); records whose QIs are all missing take no part.
    """
    cls, sizes = class_index(df, columns)
    if person is None:
        return sizes[cls] < k, None
    if person not in df.columns:
        raise DeidInputError(f"unknown column {person!r}: the person column of suppress_records is not in the input")
    pcode, pids = person_codes(df, person)
    gone = persons_to_suppress(cls, pcode, len(pids), k, keep=~missing_mask(df, list(columns)).all(axis=1))
    return gone[pcode], int(gone.sum())


def op_suppress_records(df: pd.DataFrame, step: Mapping[str, Any], ctx: dict) -> pd.DataFrame:
    """Suppress records in classes smaller than ``k``; with ``person``, whole persons (:func:`suppression_mask`)."""
    _need(step, "columns", "k")
    cols = list(step["columns"])
    for c in cols:
        if c not in df.columns:
            raise DeidInputError(f"unknown column {c!r}: not in the input")
    mask, persons = suppression_mask(df, cols, int(step["k"]), step.get("person"))
    for c in cols:
        df[c] = set_marker(df[c], mask)
    ctx["suppressed_records"] = ctx.get("suppressed_records", 0) + int(mask.sum())
    if persons is not None:
        ctx["suppressed_persons"] = ctx.get("suppressed_persons", 0) + persons
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
        module = {"pseudonymize": "masking", "randomize": "masking", "dates_intervals": "dates", "fpe": "fpe",
                  "names": "names"}.get(name, "safe_harbor")
        return getattr(importlib.import_module(f"{__package__}.{module}"), f"op_{name}")(df, step, ctx)
    return run


OPS: dict[str, Callable[[pd.DataFrame, Mapping[str, Any], dict], pd.DataFrame]] = {
    "drop": op_drop, "generalize": op_generalize, "map": op_map, "suppress_records": op_suppress_records,
    "suppress_cells": op_suppress_cells, "blank": op_blank,
    **{n: _op_from(n) for n in ("zip3", "year", "top_code", "birth_year_cap", "pseudonymize", "randomize", "dates_intervals",
                                "fpe", "names")},
}
#: Ops that mask a column (El Emam & Arbuckle, ch. 11): its fate is "masked", the identifier scan skips it.
MASKING_OPS = ("pseudonymize", "randomize", "blank", "fpe", "names")


def step_touches(step: Mapping[str, Any], column: str) -> bool:
    """Whether a policy step acts on ``column`` (every step changes the columns it names; a
    ``dates_intervals`` step names them in its own layout)."""
    if step.get("op") == "dates_intervals":
        return column in date_step_columns(step)
    return step.get("column") == column or column in (step.get("columns") or [])
