"""What a contributor carries alone: a clone holds every rule it is held to (CONTRIBUTING.md), the
package tour has a short line for every module, tests share helpers through conftest.py, and the
slow tests are marked but still run by the test command."""

from __future__ import annotations

import ast
import re
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_TOUR = ROOT / "docs" / "package.md"


def _tour_rows() -> list[tuple[int, list[str]]]:
    lines = PACKAGE_TOUR.read_text(encoding="utf-8").splitlines()
    return [
        (number, [cell.strip() for cell in line.strip().strip("|").split("|")])
        for number, line in enumerate(lines, 1)
        if line.startswith("| `minibert/")
    ]


def test_no_cell_of_the_package_tour_is_over_300_characters():
    long = [
        f"docs/package.md line {number}: {cells[0]} has a cell of {len(cell)} characters"
        for number, cells in _tour_rows()
        for cell in cells
        if len(cell) > 300
    ]
    assert not long, "say it in one line; the rest belongs in the docstrings:\n" + "\n".join(long)


def test_the_package_tour_has_a_line_for_every_module_and_folder():
    named = " ".join(cells[0] for _, cells in _tour_rows())
    package = ROOT / "minibert"
    parts = [
        *(p for p in package.glob("*.py") if not p.name.startswith("__")),
        *(p for p in package.iterdir() if p.is_dir() and not p.name.startswith(("__", "."))),
        *(p for p in (package / "teaching").glob("*.py") if not p.name.startswith("__")),
    ]
    missing = sorted(
        str(p.relative_to(ROOT)) for p in parts if p.suffix in (".py", "") and p.name not in named
    )
    missing = [m for m in missing if not m.endswith(".egg-info")]
    assert not missing, f"docs/package.md has no line for {missing}"


# a clone has no folder beside the repository: no file may send a reader to one
OUTSIDE = re.compile(
    r"\.\./shared|\bshared/(?:CONVENTIONS|DESIGN|ANCHORS)|\b(?:CONVENTIONS|DESIGN|ANCHORS)\.md\b"
)
CHECKED = [".ci", "tests", "docs", "minibert", "benchmarks", "notebooks", "data"]


def test_nothing_cites_a_file_outside_the_repository():
    files = [
        ROOT / "Makefile",
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "pyproject.toml",
    ]
    for folder in CHECKED:
        files += [
            p
            for p in (ROOT / folder).rglob("*")
            if p.is_file()
            and p.suffix in ("", ".py", ".md", ".cfg", ".ipynb", ".toml", ".yml", ".txt")
            and "cache" not in p.parts
        ]
    cited = [
        f"{p.relative_to(ROOT)}: {match.group(0)}"
        for p in files
        if p != Path(__file__).resolve()
        for match in OUTSIDE.finditer(p.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not cited, "point at CONTRIBUTING.md instead:\n" + "\n".join(cited)


def test_contributing_says_how_to_set_up_test_format_and_commit_outputs():
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    for said in ("make test", "make lint", "make format", "KERNEL=other", "nbval", "conftest.py"):
        assert said in text, f"CONTRIBUTING.md does not say {said!r}"
    assert "## How the package is layered" in text


def test_no_test_module_imports_another():
    """Shared helpers and fixtures live in conftest.py; a test module (or a script the tests run)
    that imports another test module runs that module's import-time work and ties the two."""
    modules = {p.stem for p in (ROOT / "tests").glob("test_*.py")}
    found = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            found += [f"{path.name} imports {n}" for n in names if n.split(".")[-1] in modules]
    assert not found, found


def test_the_slow_marker_is_registered_and_the_test_command_still_runs_it():
    pytest_options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "pytest"
    ]["ini_options"]
    assert any(m.startswith("slow:") for m in pytest_options["markers"])
    assert "not slow" not in pytest_options.get("addopts", "")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "pytest tests" in recipe, recipe
    assert not re.search(r"pytest tests[^;\n]* -m ", recipe), "make test deselects by marker"
    marked = sum(
        "@pytest.mark.slow" in p.read_text(encoding="utf-8")
        for p in (ROOT / "tests").glob("test_*.py")
    )
    assert marked >= 10, f"only {marked} test modules mark a test slow"
