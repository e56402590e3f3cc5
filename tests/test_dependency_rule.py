"""The packages' dependency rule: keyholder and party_client share only proto/ and common/;
party_client may use deid_core; deid_core, common and proto import none of the others."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("proto", "common", "keyholder", "party_client", "deid_core")
ALLOWED = {
    "proto": set(),
    "common": set(),
    "keyholder": {"proto", "common"},
    "party_client": {"proto", "common", "deid_core"},
    "deid_core": {"common"},
}


def imported_packages(package: str) -> dict[str, set[str]]:
    """Project packages each module of ``package`` imports (absolute imports; relative ones stay inside)."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        found[str(path.relative_to(ROOT))] = {n for n in names if n in PACKAGES and n != package}
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_imports_only_what_the_rule_allows(package):
    offending = {module: used - ALLOWED[package] for module, used in imported_packages(package).items()
                 if used - ALLOWED[package]}
    assert not offending, f"{package} may import only {sorted(ALLOWED[package])}: {offending}"


def test_the_package_graph_has_no_cycle():
    graph = {p: set().union(*imported_packages(p).values()) for p in PACKAGES}
    done: set[str] = set()

    def visit(node: str, path: tuple[str, ...]) -> None:
        assert node not in path, f"import cycle: {' -> '.join(path + (node,))}"
        if node not in done:
            for nxt in graph[node]:
                visit(nxt, path + (node,))
            done.add(node)
    for package in PACKAGES:
        visit(package, ())
