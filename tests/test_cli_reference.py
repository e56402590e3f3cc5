"""docs/cli_reference.md is generated from the three programs' argparse parsers (every command's help,
as ``--help`` prints it) and must match them.

Regenerate it after adding or changing a command or an option::

    python tests/test_cli_reference.py --write
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "cli_reference.md"
WIDTH = "100"                   # argparse wraps help to $COLUMNS: fixed, so the page is the same everywhere

INTRO = """# Command reference

Every command of `keyholder`, `party` and `deid` with all its options and their defaults, exactly as
`--help` prints them (this page is generated from the parsers by
`python tests/test_cli_reference.py --write` and checked by the same test). What the commands read and
write, their exit status and retries: [Command line](cli.md).
"""


def _parsers():
    from deid_core.cli.main import build_parser as deid
    from keyholder.cli import build_parser as keyholder
    from party_client.cli.main import build_parser as party
    return [keyholder(), party(), deid()]


def _commands(parser: argparse.ArgumentParser, summary: str = ""):
    """(parser, its one-line summary) and each subcommand's, depth first, in the order they were added."""
    yield parser, summary or _first_sentence(parser.description or "")
    for action in parser._actions:          # noqa: SLF001 - argparse has no public walk of subcommands
        if isinstance(action, argparse._SubParsersAction):     # noqa: SLF001
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}   # noqa: SLF001
            seen = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:                         # aliases name the same parser
                    seen.add(id(sub))
                    yield from _commands(sub, helps.get(name, ""))


def _first_sentence(text: str) -> str:
    words = " ".join(text.strip().split("\n\n")[0].split())
    return words.split(". ")[0].rstrip(".") + "." if words else ""


def reference() -> str:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        glance, sections = [], []
        for program in _parsers():
            for command, summary in _commands(program):
                anchor = command.prog.replace(" ", "-")
                summary = summary.replace("``", "`").replace("|", "\\|")
                glance.append(f"| [`{command.prog}`](#{anchor}) | {summary} |")
                sections.append(f"## {command.prog}\n\n```text\n{command.format_help().rstrip()}\n```\n")
        return "\n".join([INTRO, "| command | what it does |\n|---|---|", *glance, "", *sections])
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def test_the_command_reference_is_current():
    assert PAGE.read_text(encoding="utf-8") == reference(), \
        "docs/cli_reference.md is stale: run `python tests/test_cli_reference.py --write`"


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))            # the packages, not tests/'s folders of the same names
    if sys.argv[1:] == ["--write"]:
        PAGE.write_text(reference(), encoding="utf-8")
    else:
        sys.exit("usage: python tests/test_cli_reference.py --write")
