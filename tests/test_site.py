"""The course site (make site): built from the notebooks' stored outputs, complete, offline."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from minibert.teaching import lessons

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("site_build", ROOT / "docs" / "site" / "build.py")
site_build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(site_build)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    seconds = site_build.build(out, sources=tmp_path_factory.mktemp("sources"))
    assert seconds < 120, f"the site took {seconds:.0f} s to build (at most 2 minutes)"
    return out


def test_every_page_image_and_link_is_there_and_nothing_comes_from_another_host(site):
    assert site_build.check(site) == []


def test_a_lesson_page_is_the_student_edition_with_its_outputs(site):
    page = (site / "notebooks" / "02_attention_math.html").read_text(encoding="utf-8")
    assert "BEGIN SOLUTION" not in page and "your code here" in page  # the stubs, no solutions
    assert "Download this notebook" in page
    assert '<a href="02_attention_math.ipynb" download>' in page
    downloaded = (site / "notebooks" / "02_attention_math.ipynb").read_text(encoding="utf-8")
    assert "your code here" in downloaded and "Download this notebook" not in downloaded
    assert page.count("<img") >= 5  # the stored figures
    assert "two heads get both neighbours right" in page  # a stored printed output


def test_the_explorer_shows_its_static_figure(site):
    page = (site / "notebooks" / "03_encoder.html").read_text(encoding="utf-8")
    cell = page[page.index("viz.explore(") :]
    assert re.search(r"<img [^>]*src=", cell[: cell.index("The controls are ordinary")])
    assert "widget-view" not in page and "require.min.js" not in page


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
