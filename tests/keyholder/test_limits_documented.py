"""docs/operations.md's quotas table lists every limit ``keyholder serve`` takes, with its option."""
from __future__ import annotations

import argparse
from pathlib import Path

from keyholder.limits import add_limit_options

OPERATIONS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def test_every_limit_option_is_in_the_operations_table():
    parser = argparse.ArgumentParser()
    add_limit_options(parser)
    options = [o for action in parser._actions for o in action.option_strings if o.startswith("--") and o != "--help"]
    text = OPERATIONS.read_text()
    table = text[text.index("## Quotas and timeouts"):]
    table = table[:table.index("\n## ", 1)]
    rows = [line for line in table.splitlines() if line.startswith("|")]
    missing = [o for o in options if not any(f"`{o}`" in row or f"`{o} " in row for row in rows)]
    assert len(options) > 20 and not missing, missing
