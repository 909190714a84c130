"""The design document the code cites is in the repository, at the path the code gives, with the
sections the code names: a citation such as ``docs/DESIGN.md, "Layout"`` must lead somewhere in a
clone, not to a file that only its authors' machines have."""
from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "DESIGN.md"
SUFFIXES = (".py", ".md", ".sh")
SKIP_DIRS = {"results", "runs", "build", "__pycache__"}   # run outputs and build products, not the code
# a path ending in DESIGN.md, and the sections named in quotes right after it: `DESIGN.md, "Layout"`
CITATION = re.compile(r"([\w./-]*)DESIGN\.md((?:\s*(?:,|and|or)\s*\"[^\"\n]+\")*)")
SECTION = re.compile(r"\"([^\"\n]+)\"")
# the founders' working notes live outside the repository; nothing in it may point there
OUTSIDE = ("shared/DESIGN.md",)
# nor to the folder of published figures kept beside it: a citation names the figure's public source
# (the paper's table, CleanRL's docs) and, where the project holds the numbers, their copy in the repository
OUTSIDE_ANY = OUTSIDE + ("shared/reference", "../shared")
# reports rendered from the code's strings (analysis/reference.py): re-rendered, not edited by hand
GENERATED = ("docs/paper_mujoco", "docs/report_example")


def repo_files() -> list[Path]:
    """Every .py, .md and .sh file of the working tree, but virtual environments, git's folder,
    caches (any hidden folder) and run outputs."""
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS and not d.endswith(".egg-info")]
        found += [Path(folder) / f for f in files if f.endswith(SUFFIXES)]
    return sorted(found)


def citations(text: str) -> list[tuple[int, str, list[str]]]:
    """``(line, cited path, [sections])`` for each mention of DESIGN.md in ``text``."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1) + "DESIGN.md", SECTION.findall(m.group(2)))
            for m in CITATION.finditer(text)]


def headings(path: Path) -> set[str]:
    return {line.lstrip("#").strip() for line in path.read_text().splitlines() if re.match(r"#{1,6}\s", line)}


def resolves_to_doc(source: Path, cited: str) -> bool:
    """The cited path, from the repository root (or, for a Markdown link, from the citing file's
    folder), is the design document in this repository."""
    bases = [ROOT] + ([source.parent] if source.suffix == ".md" else [])
    return any((base / cited).resolve() == DOC.resolve() for base in bases)


def test_the_design_document_is_in_the_repository():
    assert DOC.is_file(), "docs/DESIGN.md is missing"
    assert {"The one idea", "Layout", "Stacking", "Results", "How compare decides"} <= headings(DOC)


def test_every_citation_names_the_document_and_its_sections():
    sections = headings(DOC) if DOC.is_file() else set()
    cited_by, wrong = [], []
    for path in repo_files():
        if path in (Path(__file__).resolve(), DOC):
            continue
        text = path.read_text(errors="replace")
        if "DESIGN.md" not in text:
            continue
        where = path.relative_to(ROOT)
        for line, cited, named in citations(text):
            cited_by.append(str(where))
            if not resolves_to_doc(path, cited):
                wrong.append(f"{where}:{line}: cites {cited!r}, which is not docs/DESIGN.md of this repository")
            wrong += [f"{where}:{line}: cites section {name!r}, not a heading of docs/DESIGN.md"
                      for name in named if name not in sections]
    assert not wrong, "\n".join(wrong)
    # the code's own pointers are among the citations checked (the pattern finds them)
    assert {"core/__init__.py", "suites/base.py", "tests/test_layers.py", "README.md"} <= set(cited_by)


def test_nothing_points_outside_the_repository_for_the_design():
    wrong = [f"{path.relative_to(ROOT)} refers to {needle}" for path in repo_files()
             if path != Path(__file__).resolve()
             for needle in OUTSIDE if needle in path.read_text(errors="replace")]
    assert not wrong, "\n".join(wrong)


def test_nothing_points_outside_the_repository():
    """No .py, .md or .sh file (nor the Atari tables' headers) names the folder beside the repository
    (``../shared``, its ``shared/reference`` of published figures, ``shared/DESIGN.md``): a clone has
    none of it."""
    generated = [ROOT / g for g in GENERATED]
    checked = [path for path in repo_files()
               if path != Path(__file__).resolve() and not any(path.is_relative_to(g) for g in generated)]
    checked += [ROOT / "suites/data/atari49.csv"]  # its header cites
    wrong = [f"{path.relative_to(ROOT)}:{n}: refers to {needle}"
             for path in checked
             for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
             for needle in OUTSIDE_ANY if needle in line]
    assert not wrong, "\n".join(wrong)
    # the code that cites the published figures is among the files checked
    assert {ROOT / f for f in ("analysis/reference.py", "suites/mujoco.py", "docs/BENCHMARKS.md",
                                "bench/atari_learning.sh")} <= set(checked)


def test_citations_are_found_with_their_sections():
    text = ('"""Imports point one way (docs/DESIGN.md, "Layout"): core ..."""\n'
            '# see DESIGN.md, "The one idea" and "Stacking"\n'
            "[the design](docs/DESIGN.md)\n")
    assert citations(text) == [(1, "docs/DESIGN.md", ["Layout"]),
                                       (2, "DESIGN.md", ["The one idea", "Stacking"]),
                                       (3, "docs/DESIGN.md", [])]
