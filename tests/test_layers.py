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
    cycle = find_cycle({p: set(edges) for p, edges in package_graph().items()})
    assert cycle is None, " -> ".join(cycle)


# ---------------------------------------------------------------------------------------
# inside harness/: planning (config.py) at the bottom, the executors and the CLI above it; no
# module reaches into another's private (underscore) names

HARNESS = ROOT / "harness"


def harness_imports(path: Path) -> list[tuple[str, str | None]]:
    """``(module, name)`` for every import in ``path`` of a module of ``harness/`` (``name``: the
    name imported from it, None for ``import harness.x``), every import statement counted."""
    modules = {p.stem for p in HARNESS.glob("*.py")}
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "harness" and len(parts) > 1 and parts[1] in modules:
                    found.append((parts[1], None))
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                parts = node.module.split(".")
                if parts[0] != "harness":
                    continue
                parts = parts[1:]
            elif node.level == 1:           # from . import x / from .x import y, inside harness/
                parts = node.module.split(".") if node.module else []
            else:
                continue
            if parts and parts[0] in modules:
                found += [(parts[0], alias.name) for alias in node.names]
            elif not parts:                 # from harness import x: the module x
                found += [(alias.name, None) for alias in node.names if alias.name in modules]
    return found


def harness_graph() -> dict[str, set[str]]:
    """harness module -> the harness modules it imports."""
    return {path.stem: {m for m, _ in harness_imports(path)} - {path.stem}
            for path in sorted(HARNESS.glob("*.py"))}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (its nodes, the first repeated at the end), or None."""
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                path = path + [node]
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt, path + [node])
                if cycle:
                    return cycle
        state[node] = "closed"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node, [])
            if cycle:
                return cycle
    return None


def test_harness_imports_sees_every_form(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import harness.config\nfrom harness.executor import run_local, _mark_failed\n"
                      "def f():\n    from harness import tracking\n    from .locks import RunLock\n"
                      "    import core.results\n")
    assert sorted(harness_imports(source), key=str) == sorted(
        [("config", None), ("executor", "run_local"), ("executor", "_mark_failed"), ("tracking", None),
         ("locks", "RunLock")], key=str)
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_cycle_between_harness_modules():
    cycle = find_cycle(harness_graph())
    assert cycle is None, "harness modules import in a circle: " + " -> ".join(cycle)


def test_planning_imports_no_executor_and_no_tracking():
    """config.py plans: it stands below the executors, the trainer, the trackers and the commands."""
    above = {"executor", "ray_executor", "slurm_executor", "tracking", "train", "summary", "compare", "cli"}
    wrong = harness_graph()["config"] & above
    assert not wrong, f"harness/config.py imports {', '.join(sorted(wrong))}"


def test_no_harness_module_imports_another_modules_private_name():
    wrong = [f"{path.name} imports {name} from harness/{module}.py"
             for path in sorted(HARNESS.glob("*.py")) for module, name in harness_imports(path)
             if module != path.stem and name is not None and name.startswith("_")]
    assert not wrong, "\n".join(wrong)
