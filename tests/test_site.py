"""The course site (make site): built from the notebooks' stored outputs, complete, offline."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import nbgrader_once

from minibert.teaching import lessons

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("site_build", ROOT / "docs" / "site" / "build.py")
site_build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(site_build)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("beside") / "site"
    with nbgrader_once():  # the student edition's nbgrader step: once for the slides' tests too
        seconds = site_build.build(out, sources=tmp_path_factory.mktemp("sources"))
    print(f"the site took {seconds:.0f} s to build")  # printed, never asserted: machines differ
    # nothing left beside the output folder (a jupyter_execute/ once stayed in the repository)
    assert [p.name for p in out.parent.iterdir()] == ["site"]
    return out


@pytest.mark.slow
def test_every_page_image_and_link_is_there_and_nothing_comes_from_another_host(site):
    assert site_build.check(site) == []


@pytest.mark.slow
def test_a_lesson_page_is_the_student_edition_with_its_outputs(site):
    page = (site / "notebooks" / "02_attention_math.html").read_text(encoding="utf-8")
    assert "BEGIN SOLUTION" not in page and "your code here" in page  # the stubs, no solutions
    assert "Download this notebook" in page
    assert '<a href="02_attention_math.ipynb" download>' in page
    downloaded = (site / "notebooks" / "02_attention_math.ipynb").read_text(encoding="utf-8")
    assert "your code here" in downloaded and "Download this notebook" not in downloaded
    assert page.count("<img") >= 5  # the stored figures
    assert "two heads get both neighbours right" in page  # a stored printed output


@pytest.mark.slow
def test_the_explorer_shows_its_static_figure(site):
    page = (site / "notebooks" / "03_encoder.html").read_text(encoding="utf-8")
    cell = page[page.index('<section id="the-explorer">') :]
    assert re.search(r"<img [^>]*src=", cell[: cell.index("The controls are ordinary")])
    assert "widget-view" not in page and "require.min.js" not in page


@pytest.mark.slow
def test_the_front_page_maps_every_lesson_and_the_api_page_every_module(site):
    index = (site / "index.html").read_text(encoding="utf-8")
    for lesson in lessons.LESSONS:
        assert f'href="notebooks/{Path(lesson.notebook).stem}.html"' in index
    api = (site / "api.html").read_text(encoding="utf-8")
    for path in (ROOT / "minibert").rglob("*.py"):
        if path.name.startswith("_") or "assignment_files" in path.parts:
            continue
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        assert f'id="module-{module}"' in api, f"{module} is missing from the API reference"
    assert 'id="minibert.training.train"' in api  # functions with their signatures


@pytest.mark.slow
def test_the_results_and_install_pages_are_built_and_the_readme_links_into_them(site):
    """Every results file has its section on results.html (an id the README's headline lines link
    to), its figures shown; install.html holds compat.json's table."""
    page = (site / "results.html").read_text(encoding="utf-8")
    results = site_build.results
    for path in sorted(results.RESULTS.glob("*.json")):
        assert f'id="{results.anchor(path.name)}"' in page, f"no section for {path.name}"
    for figure in results.RESULTS.glob("*.png"):
        assert f'src="_images/{figure.name}"' in page, f"{figure.name} not shown"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for anchor in re.findall(r"\(_site/results\.html#([\w-]+)\)", readme):
        assert f'id="{anchor}"' in page, f"the README links to a missing #{anchor}"
    install = (site / "install.html").read_text(encoding="utf-8")
    assert "<td><p>2.13.0+cu130</p></td>" in install or "<td>2.13.0+cu130</td>" in install


@pytest.mark.slow
def test_the_check_finds_what_is_broken(site, tmp_path):
    import shutil

    broken = tmp_path / "site"
    shutil.copytree(site, broken)
    page = broken / "teaching.html"
    text = page.read_text(encoding="utf-8")
    page.write_text(
        text.replace(
            "</body>",
            '<img src="gone.png"><script src="https://cdn.example/x.js">'
            '</script><a href="api.html#nowhere">x</a></body>',
        ),  # fmt: skip
        encoding="utf-8",
    )
    (broken / "data.html").unlink()
    problems = site_build.check(broken)
    assert "missing page data.html" in problems
    assert "teaching.html loads a missing file gone.png" in problems
    assert "teaching.html loads https://cdn.example/x.js from another host" in problems
    assert "teaching.html links to a missing anchor api.html#nowhere" in problems


# --- damaged notebooks and rebuilds ---------------------------------------------------------------


def _notebooks_with(tmp_path, name, text):
    """A notebooks folder: a real lesson and one notebook with the given text."""
    import shutil

    folder = tmp_path / "notebooks"
    folder.mkdir()
    shutil.copy(ROOT / "notebooks" / "02_attention_math.ipynb", folder)
    (folder / name).write_text(text, encoding="utf-8")
    return folder


def _unpaired_marker() -> str:
    cell = {"cell_type": "code", "execution_count": None, "id": "a", "metadata": {},
            "outputs": [], "source": ["def f():\n", "    ### BEGIN SOLUTION\n", "    return 1\n"]}  # fmt: skip
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


DAMAGED = {
    "truncated": (lambda: (ROOT / "notebooks" / "03_encoder.ipynb").read_text()[:3000],
                  "is damaged: it is not JSON"),
    "empty object": (lambda: "{}", "is not a notebook: it needs nbformat 4 and a list of cells"),
    "unpaired marker": (_unpaired_marker, "BEGIN and END SOLUTION markers are not paired"),
    "a cell without metadata": (
        lambda: json.dumps({"cells": [{"cell_type": "markdown", "source": "x"}], "metadata": {},
                            "nbformat": 4, "nbformat_minor": 5}),
        "is not a valid notebook: at cells/0",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(DAMAGED))
@pytest.mark.slow
def test_a_damaged_notebook_is_one_line_naming_it(tmp_path, case):
    text, cause = DAMAGED[case]
    notebooks = _notebooks_with(tmp_path, "09_damaged.ipynb", text())
    out = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "site" / "build.py"), str(out),
         "--notebooks", str(notebooks)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("site: error: ")
    assert str(notebooks / "09_damaged.ipynb") in lines[0] and cause in lines[0]
    assert not out.exists()  # refused before anything was built


def _site_like(folder, pages, manifest=True):
    for page in pages:
        (folder / page).parent.mkdir(parents=True, exist_ok=True)
        (folder / page).write_text(f"<html>{page}</html>")
    if manifest:
        (folder / site_build.MANIFEST).write_text(json.dumps({"files": pages}))


@pytest.mark.slow
def test_a_rebuild_leaves_no_stale_page_and_keeps_what_is_not_the_sites(tmp_path):
    out = tmp_path / "site"
    out.mkdir()
    _site_like(out, ["index.html", "notebooks/99_removed_lesson.html", "_static/old.css"])
    new = tmp_path / ".site.building"
    new.mkdir()
    _site_like(new, ["index.html", "notebooks/02_attention_math.html"])
    site_build._swap_in(new, out)
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == [site_build.MANIFEST, "index.html", "notebooks/02_attention_math.html"]
    assert not new.exists() and not (out / "_static").exists()
    # a file no build wrote (GitHub Pages' CNAME) stays, and only the old build's pages go
    (out / "CNAME").write_text("course.example.org\n")
    new.mkdir()
    _site_like(new, ["index.html", "api.html"])
    site_build._swap_in(new, out)
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == [site_build.MANIFEST, "CNAME", "api.html", "index.html"]
    assert not (out / "notebooks").exists()


def test_a_folder_holding_other_things_is_refused_before_building(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("my thesis")
    with pytest.raises(ValueError, match="holds files and no site built here"):
        site_build.build(out, sources=tmp_path / "sources")
    assert (out / "thesis.tex").read_text() == "my thesis" and not (tmp_path / "sources").exists()
    older = tmp_path / "older"  # a site of an earlier build.py (no manifest): all of it the site's
    older.mkdir()
    _site_like(older, [".buildinfo", ".nojekyll", "index.html", "stale.html"], manifest=False)
    assert site_build._site_files(older) == {".buildinfo", ".nojekyll", "index.html", "stale.html"}
