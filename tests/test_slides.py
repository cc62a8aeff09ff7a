"""The lessons as slides: the cells' slide types (RISE and the decks read them), the decks (make
slides) built from the student edition, complete, offline and short enough for a lecture."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import nbgrader_once

from minibert.teaching import lessons, slides

ROOT = Path(__file__).resolve().parent.parent


def _md(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def _code(text: str, outputs: list | None = None) -> dict:
    return {"cell_type": "code", "metadata": {}, "source": text, "outputs": outputs or []}


FIGURE = {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/plain": "<Figure>"}}


def test_the_rules_give_each_kind_of_cell_its_slide_type():
    long_prose = " ".join(["word"] * (slides.NOTES_WORDS + 1))
    notebook = {"cells": [
        _md("# 06 · Fine-tuning\n\nwhat you will do"),
        _code("import torch\nimport minibert"),
        _md("## 1. The picture\n\nshort"),
        _code("plot()", [FIGURE]),  # after a little prose: appears on the next click
        _md(long_prose),  # the lecturer's notes
        _code("plot()", [FIGURE]),  # a second figure would not fit: a screen of its own
        _md("### A detail"),
        _code("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION"),
        _md("*Answer.* the course's answer"),
        _code("x = 1"),
    ]}  # fmt: skip
    assert slides.rule_types(notebook) == [
        "slide", "skip", "slide", "fragment", "notes", "subslide", "subslide", "skip", "skip", "-",
    ]  # fmt: skip


def test_a_cell_that_would_overflow_its_screen_starts_the_next():
    lines = "\n".join(f"line {i}" for i in range(slides.SCREEN_LINES - 3))
    printed = {"output_type": "stream", "name": "stdout", "text": lines}
    cells = [
        _md("# Title"),
        _code("import x"),
        _code("print(x)", [printed]),
        _code("print(y)", [printed]),
    ]
    assert slides.rule_types({"cells": cells}) == ["slide", "skip", "-", "subslide"]
    # a long code cell shows only its output in a deck, so only the output counts
    long_code = "\n".join(["x = 1"] * (slides.CODE_LINES + 1))
    assert slides.height(_code(long_code)) == 0
    assert slides.height(_code("x = 1")) == 1


def test_every_lesson_is_marked_and_fits_a_lecture():
    for lesson in lessons.LESSONS:
        notebook = json.loads((ROOT / "notebooks" / lesson.notebook).read_text(encoding="utf-8"))
        kinds = [slides.slide_type(cell) for cell in notebook["cells"]]
        unmarked = [i for i, kind in enumerate(kinds) if kind not in slides.TYPES]
        assert not unmarked, f"{lesson.notebook}: cells {unmarked} have no slide type (--mark)"
        assert kinds[0] == "slide"
        assert 5 <= slides.screens(notebook) <= slides.MAX_SCREENS, lesson.notebook
        for cell, kind in zip(notebook["cells"], kinds):  # no answer is projected
            source = "".join(cell["source"])
            if "### BEGIN SOLUTION" in source or source.startswith("*Answer.*"):
                assert kind == "skip", f"{lesson.notebook}: a solution shown: {source[:60]!r}"


def test_mark_keeps_a_teachers_choice_unless_told_again(tmp_path):
    path = tmp_path / "lesson.ipynb"
    notebook = {"cells": [_md("# T"), _md("## S")], "metadata": {}, "nbformat": 4}
    notebook["cells"][1]["metadata"]["slideshow"] = {"slide_type": "fragment"}
    path.write_text(json.dumps(notebook))
    assert slides.mark(path) == 1
    marked = json.loads(path.read_text())
    assert [slides.slide_type(c) for c in marked["cells"]] == ["slide", "fragment"]
    assert slides.mark(path) == 0
    assert slides.mark(path, again=True) == 1
    assert slides.slide_type(json.loads(path.read_text())["cells"][1]) == "slide"


def test_deck_screens_counts_the_innermost_sections():
    page = "<section><section>a</section><section>b</section></section><section>c</section>"
    assert slides.deck_screens(page) == 3
    assert slides.deck_screens("<p>no slides</p>") == 0


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    out = tmp_path_factory.mktemp("slides")
    with nbgrader_once():  # the student edition's nbgrader step: once per input in the session
        slides.build(ROOT / "notebooks", out)
    return out


def test_every_lesson_has_a_deck_that_loads_nothing_from_another_host(decks):
    assert slides.check(decks) == []
    assert (decks / "reveal.js" / "dist" / "reveal.js").is_file()
    assert (decks / "reveal.js" / "plugin" / "notes" / "notes.js").is_file()
    assert (decks / "mathjax" / "MathJax.js").is_file()
    index = (decks / "index.html").read_text(encoding="utf-8")
    for lesson in lessons.LESSONS:
        assert f'href="{Path(lesson.notebook).stem}.html"' in index


def test_a_deck_is_its_lessons_marked_student_edition(decks):
    for lesson in lessons.LESSONS:
        page = (decks / f"{Path(lesson.notebook).stem}.html").read_text(encoding="utf-8")
        notebook = json.loads((ROOT / "notebooks" / lesson.notebook).read_text(encoding="utf-8"))
        assert slides.deck_screens(page) == slides.screens(notebook), lesson.notebook
        assert "BEGIN SOLUTION" not in page and "*Answer.*" not in page
        assert "require.js" not in page and "jquery" not in page.lower()
    page = (decks / "02_attention_math.html").read_text(encoding="utf-8")
    assert page.count("<img") >= 5 and '<aside class="notes">' in page
    assert "widget-view" not in (decks / "03_encoder.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_rebuild_replaces_the_decks_and_a_folder_of_other_things_is_refused(decks, tmp_path):
    (decks / "CNAME").write_text("slides.example.org")  # not the build's: kept
    with nbgrader_once():
        slides.build(ROOT / "notebooks", decks)
    assert slides.check(decks) == [] and (decks / "CNAME").exists()
    (tmp_path / "README.md").write_text("a teacher's notes")
    done = subprocess.run(
        [sys.executable, "-m", "minibert", "course", "slides", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 1 and "no decks built here" in done.stderr
    assert (tmp_path / "README.md").read_text() == "a teacher's notes"


def test_rise_is_in_the_course_set_up():
    import jupyterlab_rise  # noqa: F401  (the course extra installs it)

    course = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"jupyterlab-rise' in course.split("teach = [")[0]


@pytest.mark.parametrize(
    "files", [["../victim4/keep.txt"], ["/etc/hostname.html"], 5, ["notes.md"], "BAD JSON"]
)
def test_a_slides_manifest_naming_other_files_is_refused_before_anything_goes(tmp_path, files):
    """`.minibert-slides.json` listing ../victim4/keep.txt, then `course slides OUT`: deleted it;
    `files` of 5 was a TypeError."""
    victim = tmp_path / "victim4"
    victim.mkdir()
    (victim / "keep.txt").write_text("the user's\n", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.md").write_text("a teacher's notes\n", encoding="utf-8")
    text = "{" if files == "BAD JSON" else json.dumps({"files": files})
    (out / slides.MANIFEST).write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="damaged"):
        slides.build(ROOT / "notebooks", out)
    assert (victim / "keep.txt").is_file() and (out / "notes.md").is_file()


@pytest.mark.slow
def test_mark_reads_every_notebook_before_changing_one(tmp_path):
    """--mark with a damaged notebook: JSONDecodeError, after earlier notebooks were rewritten."""
    import shutil

    copy = tmp_path / "notebooks"
    copy.mkdir()
    for lesson in lessons.LESSONS:
        shutil.copyfile(ROOT / "notebooks" / lesson.notebook, copy / lesson.notebook)
    first = copy / lessons.LESSONS[0].notebook
    notebook = json.loads(first.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        cell["metadata"].pop("slideshow", None)  # a --mark would write these again
    first.write_text(json.dumps(notebook), encoding="utf-8")
    before = first.read_bytes()
    (copy / lessons.LESSONS[-1].notebook).write_text('{"cells": [', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "minibert", "course", "slides", "--mark", "--notebooks", str(copy)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 1 and "no notebook was marked" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and first.read_bytes() == before
