"""The ``deid`` command: its parser and ``main`` (docs/deid.md, docs/deid_search.md).

Bad input (unknown column, value missing from a hierarchy, malformed
population table, threshold outside (0, 1], unreadable file) -> exit code 2
and one line on stderr.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from typing import Callable, Sequence

from common.cli import HelpFormatter
from ..errors import DeidInputError
from . import commands, search

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints the whole usage)
        raise DeidInputError(f"{self.prog}: {message}")


#: Subcommands added by other modules: name -> register(subparsers). ``register`` adds a parser whose
#: ``func(args) -> int`` default is the handler; raise :class:`DeidInputError` for bad input to get exit code 2.
EXTRA_COMMANDS: dict[str, Callable[[argparse._SubParsersAction], None]] = {"search": search.register}


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="deid", description="Measure re-identification risk and de-identify health data.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    commands.register(sub)
    for register in EXTRA_COMMANDS.values():
        register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help
            return int(exc.code or 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return int(args.func(args))
    except DeidInputError as exc:
        print(f"deid: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (OSError, UnicodeDecodeError) as exc:
        msg = " ".join(str(getattr(exc, "strerror", None) or exc).split())
        print(f"deid: error: {getattr(exc, 'filename', '') or ''} {msg}".replace("  ", " ").strip(), file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError:
        print("deid: error: out of memory", file=sys.stderr)
        return 1
