"""Options and checks shared by the ``deid`` commands."""
from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Callable, Sequence

from common.parameters import NamedParameters

from ..detect import parse_accepted
from ..errors import DeidInputError

INPUT_HELP = "the table to de-identify (CSV or Parquet; at least one record)"
SPEC_HELP = "spec (TOML): column roles, hierarchies, release type and threshold"


#: The flag of each library parameter that a command line spells otherwise than ``--`` and its name with dashes
#: (``max_suppression`` -> ``--max-suppression``): the one place a library error's parameters become flags.
FLAGS = {"key": "--key-file", "accepted": "--accept-column", "formulas": "--regress", "apply_best": "--out"}


def flag(parameter: str) -> str:
    """The command-line flag of a library ``parameter``."""
    return FLAGS.get(parameter, "--" + parameter.replace("_", "-"))


def flagged(error: NamedParameters) -> str:
    """A library error about parameters (:class:`deid_core.errors.ParameterError`, or the party client's)
    with each parameter named by the flag a user types: the command line's one-line message."""
    return error.template.format(**{name: flag(name) for name in error.names})


#: The largest seed: numpy's and pandas' generators take seeds below 2^32.
MAX_SEED = 2 ** 32 - 1


def integer(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer in [lo, hi], else one line saying what is expected (no traceback later)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < lo or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(f"must be an integer {'>= ' + str(lo) if hi is None else f'from {lo} to {hi}'}"
                                             f", got {text!r}")
        return value
    return parse


def number(lo: float, hi: float, lo_open: bool = False, hi_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number in the interval between lo and hi (open at an end when asked)."""
    shown = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and (value > lo if lo_open else value >= lo)
                and (value < hi if hi_open else value <= hi)):
            raise argparse.ArgumentTypeError(f"{text} is outside {shown}" if math.isfinite(value)
                                             else f"expected a number in {shown}, got {text!r}")
        return value
    return parse


SEED = integer(0, MAX_SEED)
AT_LEAST_1 = integer(1)
AT_LEAST_0 = integer(0)
PROBABILITY = number(0, 1, lo_open=True)
SHARE = number(0, 1)


#: Above this share of a column's cells or of the records removed, a command warns; above
#: :data:`REFUSE_SHARE` it refuses without ``--force`` (docs/deid.md, "No silent destruction").
WARN_SHARE, REFUSE_SHARE = 0.05, 0.50


def add_force(p: argparse.ArgumentParser, help: str | None = None) -> None:
    """``--force``: release even when more than half of a column's cells or of the records would go."""
    p.add_argument("--force", action="store_true",
                   help=help or f"write the output even when it suppresses or removes more than {REFUSE_SHARE * 100:g} "
                                "%% of a column's cells or of the records (refused otherwise)")


def destruction_check(command: str, what: str, removed: int, total: int, force: bool) -> str | None:
    """The warning line when ``removed`` of ``total`` (``what``: "codes of 'dx'", "records") is above
    :data:`WARN_SHARE` (None at or below it); refused above :data:`REFUSE_SHARE` unless ``force``."""
    share = removed / total if total else 0.0
    if share <= WARN_SHARE:
        return None
    said = f"deid {command} {{}} {removed:,} of {total:,} {what} ({share:.1%})"
    if share > REFUSE_SHARE and not force:
        raise DeidInputError(said.format("would suppress or remove") + f", more than {REFUSE_SHARE:.0%}: nothing "
                             "written (pass --force to write it anyway)")
    return said.format("suppressed or removed") + f", more than {WARN_SHARE:.0%}"


def summary_line(command: str, written: Sequence[str | None], figures: str) -> None:
    """The one line every ``deid`` command prints on success (stdout): the files written, the key figures."""
    files = " and ".join(str(w) for w in written if w) or "nothing written"
    print(f"deid {command}: {files}: {figures}")


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
