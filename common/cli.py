"""Command-line conventions shared by ``keyholder``, ``party`` and ``deid``."""
from __future__ import annotations

import argparse


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Option help ends with the option's default (when it has one); descriptions keep their lines."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "%(default)" in text or action.required or action.default in (None, False, argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"
