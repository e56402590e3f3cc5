"""The names the ``--preset`` options need before any matching machinery is imported: the presets, the
roles a ``--map`` may name, the default match threshold and precision target, and the parsing of
``--map`` (the levels, weights and blocking passes of each role are in :mod:`party_client.matching.presets`)."""
from __future__ import annotations

from party_client.errors import PartyError

DATE_ROLES = ("birth_year", "birth_month", "birth_day")
TEXT_ROLES = ("first", "last", "sex", "postcode", "id", "street_number", "address", "city", "state")
ROLES = TEXT_ROLES + ("dob",) + DATE_ROLES
PRESETS = ("person", "person-typo")
DEFAULT_THRESHOLD = 12.0
# ``--precision`` given without a value: the target from which the threshold is derived
# (party_client.matching.precision).  Not the default: measured against 12 bits on the benchmarks' sets it
# lowered F1 on two of them (benchmarks/README.md, "A threshold from a precision target").
DEFAULT_PRECISION = 0.99


def parse_map(text: str) -> dict[str, str]:
    """``first=COL,last=COL,...`` -> {role: column}; unknown roles and a half-split date are refused."""
    mapping: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        role, sep, column = item.partition("=")
        role = role.strip()
        if not sep or not column.strip():
            raise PartyError(f"--map item '{item}' must be ROLE=COLUMN")
        if role not in ROLES:
            raise PartyError(f"--map role '{role}' unknown (use {', '.join(ROLES)})")
        if role in mapping:
            raise PartyError(f"--map names role '{role}' twice")
        mapping[role] = column.strip()
    split = [r for r in DATE_ROLES if r in mapping]
    if split and len(split) != 3:
        raise PartyError("a date of birth in parts needs birth_year, birth_month and birth_day")
    if split and "dob" in mapping:
        raise PartyError("map dob or birth_year/birth_month/birth_day, not both")
    if len({r for r in mapping if r not in DATE_ROLES} | ({"dob"} if split else set())) < 2:
        raise PartyError("--preset person needs at least two of first, last, dob, sex, postcode, id, ...")
    return mapping
