"""Every subcommand of the ``party``, ``deid`` and ``keyholder`` CLIs is listed with a description, every
option has help text and shows its default once (the formatter appends it; no help states it again) and no raw
double backticks print; ``keyholder audit`` has a header row and a JSON-lines form."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from deid_core.cli import build_parser as deid_parser
from keyholder.cli import build_parser as keyholder_parser
from linkhelpers import keyholder_cmd, make_party
from party_client.cli import build_parser as party_parser


def walk(parser: argparse.ArgumentParser, path: str):
    """(path, parser) for a parser and all its subcommands; checks each subcommand is described."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            described = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                assert described.get(name), f"{path} {name}: no one-line description"
                yield from walk(sub, f"{path} {name}")


@pytest.mark.parametrize("build, prog", [(party_parser, "party"), (deid_parser, "deid"),
                                         (keyholder_parser, "keyholder")])
def test_every_option_has_help_and_default(build, prog):
    for path, parser in walk(build(), prog):
        text = parser.format_help()
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            assert action.help and action.help.strip(), f"{path} {action.option_strings}: no help"
            if action.default not in (None, False) and not action.required:
                shown = f"(default: {action.default})"
                assert shown in " ".join(text.split()), f"{path} {action.option_strings}: default not shown"
                assert "default" not in action.help.replace("(default: %(default)s)", "").lower(), \
                    f"{path} {action.option_strings}: the help states the default the formatter appends"
        assert "``" not in text, f"{path}: raw double backticks"


def test_party_help_lists_every_command_and_explains_join_vs_dedup():
    top = party_parser().format_help()
    for name in ("init", "register", "hold", "join", "dedup", "lookup", "link-release", "dedup-many",
                 "estimate", "demo"):
        assert f"\n    {name} " in top, name
    subs = {name: sub for _, sub in [("", party_parser())] for action in sub._actions
            if isinstance(action, argparse._SubParsersAction) for name, sub in action.choices.items()}
    join, dedup = subs["join"].format_help(), subs["dedup"].format_help()
    assert join != dedup
    assert subs["join"].description != subs["dedup"].description
    assert "join or dedup?" in join and "join or dedup?" in dedup


def test_keyholder_audit_header_and_json(fresh_keyholder, tmp_path):
    server = fresh_keyholder()
    make_party(server, tmp_path, "alpha")
    make_party(server, tmp_path, "beta")
    table = subprocess.run(keyholder_cmd("audit", "--data-dir", str(server.data_dir)), capture_output=True,
                           text=True, check=True).stdout.splitlines()
    assert table[0].split("\t") == ["at", "party", "action", "session_id", "round", "count", "detail"]
    assert [line.split("\t")[1:3] for line in table[1:]] == [["alpha", "register"], ["beta", "register"]]
    lines = subprocess.run(keyholder_cmd("audit", "--data-dir", str(server.data_dir), "--json"),
                           capture_output=True, text=True, check=True).stdout.splitlines()
    rows = [json.loads(line) for line in lines]
    assert [(r["party"], r["action"]) for r in rows] == [("alpha", "register"), ("beta", "register")]
    assert set(rows[0]) == {"at", "party", "action", "session_id", "round", "count", "detail"}
    assert rows[0]["at"].endswith("+00:00")


def test_help_exits_zero_on_each_cli():
    for module in ("party_client.cli", "deid_core.cli", "keyholder.cli"):
        result = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True)
        assert result.returncode == 0 and "usage:" in result.stdout, module


@pytest.mark.parametrize("build, main, prog", [
    (party_parser, "party_client.cli", "party"), (deid_parser, "deid_core.cli", "deid"),
    (keyholder_parser, "keyholder.cli", "keyholder")])
def test_one_cli_convention(build, main, prog, capsys):
    """One parser class, dispatch by ``run``, and a usage error is one line ``prog: error: ...``, exit 2."""
    import importlib

    from common.cli import OneLineParser
    def leaves(parser, path, run):
        assert isinstance(parser, OneLineParser), path
        run = parser.get_default("run") or run
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            assert callable(run), f"{path}: no run handler"
        for action in subs:
            for name, sub in action.choices.items():
                leaves(sub, f"{path} {name}", run)
    leaves(build(), prog, None)
    status = importlib.import_module(main).main(["--no-such-option"])
    err = capsys.readouterr().err.splitlines()
    assert status == 2 and len(err) == 1 and err[0].startswith(f"{prog}: error: {prog}: "), err
    assert importlib.import_module(main).main(["--help"]) == 0
