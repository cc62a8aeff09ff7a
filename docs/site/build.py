"""Build the course site: python docs/site/build.py [OUT]  (or `make site`; OUT defaults to _site/).

The pages: a front page from the README's course map, every notebook's student edition (its
stored outputs and the exercises without their solutions; nothing is executed), the teacher's
guide, the data page and an API reference generated from the package's docstrings. Sphinx with
myst-nb renders them (docs/site/conf.py); this script only gathers the sources into a build
folder, writes the front page and the API page, and copies MathJax into the site so that it
works from disk with no network.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "build" / "site-src"  # build/ is ignored by git
REPOSITORY = "the course repository"


def _front_page() -> str:
    """index.md: what the course is, how to start, the course map with its pages linked."""
    from minibert.teaching import lessons

    course_map = lessons.course_map(folder="notebooks/")
    return f"""# minibert: BERT from first principles

A course in {len(lessons.LESSONS)} Jupyter notebooks that builds BERT from its pieces (tokens,
attention, the encoder, masked language modelling, next sentence prediction, fine-tuning) on a
small, tested PyTorch package, `minibert`, with real Wikipedia text and real labelled reviews.
Every number and figure on these pages is a notebook's stored output, checked on every change.

These pages are the **student edition**: each exercise shows its task and its checker, without
the course's solution. To run the lessons yourself, clone the repository and follow its README
(two commands: `make lab`, or the commands without make); each page has a download link for its
notebook.

## The course map

{course_map}

## For teachers

- [The teacher's guide](teaching.md): the lessons in class, the exercises, common mistakes, the
  student edition and the graded assignments.
- [The data and the models](data.md): where the Wikipedia extract, the reviews and the MiniLM
  weights come from, and their licences.
- [The API reference](api.md): every public module, class and function of `minibert`.

```{{toctree}}
:hidden:
:maxdepth: 1
:caption: Lessons

{chr(10).join("notebooks/" + lesson.notebook for lesson in lessons.LESSONS)}
```

```{{toctree}}
:hidden:
:maxdepth: 1
:caption: Reference

teaching
data
api
```
"""


def _api_page() -> str:
    """api.md: one section per public module, its members from their docstrings."""
    modules = sorted(  # a package (minibert/recipes/__init__.py) under its own name
        ".".join(path.relative_to(ROOT).parent.parts if path.name == "__init__.py"
                 else path.relative_to(ROOT).with_suffix("").parts)
        for path in (ROOT / "minibert").rglob("*.py")
        if (path.name == "__init__.py" or not path.name.startswith("_"))
        and path != ROOT / "minibert" / "__init__.py" and "assignment_files" not in path.parts
    )  # fmt: skip
    parts = ["# API reference\n", "Every public module of `minibert`, from its docstrings.\n"]
    for module in modules:
        parts.append(f"## `{module}`\n\n```{{eval-rst}}\n.. automodule:: {module}\n```\n")
    return "\n".join(parts)


def _without_outside_links(text: str) -> str:
    """Links to files of the repository that are not pages become plain text (no dead links)."""
    pages = ("notebooks/", "teaching.md", "data.md", "api.md", "http://", "https://", "#")

    def keep(match: re.Match) -> str:
        label, target = match.group(1), match.group(2)
        if target.startswith(pages) or re.fullmatch(r"\d\d_\w+\.ipynb(#.*)?", target):
            return match.group(0)
        return f"{label} (in {REPOSITORY}: `{target.removeprefix('../')}`)"

    return re.sub(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)", keep, text)


def _as_page(path: Path) -> None:
    """A student-edition notebook made a page: a download link first, links kept inside the site."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    link = (
        f'<a href="{path.name}" download>Download this notebook</a> (the student edition: run it'
        " in JupyterLab after the course's set-up, see the README)"
    )  # the file is copied beside the page after the build
    notebook["cells"].insert(0, {
        "cell_type": "markdown", "id": "site-download", "metadata": {}, "source": [link],
    })  # fmt: skip
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            cell["source"] = _without_outside_links("".join(cell["source"]))
        for output in cell.get("outputs", []):  # a printed link to a lesson: its page
            for kind in ("text/markdown", "text/html"):
                if kind in output.get("data", {}):
                    text = "".join(output["data"][kind])
                    output["data"][kind] = re.sub(r"\b(\d\d_\w+)\.ipynb\b", r"\1.html", text)
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _gather(sources: Path) -> None:
    """Write every page's source into sources/."""
    from minibert.teaching import student_edition

    if sources.exists():
        shutil.rmtree(sources)
    (sources / "notebooks").mkdir(parents=True)
    student_edition.build(ROOT / "notebooks", sources / "student")  # what the downloads give
    for notebook in sorted((sources / "student").glob("*.ipynb")):
        shutil.copy(notebook, sources / "notebooks" / notebook.name)
        _as_page(sources / "notebooks" / notebook.name)
    guide = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    (sources / "teaching.md").write_text(_without_outside_links(guide), encoding="utf-8")
    data = (ROOT / "data" / "README.md").read_text(encoding="utf-8")
    (sources / "data.md").write_text(_without_outside_links(data), encoding="utf-8")
    (sources / "index.md").write_text(_front_page(), encoding="utf-8")
    (sources / "api.md").write_text(_api_page(), encoding="utf-8")


def _copy_mathjax(out: Path) -> None:
    """MathJax 2 from the jupyter-server-mathjax package, beside the pages (no CDN)."""
    import jupyter_server_mathjax

    static = Path(jupyter_server_mathjax.__file__).parent / "static"
    target = out / "_static" / "mathjax"  # where Sphinx's mathjax_path points
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(static, target, ignore=shutil.ignore_patterns("*.md"))
    # MathJax's HTML-CSS output declares a font that never loads, MathJax_Blank, as
    # url('about:blank'): from a page opened from disk Chromium refuses that request with a console
    # error. local() names a font that is not there either, with no request and no error.
    config = target / "config" / "TeX-AMS-MML_HTMLorMML-full.js"
    text = config.read_text(encoding="utf-8")
    blank = '"font-family":"MathJax_Blank",src:"url(\'about:blank\')"'
    if blank not in text:
        raise RuntimeError(f"{config} no longer declares MathJax_Blank as expected")
    text = text.replace(blank, blank.replace("url('about:blank')", "local('MathJax_Blank')"))
    # The hidden MathML kept for screen readers names MathJax's TeX web fonts (-WEB) as fallbacks
    # for script, calligraphic, fraktur and AMS letters; the package ships only STIX-Web, so each
    # would be a failed request: the system's fonts serve that invisible text instead.
    text, dropped = re.subn(r'(font-family":"MathJax_\w+), MathJax_[\w-]+-WEB"', r'\1"', text)
    if not dropped:
        raise RuntimeError(f"{config} no longer names MathJax's web fonts as expected")
    config.write_text(text)


def build(out: Path, sources: Path = SOURCES) -> float:
    """Build the site into out/; return the seconds it took."""
    start = time.perf_counter()
    _gather(sources)
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-c", str(ROOT / "docs" / "site"),
         "-d", str(sources.parent / "site-doctrees"), str(sources), str(out)],
        text=True, capture_output=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"sphinx-build failed:\n{done.stderr[-4000:]}")
    _copy_mathjax(out)
    for notebook in (sources / "student").glob("*.ipynb"):  # each page's download link
        shutil.copy(notebook, out / "notebooks" / notebook.name)
    (out / ".nojekyll").write_text("")  # GitHub Pages: serve _static/ as it is
    return time.perf_counter() - start


PAGES = ["index.html", "teaching.html", "data.html", "api.html", "search.html"]


class _Links(HTMLParser):
    """Every resource a page loads (src, stylesheet href) and every link it follows (a href)."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []
        self.follows: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag in ("img", "script", "iframe", "source", "embed", "audio", "video") and a.get("src"):
            self.loads.append(a["src"])
        elif tag == "link" and a.get("href"):
            self.loads.append(a["href"])
        elif tag == "a" and a.get("href"):
            self.follows.append(a["href"])


def check(out: Path) -> list[str]:
    """What is wrong with the built site in out/: missing pages, files, anchors; outside requests."""
    from minibert.teaching import lessons

    problems = []
    expected = PAGES + [f"notebooks/{Path(x.notebook).stem}.html" for x in lessons.LESSONS]
    problems += [f"missing page {page}" for page in expected if not (out / page).is_file()]
    parsed = {}
    for page in sorted(out.rglob("*.html")):
        links = _Links()
        links.feed(page.read_text(encoding="utf-8"))
        parsed[page.resolve()] = links
    for page, links in parsed.items():
        name = page.relative_to(out.resolve())
        for url in links.loads:
            if re.match(r"(https?:)?//", url):
                problems.append(f"{name} loads {url} from another host")
            elif url.startswith(("data:", "#")):
                continue  # inside the page
            elif not (page.parent / unquote(url.split("?")[0])).exists():
                problems.append(f"{name} loads a missing file {url}")
        for url in links.follows:
            if re.match(r"(https?:|mailto:)", url):
                continue  # a link to another site: followed only if the reader clicks it
            path, _, anchor = url.partition("#")
            target = (page.parent / unquote(path)).resolve() if path else page
            if not target.exists():
                problems.append(f"{name} links to a missing {url}")
            elif anchor and target.suffix == ".html" and anchor not in parsed[target].ids:
                problems.append(f"{name} links to a missing anchor {url}")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default=str(ROOT / "_site"), help="the site's folder")
    args = parser.parse_args()
    seconds = build(Path(args.out))
    problems = check(Path(args.out))
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        sys.exit(f"{len(problems)} problems in the site (above)")
    print(f"site built in {seconds:.0f} s: open {Path(args.out) / 'index.html'}")


if __name__ == "__main__":
    main()
