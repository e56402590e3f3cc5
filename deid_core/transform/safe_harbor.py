"""HIPAA Safe Harbor as a transformation (Benitez, Loukides & Malin 2010 Table 4 / Appendix A).

Columns are recognized by role and semantic type (spec ``[types]``):
direct identifiers and the identifier kinds of Table 4 are removed; dates
become years; ages ≥ 90 become ``"90+"``; birth years (and birth dates)
implying an age ≥ 90 are aggregated into one category; ZIP codes keep their
first 3 digits, and ``"000"`` where the 3-digit area has ≤ 20,000 people.
The population per 3-digit area comes from a supplied ZIP population table;
without one, the documented default is the list of 17 prefixes restricted
after the 2000 census (:data:`RESTRICTED_ZIP3_2000`).
The result is a :class:`~deid_core.transform.Policy`, so it can be re-applied.

Every column must have a declared fate (listed in ``[columns]`` or covered by
``[columns] default``), and the released columns are scanned for identifiers
(:mod:`deid_core.detect`) before anything is returned.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from ..io import require_records
from ..spec import Spec
from .ops import map_categories
from .policy import Policy

#: The 18 identifier kinds of Benitez, Loukides & Malin 2010 Table 4 and the ``[types]`` names recognizing them.
SAFE_HARBOR_KINDS: dict[int, tuple[str, frozenset[str]]] = {
    1: ("names", frozenset({"name", "first_name", "last_name", "surname", "given_name"})),
    2: ("geographic subdivisions smaller than a state", frozenset({"address", "street", "city", "county", "precinct", "geocode", "zip", "postal"})),
    3: ("dates (except year) and ages over 89", frozenset({"date", "dob", "birth_date", "age", "year", "birth_year"})),
    4: ("telephone numbers", frozenset({"phone", "telephone"})),
    5: ("fax numbers", frozenset({"fax"})),
    6: ("email addresses", frozenset({"email"})),
    7: ("social security numbers", frozenset({"ssn"})),
    8: ("medical record numbers", frozenset({"mrn"})),
    9: ("health plan beneficiary numbers", frozenset({"health_plan", "hcn"})),
    10: ("account numbers", frozenset({"account"})),
    11: ("certificate/license numbers", frozenset({"license", "certificate"})),
    12: ("vehicle identifiers and serial numbers", frozenset({"vehicle", "license_plate"})),
    13: ("device identifiers and serial numbers", frozenset({"device"})),
    14: ("web URLs", frozenset({"url"})),
    15: ("IP addresses", frozenset({"ip"})),
    16: ("biometric identifiers", frozenset({"biometric"})),
    17: ("full-face photographs and comparable images", frozenset({"photo", "image"})),
    18: ("any other unique identifying number, characteristic, or code", frozenset({"id", "identifier"})),
}

#: 3-digit ZIP areas with ≤ 20,000 people in the 2000 census (HHS guidance): released as "000".
RESTRICTED_ZIP3_2000 = ("036", "059", "063", "102", "203", "556", "692", "790", "821", "823", "830",
                        "831", "878", "879", "884", "890", "893")
ZIP3_MIN_POPULATION = 20_000
AGE_TOP = 90


def kind_of(type_name: str | None) -> int | None:
    """Table 4 item number recognized by a semantic type, or None."""
    if type_name is None:
        return None
    for k, (_, names) in SAFE_HARBOR_KINDS.items():
        if type_name in names:
            return k
    return None


def zip3(value: str) -> str:
    """First three digits of a ZIP (numeric ZIPs shorter than 5 digits are zero-padded first)."""
    v = value.strip()
    if v.isdigit() and len(v) < 5:
        v = v.zfill(5)
    return v[:3]


def restricted_zip3(zip_population: pd.DataFrame | None) -> list[str]:
    """3-digit prefixes with ≤ 20,000 people from a table (``zip`` or ``zip3`` + ``population`` or ``count``)."""
    if zip_population is None:
        return list(RESTRICTED_ZIP3_2000)
    zc = "zip3" if "zip3" in zip_population.columns else "zip" if "zip" in zip_population.columns else None
    pc = "population" if "population" in zip_population.columns else "count" if "count" in zip_population.columns else None
    if zc is None or pc is None:
        raise DeidInputError("malformed ZIP population table: needs a zip (or zip3) column and a population (or count) column")
    cnt = pd.to_numeric(zip_population[pc].astype(object), errors="coerce")
    if cnt.isna().any() or (cnt < 0).any():
        raise DeidInputError(f"malformed ZIP population table: non-numeric or negative {pc}")
    pre = zip_population[zc].astype(str).map(zip3)
    sums = cnt.groupby(pre.to_numpy()).sum()
    return sorted(sums.index[sums <= ZIP3_MIN_POPULATION])


def op_zip3(df: pd.DataFrame, step: Mapping[str, Any], ctx: dict) -> pd.DataFrame:
    """ZIP -> 3 digits; restricted areas (and, with ``known`` given, areas absent from it) -> ``000``."""
    c = step["column"]
    restricted = set(step.get("restricted", RESTRICTED_ZIP3_2000))
    known = set(step["known"]) if step.get("known") is not None else None

    def f(cats: pd.Index) -> list[str]:
        out = []
        for v in cats:
            p = zip3(v)
            out.append("000" if p in restricted or (known is not None and p not in known) else p)
        return out
    df[c] = map_categories(df[c], f)
    return df


def _years(cats: pd.Index, column: str) -> np.ndarray:
    d = pd.to_datetime(pd.Series(cats, dtype=object), errors="coerce", format="ISO8601")
    bad = np.flatnonzero(d.isna().to_numpy())
    if len(bad):
        raise DeidInputError(f"column {column!r}: value {cats[bad[0]]!r} is not an ISO date")
    return d.dt.year.to_numpy()


def op_year(df: pd.DataFrame, step: Mapping[str, Any], ctx: dict) -> pd.DataFrame:
    """Date -> its year (all elements of dates except the year removed)."""
    c = step["column"]
    df[c] = map_categories(df[c], lambda cats: [str(y) for y in _years(cats, c)])
    return df


def _numeric_cap(df: pd.DataFrame, column: str, label: str, above: bool, bound: float, what: str) -> pd.DataFrame:
    """Values ≥ bound (``above``) or ≤ bound (not ``above``) -> ``label``; the label itself is kept (idempotent)."""
    def f(cats: pd.Index) -> list[str]:
        nums = pd.to_numeric(pd.Series(cats, dtype=object), errors="coerce").to_numpy(dtype=float)
        out = []
        for v, x in zip(cats, nums):
            if v == label:
                out.append(v)
            elif not np.isfinite(x):
                raise DeidInputError(f"column {column!r}: value {v!r} is not a number ({what})")
            else:
                out.append(label if (x >= bound if above else x <= bound) else v)
        return out
    df[column] = map_categories(df[column], f)
    return df


def op_top_code(df: pd.DataFrame, step: Mapping[str, Any], ctx: dict) -> pd.DataFrame:
    """Numbers ≥ ``at`` -> ``"{at}+"`` (ages over 89 -> "90+", Table 4 item 3)."""
    at = float(step.get("at", AGE_TOP))
    return _numeric_cap(df, step["column"], step.get("label", f"{int(at)}+"), True, at, "age")


def op_birth_year_cap(df: pd.DataFrame, step: Mapping[str, Any], ctx: dict) -> pd.DataFrame:
    """Birth years ≤ reference_year − 90 (age ≥ 90) -> one category ``"<=YYYY"`` (Table 4 item 3)."""
    cap = int(step["reference_year"]) - AGE_TOP
    return _numeric_cap(df, step["column"], f"<={cap}", False, cap, "year")


def safe_harbor_policy(spec: Spec, columns: list[str], zip_population: pd.DataFrame | None = None,
                       reference_year: int | None = None, key: bytes | None = None) -> tuple[Policy, dict]:
    """Safe Harbor policy for the columns of a table, and what was recognized (column -> kind/action);
    ``key``: the owner's, whose check value the policy records when notes are replaced by surrogates.

    Raises :class:`DeidInputError` for columns the spec does not list (unless it has a default).
    """
    spec.check_columns(columns)
    fates, defaulted = spec.fates(columns), spec.unlisted(columns)
    spec = spec.resolve(columns)
    ref = reference_year or _dt.date.today().year
    restricted = restricted_zip3(zip_population)
    known = None
    if zip_population is not None:
        zc = "zip3" if "zip3" in zip_population.columns else "zip"
        known = sorted({zip3(str(z)) for z in zip_population[zc]})
    drop, steps, actions = [], [], {}
    for col in columns:
        role, typ = spec.columns.get(col, "other"), spec.types.get(col)
        kind = kind_of(typ)
        if typ == "zip":
            steps.append({"op": "zip3", "column": col, "restricted": restricted, "known": known})
            actions[col] = {"kind": 2, "action": "3-digit ZIP; 000 where the area has <= 20,000 people"}
        elif typ in ("date", "dob", "birth_date"):
            steps.append({"op": "year", "column": col})
            act = "year only"
            if typ != "date":
                steps.append({"op": "birth_year_cap", "column": col, "reference_year": ref})
                act += f"; birth years <= {ref - AGE_TOP} aggregated"
            actions[col] = {"kind": 3, "action": act}
        elif typ == "age":
            steps.append({"op": "top_code", "column": col, "at": AGE_TOP})
            actions[col] = {"kind": 3, "action": "ages >= 90 -> 90+"}
        elif typ in ("year", "birth_year"):
            if typ == "birth_year":
                steps.append({"op": "birth_year_cap", "column": col, "reference_year": ref})
            actions[col] = {"kind": 3, "action": "kept (year)" + ("; birth years implying age >= 90 aggregated" if typ == "birth_year" else "")}
        elif role == "text":
            actions[col] = {"kind": None, "action": f"notes de-identified ({spec.text.mode}: every identifier found "
                                                    "in them replaced)"}
        elif role == "direct" or kind is not None:
            drop.append(col)
            actions[col] = {"kind": kind or 18, "action": "removed"}
        else:
            actions[col] = {"kind": None, "action": f"kept ({role})"}
    policy = Policy(([{"op": "drop", "columns": drop}] if drop else []) + steps,
                    description=f"HIPAA Safe Harbor (reference year {ref})").with_fates(
        fates, spec.rest, True, text=spec.text.to_dict(), key=key)
    return policy, {"reference_year": ref, "restricted_zip3": restricted,
                    "zip_population_supplied": zip_population is not None, "columns": actions,
                    "column_fates": fates,
                    "defaulted_columns": {c: spec.rest for c in defaulted}}


def safe_harbor(df: pd.DataFrame, spec: Spec, zip_population: pd.DataFrame | None = None,
                reference_year: int | None = None, accepted: Mapping[str, str] | None = None,
                notes: Mapping[str, dict] | None = None, key: bytes | None = None) -> tuple[pd.DataFrame, Policy, dict]:
    """Apply Safe Harbor to ``df``: returns (output, policy, recognition report).

    The output is scanned for identifiers (:func:`deid_core.detect.check_release`, every column,
    every kind); ``accepted`` ({column: reason}) lets named columns through, and the reasons are
    recorded in the report (``accepted_columns`` and the column's entry in ``columns``).  A ``text`` column
    must come de-identified (:func:`deid_core.releasing.deidentify_text_columns`; ``notes``: what it found;
    ``key``: the owner's, in surrogate mode).
    """
    from ..detect import check_release

    require_records(df)
    policy, info = safe_harbor_policy(spec, list(df.columns), zip_population, reference_year, key)
    out, _ = policy.apply(df)
    check = check_release(out, info["column_fates"], safe_harbor=True, accepted=accepted, notes=notes)
    for col, acc in check["accepted_columns"].items():
        info["columns"][col] = {**info["columns"][col], "accepted": acc["reason"]}
    info.update(identifier_check=check, accepted_columns=check["accepted_columns"])
    return out, policy, info
