"""Help texts are clean: every command and subcommand of party, deid and keyholder states each default
once (the formatter appends "(default: …)" unless the help says it already) and prints no raw
reStructuredText double backticks."""
from __future__ import annotations

import argparse
import re

import pytest


def helps(parser: argparse.ArgumentParser, path: str):
    yield path, parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from helps(sub, f"{path} {name}")


@pytest.mark.parametrize("module", ["party_client.cli.main", "deid_core.cli.main", "keyholder.cli"])
def test_help_texts_say_each_default_once_and_no_double_backticks(module):
    import importlib
    parser = importlib.import_module(module).build_parser()
    for path, text in helps(parser, parser.prog):
        assert "``" not in text, path
        options = re.split(r"\n  (?=-)", text)
        twice = [o.split()[0] for o in options if len(re.findall(r"\(default", o)) > 1
                 or re.search(r"default[ :]+[^)]*\)[^(]*\(default:", o)]
        assert not twice, (path, twice)
