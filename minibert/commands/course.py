"""``minibert course``: JupyterLab on the course notebooks, their student edition, or their slide
decks (the teaching kit's ``lessons``, ``student_edition`` and ``slides``)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``minibert course`` command's arguments."""
    parser.description = (
        "minibert course: JupyterLab on the notebooks. minibert course student-edition OUT: the "
        "notebooks without the exercises' solutions (needs nbgrader: pip install "
        "'minibert[teach]'). minibert course slides OUT: one reveal.js deck per lesson that opens "
        "from disk with no network (needs pip install 'minibert[site]'); minibert course slides "
        "--mark: write the slide rules' types into the notebooks' cells (RISE reads them too)."
    )
    add = parser.add_argument
    actions = ["open", "student-edition", "slides"]
    add("action", nargs="?", default="open", choices=actions, help="what to do")
    add("out", nargs="?", default=None, help="student-edition, slides: the folder to write")
    add("--overwrite", action="store_true", help="student-edition: replace notebooks in OUT")
    add("--mark", action="store_true", help="slides: mark unmarked cells with the slide rules")
    add("--again", action="store_true", help="slides --mark: mark every cell again")
    add("--notebooks", default="notebooks", help="the notebooks folder")
    add("--port", type=int, default=None, help="port for JupyterLab")
    add("--no-browser", action="store_true", help="do not open a browser")


def run(args: argparse.Namespace) -> int:
    """Open the notebooks in JupyterLab, or write their student edition; the exit code."""
    notebooks = Path(args.notebooks)
    if not notebooks.is_dir():
        return _error(f"no notebooks folder at {notebooks}; run from the course checkout", 1)
    if args.action == "student-edition":
        return _student_edition(notebooks, args)
    if args.action == "slides":
        return _slides(notebooks, args)
    if args.out is not None:
        return _error(f"unexpected argument {args.out!r}", 2)
    command = [sys.executable, "-m", "jupyter", "lab", f"--notebook-dir={notebooks}"]
    if args.no_browser:
        command.append("--no-browser")
    if args.port:
        command.append(f"--port={args.port}")
    return subprocess.call(command)


def _error(message: str, code: int, command: str = "minibert course") -> int:
    print(f"{command}: error: {message}", file=sys.stderr)
    return code


def _student_edition(notebooks: Path, args: argparse.Namespace) -> int:
    from minibert.teaching import student_edition

    command = "minibert course student-edition"
    if args.out is None:
        return _error("give the folder to write, OUT", 2, command)
    try:
        written = student_edition.build(notebooks, args.out, overwrite=args.overwrite)
    except (OSError, ValueError, RuntimeError) as exc:  # a full disk, a read-only place
        return _error(str(exc), 1, command)
    print(f"wrote the student edition of {len(written)} notebooks to {args.out}")
    return 0


def _slides(notebooks: Path, args: argparse.Namespace) -> int:
    from minibert.teaching import lessons, slides, student_edition

    command = "minibert course slides"
    if args.mark:
        if args.out is not None:
            return _error("--mark writes into the notebooks; give no OUT with it", 2, command)
        paths = [notebooks / lesson.notebook for lesson in lessons.LESSONS]
        try:  # every notebook read before one is changed
            for path in paths:
                student_edition.read_notebook(path)
        except (OSError, ValueError) as exc:
            return _error(f"{exc}; no notebook was marked", 1, command)
        for lesson, path in zip(lessons.LESSONS, paths):
            changed = slides.mark(path, again=args.again)
            count = slides.screens(json.loads(path.read_text(encoding="utf-8")))
            print(f"{lesson.notebook}: {changed} cells marked, {count} screens")
        return 0
    if args.out is None:
        return _error("give the folder to write the decks in, OUT (or --mark)", 2, command)
    try:
        decks = slides.build(notebooks, args.out)
    except (OSError, ValueError, RuntimeError) as exc:  # a full disk, a read-only place
        return _error(str(exc), 1, command)
    problems = slides.check(args.out)
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"wrote {len(decks)} decks to {args.out}: open {Path(args.out) / 'index.html'}")
    return 1 if problems else 0
