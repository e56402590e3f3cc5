"""The packages' dependency rule: keyholder and party_client share only proto/ and common/;
party_client may use deid_core; deid_core, common and proto import none of the others; and no
module imports itself back through other modules of the project (through the imports outside its
functions: those run at import time, and those under ``if TYPE_CHECKING:``, which a circle hides behind)."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator

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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def outside_functions(tree: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a module outside its function bodies: what runs when it is imported, and what sits
    under ``if TYPE_CHECKING:`` (not run, but a circle all the same that a type checker follows)."""
    for child in ast.iter_child_nodes(tree):
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield child
            yield from outside_functions(child)


def project_module_imports() -> dict[str, set[str]]:
    """Per project module, the project modules it imports outside its functions (:func:`outside_functions`;
    ``from a.b import c`` counts ``a.b.c`` when that is a module, else ``a.b``; importing a package runs
    its ``__init__``)."""
    modules = {_module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found: set[str] = set()
        for node in outside_functions(tree):        # imports inside functions run later
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
        targets = set()
        for target in found:
            parts = target.split(".")
            for end in range(1, len(parts) + 1):     # a.b.c imports the packages a and a.b first
                prefix = ".".join(parts[:end])
                if prefix in modules and prefix != name:
                    targets.add(prefix)
        graph[name] = targets
    return graph


def test_no_module_import_cycle():
    graph = project_module_imports()
    assert "party_client.protocol.holder" in graph and "party_client.matching.term_rules" in graph
    state: dict[str, int] = {}                       # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            # a package's __init__ importing its own submodules is how packages re-export: not a cycle
            if nxt.startswith(node + "."):
                continue
            assert state.get(nxt) != 1, f"import cycle: {' -> '.join(path[path.index(nxt):] + [node, nxt])}"
            if nxt not in state:
                visit(nxt, path + [node])
        state[node] = 2
    for module in sorted(graph):
        if module not in state:
            visit(module, [])


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


def test_deid_core_modules_import_each_other_without_cycles():
    assert_acyclic(module_imports("deid_core", deferred=False), "import-time")
    assert_acyclic(module_imports("deid_core"), "module")


def test_deid_core_subpackages_are_layered():
    """risk, metric, transform, algorithm, cli and the top-level modules form an acyclic graph."""
    def unit(module: str) -> str:
        return ".".join(module.split(".")[:2])
    graph: dict[str, set[str]] = {}
    for src, deps in module_imports("deid_core").items():
        graph.setdefault(unit(src), set()).update(unit(d) for d in deps if unit(d) != unit(src))
    assert {"deid_core.risk", "deid_core.metric", "deid_core.transform", "deid_core.algorithm",
            "deid_core.cli"} <= set(graph)
    assert_acyclic(graph, "package")
