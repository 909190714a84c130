"""Imports point one way (docs/DESIGN.md, "Layout"): core at the bottom; algos and suites on
it, beside each other; analysis reads stored results; harness (planning, training, executors, the
CLI) on top. Every import statement counts, also those inside functions."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "algos", "suites", "analysis", "harness")
# What each package may import besides itself.
ALLOWED = {
    "core": set(),
    "algos": {"core"},
    "suites": {"core"},
    "analysis": {"core", "algos", "suites"},
    "harness": {"core", "algos", "suites", "analysis"},
}


def imported_packages(path: Path) -> set[str]:
    """The pg-arena packages ``path`` imports, from every import statement in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found |= {name.split(".")[0] for name in names} & set(PACKAGES)
    return found


def package_graph() -> dict[str, dict[str, list[str]]]:
    """package -> imported package -> the files that import it."""
    graph: dict[str, dict[str, list[str]]] = {p: {} for p in PACKAGES}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for other in imported_packages(path) - {package}:
                graph[package].setdefault(other, []).append(str(path.relative_to(ROOT)))
    return graph


def test_imported_packages_sees_imports_inside_functions(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import os\nfrom core.errors import ConfigError\n\ndef f():\n    import harness.train\n"
                      "    from analysis import load\n    from . import sibling\n")
    assert imported_packages(source) == {"core", "harness", "analysis"}


def test_imports_point_one_way():
    graph = package_graph()
    wrong = [f"{package} imports {other} ({', '.join(files)})"
             for package, edges in graph.items() for other, files in edges.items()
             if other not in ALLOWED[package]]
    assert not wrong, "\n".join(wrong)


def test_no_cycle_between_packages():
    graph = {p: set(edges) for p, edges in package_graph().items()}
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return path + [node, nxt]
            if nxt not in state:
                cycle = visit(nxt, path + [node])
                if cycle:
                    return cycle
        state[node] = "closed"
        return None

    for package in PACKAGES:
        if package not in state:
            cycle = visit(package, [])
            assert cycle is None, " -> ".join(cycle)
