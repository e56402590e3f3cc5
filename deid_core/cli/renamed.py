"""One vocabulary for outputs, and the old spellings kept for one release.

Every ``deid`` command names its outputs alike (docs/cli.md, "Outputs"): ``--out`` the main artifact (a
table, a PDF, a folder), ``--report`` the JSON about the run, ``--html`` the page.  Commands that spelled
them otherwise still accept the old flags until the next release, each with a one-line notice on stderr
saying the new one: ``deid assess --output`` (now ``--out``) and ``--out REPORT.json`` (now ``--report``),
``deid search --out RESULT.json`` (``--report``) and ``--apply-best`` (``--out``), and the JSON ``--out`` of
``deid attack``, ``geoproxy`` and ``utility`` (``--report``).

A ``--out`` ending in ``.json`` where ``--out`` now names a table is read as the old report spelling: a
table is never written as JSON, so the reading is never ambiguous and an old script keeps its report.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Sequence

from common.cli import UsageError

#: Until when an old spelling is accepted (its notice says so).
UNTIL = "the next release"


@dataclass(frozen=True)
class Renamed:
    """A flag's old spelling ``old`` now spelled ``new`` (whose argparse dest is ``dest``)."""

    old: str
    new: str
    dest: str

    @property
    def old_dest(self) -> str:
        return "old_" + self.old.lstrip("-").replace("-", "_")


def add_old_spellings(parser: argparse.ArgumentParser, renamed: Sequence[Renamed],
                      json_out_is_report: bool = False) -> None:
    """Accept each old spelling (hidden from ``--help``); :func:`take_old_spellings` maps it when the command
    runs.  ``json_out_is_report``: ``--out`` now names a table, and a ``--out`` ending in ``.json`` is the
    old spelling of ``--report``."""
    for name in renamed:
        parser.add_argument(name.old, dest=name.old_dest, help=argparse.SUPPRESS)
    parser.set_defaults(renamed=tuple(renamed), json_out_is_report=json_out_is_report)


def take_old_spellings(args: argparse.Namespace, command: str, required: Sequence[str] = ()) -> None:
    """Move each old spelling's value to its new flag (a notice on stderr each); refuse both spellings at
    once, and a flag of ``required`` (dests) given in neither spelling, in one line."""
    said = []
    if getattr(args, "json_out_is_report", False) and str(args.out or "").lower().endswith(".json"):
        if args.report:
            raise UsageError(f"deid {command}: --out names the table written (CSV or .parquet), not JSON; the "
                             "report is --report")
        args.report, args.out = args.out, None
        said.append("--out REPORT.json is now --report (--out names the table written)")
    for name in getattr(args, "renamed", ()):
        value = getattr(args, name.old_dest)
        if value is None:
            continue
        if getattr(args, name.dest) is not None:
            raise UsageError(f"deid {command}: give {name.new}, not both {name.new} and {name.old}")
        setattr(args, name.dest, value)
        said.append(f"{name.old} is now {name.new}")
    for notice in said:
        print(f"deid {command}: notice: {notice}; the old spelling is accepted until {UNTIL}", file=sys.stderr)
    missing = [dest for dest in required if getattr(args, dest) is None]
    if missing:
        raise UsageError(f"deid {command}: the following arguments are required: "
                         + ", ".join("--" + dest.replace("_", "-") for dest in missing))
