"""Build the course site: python docs/site/build.py [OUT]  (or `make site`; OUT defaults to _site/).

The pages: a front page from the README's course map, every notebook's student edition (its
stored outputs and the exercises without their solutions; nothing is executed), the teacher's
guide, the install page (its table of tested Pythons from benchmarks/results/compat.json), the
results page (generated from benchmarks/results/*.json by docs/site/results.py), the package's
guide, the data page and an API reference generated from the package's docstrings. Sphinx with
myst-nb renders them (docs/site/conf.py); this script only gathers the sources into a build
folder, writes the front page and the API page, and copies MathJax into the site so that it
works from disk with no network.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[2]


def _module(name: str, path: Path):
    """A module of this folder or of benchmarks/, which are scripts rather than a package."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


results = _module("site_results", Path(__file__).resolve().parent / "results.py")
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

## Reference

- [Installing the course](install.md): the tested Pythons and torch builds, CPU or CUDA, conda,
  Windows, Colab or a shared server.
- [Measured results](results.md): every benchmark of the course, generated from its results.
- [The package and its commands](package.md): the modules, the recipes and the command line.
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

install
results
package
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


COMPAT_TABLE = "<!-- the compat table: generated from benchmarks/results/compat.json -->"


def _install_page(recorded: Path = results.RESULTS / "compat.json") -> str:
    """install.md: docs/install.md with the table of tested Pythons made from compat.json."""
    compat = _module("benchmarks_compat", ROOT / "benchmarks" / "compat.py")
    text = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    if COMPAT_TABLE not in text:
        raise ValueError(f"docs/install.md lost its marker for the compat table: {COMPAT_TABLE}")
    table = compat.table(json.loads(recorded.read_text(encoding="utf-8")))
    return _without_outside_links(text.replace(COMPAT_TABLE, table))


def _without_outside_links(text: str) -> str:
    """Links to files of the repository that are not pages become plain text (no dead links)."""
    pages = ("notebooks/", "teaching.md", "data.md", "api.md", "install.md", "results.md",
             "package.md", "http://", "https://", "#")  # fmt: skip

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


def check_notebook(path: Path) -> None:
    """Raise a one-line ValueError naming a notebook that is not one: not JSON, not nbformat 4's
    schema, or with unpaired ``### BEGIN SOLUTION`` / ``### END SOLUTION`` markers."""
    import nbformat

    from minibert.teaching import student_edition

    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise ValueError(f"{path} is damaged: it is not JSON ({exc})") from None
    if (
        not isinstance(notebook, dict)
        or notebook.get("nbformat") != 4
        or not isinstance(notebook.get("cells"), list)
        or not all(isinstance(cell, dict) for cell in notebook["cells"])
    ):
        raise ValueError(f"{path} is not a notebook: it needs nbformat 4 and a list of cells")
    try:
        with warnings.catch_warnings():  # a missing cell id is repaired, not refused
            warnings.simplefilter("ignore")
            nbformat.validate(notebook)
    except nbformat.ValidationError as exc:
        where = "/".join(map(str, getattr(exc, "absolute_path", []))) or "the top level"
        raise ValueError(f"{path} is not a valid notebook: at {where}, {exc.message}") from None
    student_edition.check_markers(notebook, str(path))


def _gather(sources: Path, notebooks: Path) -> None:
    """Write every page's source into sources/."""
    from minibert.teaching import student_edition

    if sources.exists():
        shutil.rmtree(sources)
    (sources / "notebooks").mkdir(parents=True)
    student_edition.build(notebooks, sources / "student")  # what the downloads give
    for notebook in sorted((sources / "student").glob("*.ipynb")):
        shutil.copy(notebook, sources / "notebooks" / notebook.name)
        _as_page(sources / "notebooks" / notebook.name)
    guide = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    (sources / "teaching.md").write_text(_without_outside_links(guide), encoding="utf-8")
    data = (ROOT / "data" / "README.md").read_text(encoding="utf-8")
    (sources / "data.md").write_text(_without_outside_links(data), encoding="utf-8")
    (sources / "index.md").write_text(_front_page(), encoding="utf-8")
    (sources / "install.md").write_text(_install_page(), encoding="utf-8")
    package = (ROOT / "docs" / "package.md").read_text(encoding="utf-8")
    (sources / "package.md").write_text(_without_outside_links(package), encoding="utf-8")
    results.write(sources)
    (sources / "api.md").write_text(_api_page(), encoding="utf-8")


def build(out: Path, sources: Path = SOURCES, notebooks: Path = ROOT / "notebooks") -> float:
    """Build the site into out/; return the seconds it took.

    The site is built in a new folder beside out/ and then takes its place, so no page of an
    older build is left behind; files in out/ that no build wrote (a CNAME) are kept. A folder
    that holds other things and no site is refused before anything is built."""
    from minibert.teaching import offline

    start = time.perf_counter()
    _check_target(out)
    for notebook in sorted(notebooks.glob("*.ipynb")):
        check_notebook(notebook)
    _gather(sources, notebooks)
    out.parent.mkdir(parents=True, exist_ok=True)
    # Sphinx builds into work/site; myst-nb writes its jupyter_execute/ beside the output folder,
    # so into work/ too, which goes at the end: nothing is left beside out/
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".building", dir=out.parent))
    new = work / "site"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-c", str(ROOT / "docs" / "site"),
             "-d", str(sources.parent / "site-doctrees"), str(sources), str(new)],
            text=True, capture_output=True,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"sphinx-build failed:\n{done.stderr[-4000:]}")
        offline.copy_mathjax(new / "_static" / "mathjax")  # where Sphinx's mathjax_path points
        for notebook in (sources / "student").glob("*.ipynb"):  # each page's download link
            shutil.copy(notebook, new / "notebooks" / notebook.name)
        (new / ".nojekyll").write_text("")  # GitHub Pages: serve _static/ as it is
        files = sorted(str(p.relative_to(new)) for p in new.rglob("*") if not p.is_dir())
        (new / MANIFEST).write_text(json.dumps({"files": files}, indent=0) + "\n")
        _swap_in(new, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the site is gone from it when the swap succeeded
    return time.perf_counter() - start


MANIFEST = ".minibert-site.json"  # the files a build wrote: a rebuild replaces these only


def _site_files(out: Path) -> set[str] | None:
    """The files of out/ that a build wrote, or None when out/ holds no site built here."""
    if (out / MANIFEST).is_file():
        try:
            files = json.loads((out / MANIFEST).read_text(encoding="utf-8"))["files"]
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            raise ValueError(f"{out / MANIFEST} is damaged; delete {out} and build again") from None
        return {*map(str, files), MANIFEST}
    if (out / ".buildinfo").is_file() and (out / ".nojekyll").is_file():  # an older build's
        return {str(p.relative_to(out)) for p in out.rglob("*") if not p.is_dir()}
    return None


def _check_target(out: Path) -> None:
    """Refuse a target that is a file, or a folder with things in it and no site built here."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} is a file; give the folder to build the site in")
    if out.is_dir() and any(out.iterdir()) and _site_files(out) is None:
        raise ValueError(
            f"{out} holds files and no site built here (no {MANIFEST}); give a new or empty "
            "folder, or the folder of an earlier build"
        )


def _swap_in(new: Path, out: Path) -> None:
    """Put the built site new/ in out/'s place: the files an older build wrote go, others stay.

    With nothing else in out/, the two folders are swapped by renames; otherwise the old build's
    files are deleted and the new ones moved in beside the files that are not the site's."""
    _check_target(out)
    site = (_site_files(out) if out.is_dir() else None) or set()
    kept = [p for p in out.rglob("*") if not p.is_dir() and str(p.relative_to(out)) not in site]
    clash = [p for p in kept if (new / p.relative_to(out)).exists()]
    if clash:
        raise ValueError(f"{clash[0]} is not the site's, and the new site has a file of that name")
    if not kept:  # out/ is an older build, empty, or not there
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
        if out.exists():
            out.rename(old / "site")
        try:
            new.rename(out)
        except OSError:
            if (old / "site").exists():  # put the older build back
                (old / "site").rename(out)
            raise
        finally:
            shutil.rmtree(old, ignore_errors=True)
        return
    for name in sorted(site, key=lambda name: -name.count("/")):
        (out / name).unlink(missing_ok=True)
        for folder in (out / name).parents:
            if folder == out or any(folder.iterdir()):
                break
            folder.rmdir()
    for path in sorted(new.rglob("*")):
        if not path.is_dir():
            (out / path.relative_to(new)).parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, out / path.relative_to(new))


PAGES = ["index.html", "install.html", "results.html", "package.html", "teaching.html",
         "data.html", "api.html", "search.html"]  # fmt: skip


def check(out: Path) -> list[str]:
    """What is wrong with the built site in out/: missing pages, files, anchors; outside requests."""
    from minibert.teaching import lessons, offline

    problems = []
    expected = PAGES + [f"notebooks/{Path(x.notebook).stem}.html" for x in lessons.LESSONS]
    problems += [f"missing page {page}" for page in expected if not (out / page).is_file()]
    parsed = {}
    for page in sorted(out.rglob("*.html")):
        links = offline.Links()
        links.feed(page.read_text(encoding="utf-8"))
        parsed[page.resolve()] = links
    for page, links in parsed.items():
        name = page.relative_to(out.resolve())
        problems += offline.load_problems(page, links, str(name))
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
    parser.add_argument(
        "--notebooks", default=str(ROOT / "notebooks"), help="the course notebooks to publish"
    )
    args = parser.parse_args()
    try:
        seconds = build(Path(args.out), notebooks=Path(args.notebooks))
    except (ValueError, OSError, RuntimeError) as exc:  # a damaged notebook, a folder that is
        sys.exit(f"site: error: {exc}")  # not the site's; sphinx or nbgrader failed (their lines)
    problems = check(Path(args.out))
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        sys.exit(f"{len(problems)} problems in the site (above)")
    print(f"site built in {seconds:.0f} s: open {Path(args.out) / 'index.html'}")


if __name__ == "__main__":
    main()
