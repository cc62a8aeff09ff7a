"""Slides from the lessons: which cell starts a slide, which is speaker notes, which is left out.

    minibert course slides OUT        # every lesson as a reveal.js deck that opens from disk
    minibert course slides --mark     # (re)mark the notebooks' cells with the rules below

RISE (in JupyterLab) and nbconvert's reveal.js export both read a cell's
``metadata.slideshow.slide_type``: ``slide`` starts a slide, ``subslide`` a screen below it,
``fragment`` appears on the next click, ``-`` goes on the screen above, ``notes`` becomes the
speaker's notes (press s) and ``skip`` is not shown. The lessons are marked by these rules,
stored in the notebooks, and a teacher may change any cell's type in JupyterLab's property
inspector (``--mark`` leaves a marked cell alone unless told ``--again``):

- the title cell and every ``##`` section starts a slide; a ``###`` heading starts a screen;
- the set-up cell (the first code cell, imports), the exercises' solutions and the written
  answers are skipped: a deck shown to a class gives no answers away;
- prose of more than ``NOTES_WORDS`` words without a heading is the speaker's notes: the lesson
  is still there for the person talking, the screen keeps the figures, the code and the headings;
- a cell that would not fit on the screen above (about ``SCREEN_LINES`` lines of 20-pixel text on
  reveal.js's 960 x 700 stage) starts a new screen; a figure that fits is a fragment (it appears
  on the next click, after the point it illustrates has been made);
- in a deck, a code cell of more than ``CODE_LINES`` lines shows its output only (the code is in
  the notebook; RISE, inside JupyterLab, shows it all).

A deck counts its screens (slides and sub-slides); ``MAX_SCREENS`` is what a 45-minute slot holds.
"""

from __future__ import annotations

import copy
import html
import json
import re
import shutil
import tempfile
from pathlib import Path

from minibert.teaching.student_edition import ANSWER, BEGIN, read_notebook
from minibert.utils import folder_problem, is_plain_name

TYPES = ("slide", "subslide", "fragment", "-", "notes", "skip")
NOTES_WORDS = 80  # prose longer than this (and with no heading) becomes the speaker's notes
SCREEN_LINES = 26  # lines of text a screen holds (20-pixel text on a 1280 x 800 stage)
CODE_LINES = 12  # a longer code cell shows only its output in a deck
FIGURE_LINES = 12  # the height of a figure, in lines of text
OUTPUT_LINES = 14  # a longer printed output scrolls within its screen
MAX_SCREENS = 30  # slides + sub-slides in one lesson's deck


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _heading(text: str) -> int:
    """The level of the markdown heading the cell opens with (0: none)."""
    match = re.match(r"(#{1,6})\s", text.lstrip())
    return len(match.group(1)) if match else 0


def _has_figure(cell: dict) -> bool:
    return any(
        "image/png" in o.get("data", {}) or "image/svg+xml" in o.get("data", {})
        for o in cell.get("outputs", [])
    )


def _output_lines(cell: dict) -> int:
    """About how many lines of text a code cell's outputs take on a screen (figures included)."""
    lines = 0
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if "image/png" in data or "image/svg+xml" in data:
            lines += FIGURE_LINES
        elif "text/html" in data:
            lines += min(OUTPUT_LINES, _source({"source": data["text/html"]}).count("<tr") + 1)
        elif "text/plain" in data or "text" in output:
            text = _source({"source": data.get("text/plain", output.get("text", ""))})
            lines += min(OUTPUT_LINES, text.count("\n") + 1)
    return lines


def height(cell: dict) -> int:
    """About how many lines of text a cell takes on a screen of the deck."""
    text = _source(cell)
    if cell["cell_type"] == "markdown":
        return sum(1 + len(line) // 90 for line in text.splitlines() if line.strip())
    code = text.count("\n") + 1
    return (code if code <= CODE_LINES else 0) + _output_lines(cell)


def slide_type(cell: dict) -> str | None:
    """The slide type stored in a cell's metadata (None: not marked)."""
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type")


def rule_types(notebook: dict) -> list[str]:
    """The slide type of every cell of notebook by the rules in the module's docstring."""
    types: list[str] = []
    used = 0  # lines of the current screen taken
    first_code = next((i for i, c in enumerate(notebook["cells"]) if c["cell_type"] == "code"), -1)
    for i, cell in enumerate(notebook["cells"]):
        text = _source(cell)
        words = len(text.split())
        if i == 0 or (cell["cell_type"] == "markdown" and _heading(text) in (1, 2)):
            kind = "slide"
        elif cell["cell_type"] == "markdown" and _heading(text) >= 3:
            kind = "subslide"
        elif i == first_code or BEGIN in text or text.lstrip().startswith(ANSWER):
            kind = "skip"
        elif cell["cell_type"] == "markdown" and words > NOTES_WORDS:
            kind = "notes"
        elif used and used + height(cell) > SCREEN_LINES:
            kind = "subslide"
        else:
            kind = "fragment" if _has_figure(cell) and used else "-"
        if kind in ("slide", "subslide"):
            used = 0
        if kind not in ("notes", "skip"):
            used += height(cell)
        types.append(kind)
    return types


def screens(notebook: dict) -> int:
    """How many screens (slides and sub-slides) the notebook's marked deck has."""
    return sum(slide_type(c) in ("slide", "subslide") for c in notebook["cells"])


def mark(path: str | Path, again: bool = False) -> int:
    """Write the rules' slide types into the notebook at path (cells already marked are kept
    unless again); return how many cells changed."""
    path = Path(path)
    notebook = read_notebook(path)
    changed = 0
    for cell, kind in zip(notebook["cells"], rule_types(notebook)):
        if slide_type(cell) is not None and not again:
            continue
        if slide_type(cell) != kind:
            cell.setdefault("metadata", {})["slideshow"] = {"slide_type": kind}
            changed += 1
    if changed:
        text = json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
        path.write_text(text, encoding="utf-8")
    return changed


# -- the decks ------------------------------------------------------------------------------------

WIDTH, HEIGHT = 1280, 800  # reveal.js's stage, scaled to the screen
MANIFEST = ".minibert-slides.json"  # the files a build wrote: a rebuild replaces these only
MATHJAX = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"
TEMPLATES = Path(__file__).resolve().parent / "slides_template"


def deck_notebook(notebook: dict) -> dict:
    """A copy of notebook as its deck shows it: long code cells' source hidden (their outputs
    stay), widgets' live views and state left out (their stored PNGs show)."""
    notebook = copy.deepcopy(notebook)
    notebook["metadata"].pop("widgets", None)
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        if _source(cell).count("\n") + 1 > CODE_LINES:
            cell["metadata"].setdefault("transient", {})["remove_source"] = True
        for output in cell.get("outputs", []):
            output.get("data", {}).pop("application/vnd.jupyter.widget-view+json", None)
    return notebook


def reveal_folder() -> Path:
    """reveal.js's files as the sphinx-revealjs package ships them (dist/, plugin/)."""
    try:
        import sphinx_revealjs
    except ImportError:
        raise RuntimeError(
            "the decks need reveal.js from the sphinx-revealjs package: pip install -e '.[site]'"
        ) from None
    folder = Path(sphinx_revealjs.__file__).parent / "_static" / "revealjs"
    if not (folder / "dist" / "reveal.js").is_file():
        raise RuntimeError(f"no reveal.js in {folder}: sphinx-revealjs changed its layout")
    return folder


def _old_files(out: Path) -> list[Path]:
    """The files an earlier build wrote in out/; a folder with other things and no build refused."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} is a file; give the folder to write the decks in")
    if problem := folder_problem(out):  # before any work
        raise ValueError(problem)
    if not out.exists() or not any(out.iterdir()):
        return []
    if not (out / MANIFEST).is_file():
        raise ValueError(
            f"{out} holds files and no decks built here (no {MANIFEST}); give a new or empty "
            "folder, or the folder of an earlier build"
        )
    manifest = out / MANIFEST
    try:
        files = json.loads(manifest.read_text(encoding="utf-8"))["files"]
    except (ValueError, KeyError, TypeError) as exc:  # bad JSON or UTF-8, no list of files
        raise ValueError(
            f"{manifest} is damaged ({type(exc).__name__}: {exc}); {_BY_HAND}"
        ) from None
    if not isinstance(files, list) or not all(
        is_plain_name(f) and f.endswith(".html") for f in files
    ):
        raise ValueError(
            f"{manifest} is damaged or not ours: a build lists only the .html pages it wrote "
            f"directly in {out}, and it lists {str(files)[:120]}; {_BY_HAND}"
        )
    return [out / name for name in files]


_BY_HAND = "nothing was removed: empty the folder by hand, or give a new one"


def build(notebooks: str | Path, out: str | Path) -> list[Path]:
    """Write one reveal.js deck per lesson (from its student edition) and an index into out/;
    return the decks' paths. Opens from disk with no network: reveal.js and MathJax are copied in.
    """
    import nbformat
    from nbconvert import SlidesExporter

    from minibert.teaching import lessons, offline, student_edition

    notebooks, out = Path(notebooks), Path(out)
    old = _old_files(out)
    reveal = reveal_folder()
    with tempfile.TemporaryDirectory(prefix="minibert-slides-") as tmp:
        student_edition.build(notebooks, Path(tmp) / "student")
        for path in old:
            path.unlink(missing_ok=True)
        for folder in ("reveal.js", "mathjax"):
            shutil.rmtree(out / folder, ignore_errors=True)
        out.mkdir(parents=True, exist_ok=True)
        exporter = SlidesExporter(
            template_name="minibert_reveal",
            extra_template_basedirs=[str(TEMPLATES)],
            reveal_url_prefix="reveal.js",
            reveal_theme="white",
            reveal_number="c/t",
            reveal_width=str(WIDTH),
            reveal_height=str(HEIGHT),
            mathjax_url=MATHJAX,
            exclude_input_prompt=True,
            exclude_output_prompt=True,
        )
        decks = []
        for lesson in lessons.LESSONS:
            source = Path(tmp) / "student" / lesson.notebook
            notebook = deck_notebook(json.loads(source.read_text(encoding="utf-8")))
            node = nbformat.reads(json.dumps(notebook), as_version=4)  # sources joined
            html, _ = exporter.from_notebook_node(
                node, resources={"metadata": {"name": f"{lesson.number} · {lesson.title}"}}
            )
            deck = out / f"{Path(lesson.notebook).stem}.html"
            deck.write_text(html, encoding="utf-8")
            decks.append(deck)
    shutil.copytree(reveal / "dist", out / "reveal.js" / "dist")
    shutil.copytree(reveal / "plugin" / "notes", out / "reveal.js" / "plugin" / "notes")
    offline.copy_mathjax(out / "mathjax")
    (out / "index.html").write_text(_index(decks), encoding="utf-8")
    files = [p.relative_to(out).as_posix() for p in decks] + ["index.html"]
    (out / MANIFEST).write_text(json.dumps({"files": files}, indent=0) + "\n")
    return decks


def _index(decks: list[Path]) -> str:
    """The decks' front page: one link per lesson, with its number of screens."""
    from minibert.teaching import lessons

    rows = "\n".join(
        f'<li><a href="{deck.name}">{html.escape(lesson.number)} · {html.escape(lesson.title)}</a></li>'
        for lesson, deck in zip(lessons.LESSONS, decks)
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>minibert: the lessons' slides</title></head>
<body style="font-family: sans-serif; max-width: 50em; margin: 2em auto">
<h1>minibert: the lessons' slides</h1>
<p>One reveal.js deck per lesson, made from its student edition (no solutions). Arrows or space
move on; <kbd>s</kbd> opens the speaker's view with the lesson's prose as notes; <kbd>Esc</kbd>
shows every screen. Everything is in this folder: it works with no network.</p>
<ul>
{rows}
</ul>
</body></html>
"""


def check(out: str | Path) -> list[str]:
    """What is wrong with the decks in out/: a lesson without a deck, a deck with too many screens,
    anything loaded from another host or missing."""
    from minibert.teaching import lessons, offline

    out = Path(out)
    problems = []
    for lesson in lessons.LESSONS:
        deck = out / f"{Path(lesson.notebook).stem}.html"
        if not deck.is_file():
            problems.append(f"no deck for {lesson.notebook}")
            continue
        text = deck.read_text(encoding="utf-8")
        links = offline.Links()
        links.feed(text)
        problems += offline.load_problems(deck, links, deck.name)
        count = deck_screens(text)
        if count > MAX_SCREENS:
            problems.append(f"{deck.name} has {count} screens (at most {MAX_SCREENS})")
    return problems


def deck_screens(page: str) -> int:
    """How many screens a deck's HTML holds: its <section>s that hold no other section."""
    leaves, inner = 0, [False]  # inner[-1]: whether the open section holds a section
    for closing in re.findall(r"<(/?)section\b", page):
        if not closing:
            inner[-1] = True
            inner.append(False)
        else:
            leaves += not inner.pop()
    return leaves
