"""docs/modules.md is generated from the modules' own docstrings and must match the tree.

Regenerate it after adding, moving or re-documenting a module::

    python tests/test_module_map.py --write
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAP = ROOT / "docs" / "modules.md"
PACKAGES = ("common", "keyholder", "party_client", "deid_core", "proto")
GENERATED = {"proto/linkage_pb2.py", "proto/linkage_pb2_grpc.py"}
WIDTH = 200

INTRO = """# Module map

One line per module: what it holds (the first paragraph of its docstring; this page is generated
by `python tests/test_module_map.py --write` and checked by the same test). Packages mirror the
field: `common/` is what the key holder and the parties share (they share nothing else but
`proto/`), `party_client/` links, `deid_core/` de-identifies (it imports only `common/`).
`tests/test_dependency_rule.py` enforces the direction and the absence of import cycles; the tests
mirror the packages (`tests/common/`, `tests/keyholder/`, `tests/party_client/`, `tests/deid_core/`,
and `tests/e2e/` for whole-product runs).
"""


def summary(path: Path) -> str:
    """The first paragraph of a module's docstring on one line, cut at a word near ``WIDTH``."""
    relative = path.relative_to(ROOT).as_posix()
    if relative in GENERATED:
        return "generated protobuf/gRPC stubs"
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not doc:
        return ""
    text = " ".join(doc.strip().split("\n\n")[0].split()).replace("|", "\\|")
    if len(text) > WIDTH:
        text = text[:WIDTH].rsplit(" ", 1)[0] + " …"
    return text


def module_map() -> str:
    """The whole page, one table per package."""
    parts = [INTRO]
    for package in PACKAGES:
        rows = [f"| `{path.relative_to(ROOT).as_posix()}` | {summary(path)} |"
                for path in sorted((ROOT / package).rglob("*.py")) if "__pycache__" not in path.parts]
        parts.append(f"## `{package}/`\n\n| module | holds |\n|---|---|\n" + "\n".join(rows) + "\n")
    return "\n".join(parts)


def test_every_module_says_what_it_holds():
    missing = [line for line in module_map().splitlines() if line.endswith("|  |")]
    assert not missing, f"modules without a docstring: {missing}"


def test_the_module_map_is_current():
    assert MAP.read_text(encoding="utf-8") == module_map(), \
        "docs/modules.md is stale: run `python tests/test_module_map.py --write`"


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        MAP.write_text(module_map(), encoding="utf-8")
    else:
        sys.exit("usage: python tests/test_module_map.py --write")
