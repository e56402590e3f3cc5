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


def module_imports(package: str, deferred: bool = True) -> dict[str, set[str]]:
    """Modules of ``package`` -> the modules of ``package`` they import (relative imports resolved; a name
    imported from a package counts as its submodule when there is one, else as the package's ``__init__``).
    ``deferred=False`` keeps only the imports run at import time (not those inside functions)."""
    paths = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        base = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: set[str] = set()

        def visit(node: ast.AST) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and not deferred:
                    continue
                if isinstance(child, ast.Import):
                    deps.update(a.name for a in child.names if a.name in paths)
                elif isinstance(child, ast.ImportFrom):
                    if child.level:
                        up = base.split(".")[:len(base.split(".")) - child.level + 1]
                        target = ".".join(up + ([child.module] if child.module else []))
                    else:
                        target = child.module or ""
                    for alias in child.names:
                        sub = f"{target}.{alias.name}"
                        deps.add(sub if sub in paths else target)
                else:
                    visit(child)
        visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        graph[name] = {d for d in deps if d in paths and d != name}
    return graph


def assert_acyclic(graph: dict[str, set[str]], what: str) -> None:
    done: set[str] = set()

    def visit(node: str, path: tuple[str, ...]) -> None:
        assert node not in path, f"{what} import cycle: {' -> '.join(path + (node,))}"
        if node not in done:
            for nxt in sorted(graph[node]):
                visit(nxt, path + (node,))
            done.add(node)
    for node in sorted(graph):
        visit(node, ())


#: Deferred imports (inside a function) that close a cycle on purpose: HierarchySpec.portable reads a CSV
#: hierarchy to embed it in a saved policy.
ALLOWED_DEFERRED = {("deid_core.spec", "deid_core.hierarchy")}


def test_deid_core_modules_import_each_other_without_cycles():
    assert_acyclic(module_imports("deid_core", deferred=False), "import-time")
    graph = module_imports("deid_core")
    for src, dst in ALLOWED_DEFERRED:
        graph[src].discard(dst)
    assert_acyclic(graph, "module")


def test_deid_core_subpackages_are_layered():
    """risk, metric, transform, algorithm, cli and the top-level modules form an acyclic graph."""
    def unit(module: str) -> str:
        return ".".join(module.split(".")[:2])
    graph: dict[str, set[str]] = {}
    for src, deps in module_imports("deid_core").items():
        graph.setdefault(unit(src), set()).update(unit(d) for d in deps if unit(d) != unit(src)
                                                  and (src, d) not in ALLOWED_DEFERRED)
    assert {"deid_core.risk", "deid_core.metric", "deid_core.transform", "deid_core.algorithm",
            "deid_core.cli"} <= set(graph)
    assert_acyclic(graph, "package")
