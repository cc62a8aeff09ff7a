"""The grader's outputs: each folder's report and the class's CSV (``minibert assignment grade``,
in ``minibert.commands.assignment``, prints and writes them).

They are written by the grader alone, from the grades it computed: a submission never holds the
grader's output (its worker's standard output is the channel).
"""

from __future__ import annotations

import csv
import io
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from minibert.options import Check
from minibert.teaching.assignments.catalogue import ASSIGNMENTS, get
from minibert.teaching.assignments.runner import (
    MIN_MEMORY_MB,
    Grade,
)
from minibert.utils import atomic_write

ENOUGH_MEMORY = Check(
    f"an int >= {MIN_MEMORY_MB} (megabytes beyond what Python and torch take; the checks' own "
    "inputs need that much)",
    lambda v: isinstance(v, int) and v >= MIN_MEMORY_MB,
)


def report(result: Grade, stream: Any = None) -> None:
    """Print a grade: one line per part ([points/max] title: PASS or NOT YET and the hint)."""
    stream = stream or sys.stdout
    print(f"{result.assignment}: {result.folder}", file=stream)
    if result.sandbox != "bubblewrap":
        print(f"  {result.sandbox}", file=stream)
    if result.error:
        print(f"  error: {result.error}", file=stream)
    untouched = bool(result.parts) and all("NotImplementedError" in p.message for p in result.parts)
    for p in result.parts:
        verdict = "PASS" if p.points == p.max_points else "NOT YET"
        message = "" if untouched else f" {p.message}"
        print(f"  [{p.points}/{p.max_points}] {p.title}: {verdict}{message}", file=stream)
    if untouched and not result.error:
        print(
            f"  every part still raises NotImplementedError: nothing is written yet. Start with "
            f"part 1, {result.parts[0].title}, in {get(result.assignment).file}.",
            file=stream,
        )
    print(f"  total: {result.points}/{result.max_points}", file=stream)


def write_csv(results: Sequence[Grade], path: str | Path) -> None:
    """One row per folder: folder, assignment, points per part, total, max, sandbox, error; a
    text cell that starts like a formula is quoted (_cell).

    The columns are the assignments' parts, from the catalogue; the file is written at once.
    """
    titles = list(dict.fromkeys(p.title for a in ASSIGNMENTS.values() for p in a.parts))
    used = {p.title for r in results for p in r.parts}
    titles = [t for t in titles if t in used]
    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow(["folder", "assignment", *titles, "total", "max", "sandbox", "error"])
    for r in results:
        points = {p.title: p.points for p in r.parts}
        writer.writerow(
            [
                _cell(str(r.folder)),
                _cell(r.assignment),
                *(points.get(t, "") for t in titles),
                r.points,
                r.max_points,
                _cell(r.sandbox),
                _cell(r.error or ""),
            ]
        )
    atomic_write(path, table.getvalue())  # a failed write leaves the old file whole


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet runs a cell starting so


def _cell(text: str) -> str:
    """text as a cell a spreadsheet shows and never runs: one starting like a formula (a folder
    named `=1+2`) gets a single quote before it, as OWASP and the spreadsheets' makers advise."""
    return f"'{text}" if text.startswith(FORMULA_START) else text


def csv_problem(path: str | Path) -> str | None:
    """Why the CSV cannot be written at path (a folder, no such folder, not writable), or None."""
    target = Path(path)
    if target.is_dir():
        return f"cannot write the CSV: {path} is a folder; give a file name, e.g. {target / 'grades.csv'}"
    if target.exists() and not target.is_file():
        return f"cannot write the CSV: {path} is not a regular file"
    if target.is_file() and not _written_by_the_grader(target):
        return (
            f"cannot write the CSV: {path} exists and is not a table of grades this grader wrote "
            "(it replaces only its own); give a new file name"
        )
    where = target.resolve().parent
    if not where.is_dir() or not os.access(where, os.W_OK):
        return f"cannot write the CSV: {where} is not a writable folder"
    return None


def _written_by_the_grader(path: Path) -> bool:
    """Whether path's first line is the header write_csv writes (folder, assignment, ..., error)."""
    try:
        with path.open(encoding="utf-8", newline="") as f:
            header = next(csv.reader([f.readline(4096)]), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return False
    return header[:2] == ["folder", "assignment"] and header[-4:] == HEADER_END


HEADER_END = ["total", "max", "sandbox", "error"]  # the last columns of every CSV of grades
