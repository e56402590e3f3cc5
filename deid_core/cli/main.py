"""The ``deid`` command: its parser and ``main`` (docs/deid.md, docs/deid_search.md).

Bad input (unknown column, value missing from a hierarchy, malformed
population table, threshold outside (0, 1], unreadable file) -> exit code 2
and one line on stderr.
"""
from __future__ import annotations

import argparse
import warnings
from typing import Callable, Sequence

from common.cli import Expected, OneLineParser, UsageError, run
from ..errors import DeidInputError, ParameterError
from . import commands, geo, longitudinal, masking, pdf, search, subsample, text, text_evaluate, ui, utility
from .options import flagged

EXIT_BAD_INPUT = 2


def _os_error_line(error: BaseException) -> str:
    """An unreadable or undecodable file: its name and the reason, on one line."""
    msg = " ".join(str(getattr(error, "strerror", None) or error).split())
    return f"error: {getattr(error, 'filename', '') or ''} {msg}".replace("  ", " ").strip()


#: Bad input -> exit 2 with one line (a library error about parameters names their flags); out of memory -> exit 1.
EXPECTED = [Expected(ParameterError, EXIT_BAD_INPUT, lambda error: f"error: {flagged(error)}"),
            Expected((UsageError, DeidInputError), EXIT_BAD_INPUT),
            Expected((OSError, UnicodeDecodeError), EXIT_BAD_INPUT, _os_error_line),
            Expected(MemoryError, 1, lambda _: "error: out of memory")]

#: Subcommands added by other modules: name -> register(subparsers). ``register`` adds a parser whose
#: ``run(args) -> int`` default is the handler; raise :class:`DeidInputError` for bad input to get exit code 2.
EXTRA_COMMANDS: dict[str, Callable[[argparse._SubParsersAction], None]] = {"search": search.register,
                                                                          "longitudinal": longitudinal.register,
                                                                          "geo": geo.register,
                                                                          "reverse": masking.register,
                                                                          "subsample": subsample.register,
                                                                          "utility": utility.register,
                                                                          "ui": ui.register,
                                                                          "pdf": pdf.register,
                                                                          "text": text.register,
                                                                          "text-evaluate": text_evaluate.register}


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="deid", description="Measure re-identification risk and de-identify health data.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    commands.register(sub)
    for register in EXTRA_COMMANDS.values():
        register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return run(build_parser(), argv, EXPECTED)
