"""The README is the front door: short, in a fixed order, and every fact in it true.

Its limits; the course map against minibert.teaching.lessons; each headline result against the
results page's section it links to (and so against the JSON the section is made from); the package
tour's calls against the package; the make targets and commands it names."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
LINES = README.splitlines()
RESULTS_PAGE = "_site/results.html"  # where `make site` writes the results page


def _results():
    if "site_results" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "site_results", ROOT / "docs" / "site" / "results.py"
        )
        sys.modules["site_results"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["site_results"])
    return sys.modules["site_results"]


def _section(title: str) -> list[str]:
    start = LINES.index(f"## {title}")
    end = next((i for i in range(start + 1, len(LINES)) if LINES[i].startswith("## ")), len(LINES))
    return LINES[start + 1 : end]


def test_the_readme_is_short_and_its_sections_in_a_fixed_order():
    assert len(LINES) <= 160, f"README.md has {len(LINES)} lines (at most 160)"
    headings = [line for line in LINES if line.startswith("## ")]
    assert headings == [
        "## Start: two commands",
        "## The course map",
        "## For teachers",
        "## The package in ten lines",
        "## What it has shown",
        "## Data and licences",
        "## How to cite",
    ]
    first = "\n".join(LINES[:40])
    assert re.search(r"^make lab +# ", first, flags=re.MULTILINE)
    assert re.search(r"^make test +# ", first, flags=re.MULTILINE)
    assert "](docs/install.md)" in "\n".join(_section("Start: two commands"))


def test_no_table_cell_is_over_300_characters():
    for number, line in enumerate(LINES, 1):
        if line.startswith("|"):
            for cell in line.strip("|").split("|"):
                assert len(cell.strip()) <= 300, f"README line {number}: a cell of {len(cell)}"


def test_the_course_map_is_one_line_a_lesson_with_the_lessons_minutes():
    """One row per lesson of minibert.teaching.lessons, in its order, with its notebook, title and
    measured minutes (a test in test_package keeps those equal to notebook_times.json)."""
    from minibert.teaching import lessons

    rows = [line for line in _section("The course map") if line.startswith("| [")]
    assert len(rows) == len(lessons.LESSONS)
    for row, lesson in zip(rows, lessons.LESSONS):
        link, teaches, minutes = (cell.strip() for cell in row.strip("|").split("|"))
        assert link == f"[{lesson.number} {lesson.title}](notebooks/{lesson.notebook})"
        assert minutes == f"{lesson.minutes:g}", f"{lesson.notebook}: {minutes} minutes"
        assert 20 <= len(teaches) <= 160, f"{lesson.notebook}: say what it teaches in one line"
        assert (ROOT / "notebooks" / lesson.notebook).exists()


NUMBER = re.compile(r"(?<![A-Za-z0-9_.])\d[\d,]*(?:\.\d+)?")


def _numbers(text: str) -> set[str]:
    return set(NUMBER.findall(re.sub(r"\]\([^)]*\)", "]", text)))  # not the links' targets


def test_each_headline_result_links_to_its_section_and_quotes_its_numbers():
    """At most 10 lines, one line each, each linking to a section of the results page; every
    number a line quotes is on that section, which is generated from the JSON file."""
    results = _results()
    rows = [line for line in _section("What it has shown") if line.startswith("- ")]
    assert 3 <= len(rows) <= 10
    by_anchor = {results.anchor(p.name): p.name for p in results.RESULTS.glob("*.json")}
    for row in rows:
        links = re.findall(r"\]\(([^)]+)\)", row)
        assert len(links) == 1 and links[0].startswith(f"{RESULTS_PAGE}#"), row
        anchor = links[0].partition("#")[2]
        assert anchor in by_anchor, f"{row[:60]}: no results file has the section #{anchor}"
        name = by_anchor[anchor]
        data = json.loads((results.RESULTS / name).read_text(encoding="utf-8"))
        section = results.section_text(name, data)
        quoted = _numbers(row) - _numbers(section)
        assert not quoted, f"{row[:60]}: {sorted(quoted)} not on the section made from {name}"


def test_the_package_in_ten_lines_calls_what_the_package_has():
    """Every mb.* call of the README's code resolves and takes the arguments it is given."""
    import minibert as mb

    (code,) = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)
    assert len(code.strip().splitlines()) <= 10
    calls = [node for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Call)]
    checked = 0
    for call in calls:
        path = []
        func = call.func
        while isinstance(func, ast.Attribute):
            path.insert(0, func.attr)
            func = func.value
        if not (isinstance(func, ast.Name) and func.id == "mb"):
            continue  # tok(...), model(...): instances, checked by their own tests
        target = mb
        for name in path:
            target = getattr(target, name)
        signature = inspect.signature(target)
        signature.bind(*range(len(call.args)), **{k.arg: None for k in call.keywords})
        checked += 1
    assert checked >= 8


def test_the_make_targets_and_commands_it_names_exist():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([a-z][\w-]*):", makefile, flags=re.MULTILINE))
    named = set(re.findall(r"`?make ([a-z][\w-]*)", README))
    assert named and named <= targets, named - targets
    for path in re.findall(r"(?:docs|data|notebooks|benchmarks)/[\w./-]+\.(?:md|py|ipynb)", README):
        assert (ROOT / path).exists(), f"the README names {path}, which is not there"
    assert (ROOT / "CHANGELOG.md").exists()
