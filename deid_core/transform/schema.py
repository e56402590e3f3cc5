"""The schema of a policy file and of each of its steps: every key known, of its type, the required ones
present; anything else is refused with one line naming the step and the key (docs/deid.md, "Policies")."""
from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from ..errors import DeidInputError

Check = Callable[[Any], bool]


def _str(v: Any) -> bool:
    return isinstance(v, str) and v != ""


def _int(lo: int | None = None, hi: int | None = None) -> Check:
    return lambda v: (isinstance(v, int) and not isinstance(v, bool) and (lo is None or v >= lo)
                      and (hi is None or v <= hi))


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) != float("inf")


def _bool(v: Any) -> bool:
    return isinstance(v, bool)


def _str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _columns(v: Any) -> bool:
    return _str_list(v) and len(v) > 0 and all(v)


def str_map(v: Any) -> bool:
    return isinstance(v, Mapping) and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items())


def _one_of(*choices: str) -> Check:
    return lambda v: v in choices


def _optional(check: Check) -> Check:
    return lambda v: v is None or check(v)


def _mapping(v: Any) -> bool:
    return isinstance(v, Mapping)


_HEX32 = re.compile(r"[0-9a-f]{32}")

#: What each check accepts, for the message.
_WHAT: dict[Check, str] = {}


def _named(check: Check, what: str) -> Check:
    _WHAT[check] = what
    return check


STR = _named(_str, "a non-empty string")
COLUMNS = _named(_columns, "a non-empty list of column names")
STR_LIST = _named(_str_list, "a list of strings")
STR_MAP = _named(str_map, "a table of strings to strings")
MAPPING = _named(_mapping, "a table")
NUMBER = _named(_number, "a finite number")
BOOL = _named(_bool, "true or false")
LEVEL = _named(_int(0), "an integer >= 0")
K = _named(_int(1), "an integer >= 1")
YEAR = _named(_int(1, 9999), "a year (1 to 9999)")
SEED = _named(_optional(_int(0)), "an integer >= 0")
LENGTH = _named(_int(8, 64), "an integer from 8 to 64")
WIDTH = _named(_int(1), "an integer >= 1 (days)")
FPE_FORMAT = _named(_one_of("digits", "ssn", "luhn"), "digits, ssn or luhn")
PART = _named(_one_of("first", "last"), "first or last")
WEIGHTS = _named(_one_of("frequency", "uniform"), "frequency or uniform")
ANCHOR = _named(_one_of("day", "month", "year"), "day, month or year")
KEY_CHECK = _named(lambda v: isinstance(v, str) and bool(_HEX32.fullmatch(v)), "32 lowercase hex digits")
KNOWN = _named(_optional(_str_list), "a list of strings")
DOMINANT = _named(lambda v: v is None or v is False or (isinstance(v, Mapping) and _columns(v.get("columns"))
                                                        and _int(2)(v.get("k")) and set(v) <= {"columns", "k", "value"}
                                                        and _optional(_str)(v.get("value"))),
                  "{\"columns\": [...], \"k\": k >= 2, \"value\": optional}")

#: op -> {key: (check, required)}. ``dates_intervals`` takes ``column`` or ``columns`` (checked below).
STEPS: dict[str, dict[str, tuple[Check, bool]]] = {
    "drop": {"columns": (COLUMNS, True)},
    "generalize": {"column": (STR, True), "hierarchy": (MAPPING, True), "level": (LEVEL, True)},
    "map": {"column": (STR, True), "mapping": (STR_MAP, True)},
    "suppress_records": {"columns": (COLUMNS, True), "k": (K, True), "person": (STR, False)},
    "suppress_cells": {"column": (STR, True), "values": (STR_LIST, True)},
    "blank": {"column": (STR, True)},
    "zip3": {"column": (STR, True), "restricted": (STR_LIST, False), "known": (KNOWN, False)},
    "year": {"column": (STR, True)},
    "top_code": {"column": (STR, True), "at": (NUMBER, False), "label": (STR, False)},
    "birth_year_cap": {"column": (STR, True), "reference_year": (YEAR, True)},
    "pseudonymize": {"column": (STR, True), "length": (LENGTH, False), "dominant": (DOMINANT, False)},
    "randomize": {"column": (STR, True), "seed": (SEED, False), "unique": (BOOL, False)},
    "fpe": {"column": (STR, True), "format": (FPE_FORMAT, False), "domain": (STR, False),
            "key_check": (KEY_CHECK, False)},
    "names": {"column": (STR, True), "part": (PART, False), "sex": (STR, False), "person": (STR, False),
              "locale": (STR, False), "weights": (WEIGHTS, False)},
    "dates_intervals": {"column": (STR, False), "columns": (COLUMNS, False), "group": (STR, False),
                        "birth": (STR, False), "death": (STR, False), "connected": (STR_MAP, False),
                        "anchor": (ANCHOR, False), "width": (WIDTH, False), "seed": (SEED, False)},
}
#: The keys of the policy file itself.
POLICY_KEYS = {"format", "version", "description", "steps", "columns", "default", "safe_harbor", "text"}


def check_step(step: Any, number: int) -> None:
    """Refuse a step (``number`` counts from 1) with an unknown op or key, a key of the wrong type, or a
    required key missing; the message names the step and the key."""
    if not isinstance(step, Mapping):
        raise DeidInputError(f"policy step {number}: must be a table with an op, got {step!r:.60}")
    op = step.get("op")
    if op not in STEPS:
        raise DeidInputError(f"policy step {number}: unknown op {op!r} (expected one of {', '.join(sorted(STEPS))})")
    schema = STEPS[op]
    where = f"policy step {number} ({op}" + (f" of {step['column']!r}" if isinstance(step.get("column"), str) else "") + ")"
    unknown = sorted(str(k) for k in step if k != "op" and k not in schema)
    if unknown:
        raise DeidInputError(f"{where}: unknown key {unknown[0]!r} (it takes {', '.join(schema)})")
    for key, (check, required) in schema.items():
        if key not in step:
            if required:
                raise DeidInputError(f"{where}: missing key {key!r}")
            continue
        if not check(step[key]):
            raise DeidInputError(f"{where}: {key} = {step[key]!r:.60} must be {_WHAT[check]}")
    if op == "dates_intervals" and ("column" in step) == ("columns" in step):
        raise DeidInputError(f"{where}: give exactly one of 'column' and 'columns'")


def check_policy(raw: Any) -> None:
    """Refuse a policy file that is not a ``deid_core.policy`` or has an unknown top-level key or bad step."""
    if not isinstance(raw, Mapping) or raw.get("format") != "deid_core.policy" or not isinstance(raw.get("steps"), list):
        raise DeidInputError("not a deid_core policy (expected format = 'deid_core.policy' and a list of steps)")
    unknown = sorted(str(k) for k in raw if k not in POLICY_KEYS)
    if unknown:
        raise DeidInputError(f"policy: unknown key {unknown[0]!r} (it takes {', '.join(sorted(POLICY_KEYS))})")
    if not _int(1)(raw.get("version", 1)) or not isinstance(raw.get("description", ""), str):
        raise DeidInputError("policy: version must be an integer >= 1 and description a string")
    if raw.get("safe_harbor") not in (None, True, False):
        raise DeidInputError("policy: safe_harbor must be true or false")
    for i, st in enumerate(raw["steps"], 1):
        check_step(st, i)
