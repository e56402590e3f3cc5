"""Command-line conventions shared by ``keyholder``, ``party`` and ``deid``.

One parser class (:class:`OneLineParser`: option help shows defaults; a usage error is one line
``prog: message``, exit status 2, no usage dump), one :class:`UsageError`, and one dispatch
(:func:`run`): each subcommand sets ``run`` (``set_defaults(run=handler)``), and the errors a command
expects become one line on stderr and an exit status.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import dataclass
from typing import Callable, NoReturn, Sequence

INTERRUPTED = 130           # exit status after Ctrl-C (128 + SIGINT), as shells report it


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Option help ends with the option's default (when it has one: the help itself never states it);
    descriptions keep their lines; reStructuredText's double backticks (docstrings reused as help) print
    as single ones."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = (action.help or "").replace("``", "`")
        if "%(default)" in text or action.required or action.default in (None, False, argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"

    def _format_text(self, text: str) -> str:
        return super()._format_text(text.replace("``", "`"))


class UsageError(Exception):
    """Bad input: reported as one line, exit status 2."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class OneLineParser(argparse.ArgumentParser):
    """An argument parser with :class:`HelpFormatter` whose errors raise :class:`UsageError`
    (``prog: message``) instead of printing the whole usage and exiting."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # argparse prints usage + message; we want one line
        raise UsageError(f"{self.prog}: {message}")


def _error_line(error: BaseException) -> str:
    return f"error: {error}"


@dataclass(frozen=True)
class Expected:
    """Errors of ``kinds`` end the command with ``status`` and the line ``prog: line(error)`` on stderr."""

    kinds: type[BaseException] | tuple[type[BaseException], ...]
    status: int = 2
    line: Callable[[BaseException], str] = _error_line


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None, expected: Sequence[Expected],
        setup: Callable[[argparse.Namespace], None] | None = None) -> int:
    """Parse ``argv``, call ``setup(args)`` then ``args.run(args)``; return its status.

    ``--help`` returns 0. The first rule of ``expected`` matching a raised error prints one line on
    stderr and gives the status; any other error propagates.
    """
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exit_:  # --help
            return int(exit_.code or 0)
        if setup is not None:
            setup(args)
        return int(args.run(args))
    except BaseException as error:
        for rule in expected:
            if isinstance(error, rule.kinds):
                print(f"{parser.prog}: {rule.line(error)}", file=sys.stderr)
                return rule.status
        raise


def exit_now(status: int) -> NoReturn:
    """End the process with ``status`` once its own cleanup has run: output flushed, logs closed, and
    no wait for threads still inside a call (a batch on a Dask scheduler that is gone, a call to a
    slow key holder), which would otherwise hold the interpreter's exit."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    logging.shutdown()
    os._exit(status)
