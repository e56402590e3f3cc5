"""Options and checks shared by the ``deid`` commands."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from ..detect import parse_accepted
from ..errors import DeidInputError

INPUT_HELP = "the table to de-identify (CSV or Parquet; at least one record)"
SPEC_HELP = "spec (TOML): column roles, hierarchies, release type and threshold"


def parse_levels(text: str | None) -> dict[str, int]:
    """``--levels name=level[,name=level...]``."""
    if not text:
        return {}
    out = {}
    for part in text.split(","):
        name, sep, lvl = part.rpartition("=")
        if not sep or not name or not lvl.strip().isdigit():
            raise DeidInputError(f"--levels: expected name=level[,name=level...], got {part!r}")
        out[name.strip()] = int(lvl)
    return out


def guard_outputs(inputs: Sequence[str | None], outputs: Sequence[str | None]) -> None:
    """Before anything is read or written: no output is one of the inputs (inputs are never modified),
    no two outputs name the same file, and every output's folder exists (so a command that writes
    several files never leaves some of them behind when a later one cannot be written)."""
    ins = {Path(p).resolve() for p in inputs if p}
    given = [Path(o).resolve() for o in outputs if o]
    for o in outputs:
        if o and Path(o).resolve() in ins:
            raise DeidInputError(f"output {o!r} would overwrite an input")
    if len(set(given)) < len(given):
        raise DeidInputError("two outputs name the same file")
    for o in outputs:
        if o and not Path(o).resolve().parent.is_dir():
            raise DeidInputError(f"cannot write {o!r}: folder does not exist")


def accepted_columns(args: argparse.Namespace, report: str | None) -> dict[str, str]:
    """``--accept-column NAME:REASON`` options of a command whose report file is ``report``."""
    return parse_accepted(getattr(args, "accept_column", None), report or None)


def add_input_spec(p: argparse.ArgumentParser, spec_note: str = "") -> None:
    """``--input`` and ``--spec``, required by every command that reads a table under a spec."""
    p.add_argument("--input", required=True, help=INPUT_HELP)
    p.add_argument("--spec", required=True, help=SPEC_HELP + spec_note)


def add_accept(p: argparse.ArgumentParser) -> None:
    """``--accept-column NAME:REASON`` (repeatable)."""
    p.add_argument("--accept-column", action="append", metavar="NAME:REASON",
                   help="release this column although it looks like an identifier; the reason goes into the report")
