"""The ``party`` command: its parser, built from each command module's ``register``, and ``main``.

Exit status 0 on success; 2 with one line on stderr for bad input or a refusal (nothing is written);
1 when the key holder stays unreachable.
"""
from __future__ import annotations

import argparse
import logging
import sys
from typing import Callable

from common.cli import INTERRUPTED, Expected, OneLineParser, UsageError, exit_now, run
from common.distributed import ClusterLost, DaskUnavailable
from party_client.cli import demo, estimate, hold, identity, query, release, sessions
from party_client.errors import ParameterError, PartyError
from party_client.transport import KeyHolderUnavailable

DESCRIPTION = """``party`` command line: init, register, hold, join, dedup, lookup, link-release, dedup-many,
estimate, demo.

Exit status 0 on success; 2 with one line on stderr for bad input or a
refusal (nothing is written); 1 when the key holder stays unreachable.
"""

#: The command modules in the order ``party --help`` lists them: each ``register(subparsers)`` adds its
#: parsers, with ``run(args) -> int`` as the handler (raise :class:`UsageError` or :class:`PartyError`
#: for bad input: exit 2 with one line).
COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    identity.register, hold.register, query.register, release.register, estimate.register, sessions.register,
    demo.register)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="party", description=DESCRIPTION)
    parser.add_argument("--log-level", default="WARNING", help="DEBUG, INFO, WARNING or ERROR (to stderr)")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for register in COMMANDS:
        register(commands)
    return parser


def _log_to_stderr(args: argparse.Namespace) -> None:
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")


def _flagged(error: ParameterError) -> str:
    """The error with each parameter named by its flag: the ``deid`` command's map, the one place a
    parameter whose flag is spelled otherwise (``accepted``: ``--accept-column``) is mapped."""
    from deid_core.cli.options import flagged
    return flagged(error)


#: Exit 1 when the key holder (or the --dask scheduler) stays unreachable, 2 for bad input or a refusal,
#: 130 on Ctrl-C.
EXPECTED = [Expected(KeyHolderUnavailable, 1),
            Expected(ClusterLost, 1, lambda error: f"error: {error}" + (
                "; the round was not finished (the next `party hold` sends what the key holder is missing)"
                if error.in_round else "")),
            Expected(ParameterError, 2, lambda error: f"error: {_flagged(error)}"),
            Expected((UsageError, PartyError, DaskUnavailable), 2),
            Expected(OSError, 2, lambda error: f"error: cannot use {error.filename or 'a file'}: "
                                               f"{(error.strerror or type(error).__name__).lower()}"
                                               + (" (check its owner and permissions)"
                                                  if isinstance(error, PermissionError) else "")),
            Expected(KeyboardInterrupt, INTERRUPTED, lambda error: "; ".join(["interrupted", *filter(None, [str(error)])]))]


def main(argv: list[str] | None = None) -> int:
    status = run(build_parser(), argv, EXPECTED, setup=_log_to_stderr)
    if status == INTERRUPTED:   # every cleanup has run; a thread still in a call must not delay the exit
        exit_now(status)
    return status
