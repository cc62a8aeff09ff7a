"""`minibert assignment list | new | grade`: the arguments, the report and the class's CSV.

The report and the CSV are written here, by the grader alone, from the grades it computed: a
submission never holds the grader's output (its worker's standard output is the channel).
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from minibert.options import POSITIVE_INT, Check
from minibert.teaching.assignments.catalogue import ASSIGNMENTS, get, new
from minibert.teaching.assignments.runner import (
    MEMORY_MB,
    MIN_MEMORY_MB,
    PART_SECONDS,
    Grade,
    grade_many,
    sandbox_problem,
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
    untouched = bool(result.parts) and all("NotImplementedError" in p.message for p in result.parts)  # fmt: skip
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
    """One row per folder: folder, assignment, points per part, total, max, sandbox, error.

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
        writer.writerow([str(r.folder), r.assignment, *(points.get(t, "") for t in titles),
                         r.points, r.max_points, r.sandbox, r.error or ""])  # fmt: skip
    atomic_write(path, table.getvalue())  # a failed write leaves the old file whole


def csv_problem(path: str | Path) -> str | None:
    """Why the CSV cannot be written at path (a folder, no such folder, not writable), or None."""
    target = Path(path)
    if target.is_dir():
        return f"cannot write the CSV: {path} is a folder; give a file name, e.g. {target / 'grades.csv'}"  # fmt: skip
    if target.exists() and not target.is_file():
        return f"cannot write the CSV: {path} is not a regular file"
    where = target.resolve().parent
    if not where.is_dir() or not os.access(where, os.W_OK):
        return f"cannot write the CSV: {where} is not a writable folder"
    return None


def _limits_problem(args: argparse.Namespace) -> str | None:
    """Why --seconds, --memory-mb or --jobs cannot be used, or None."""
    for flag, value, check in (("--seconds", args.seconds, POSITIVE_INT),
                               ("--memory-mb", args.memory_mb, ENOUGH_MEMORY),
                               ("--jobs", args.jobs, POSITIVE_INT)):  # fmt: skip
        if check(value):
            return f"{flag} {check(value)}, got {value}"
    return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `minibert assignment` sub-commands: list, new, grade."""
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("list", help="the assignments, their parts and points")
    make = sub.add_parser("new", help="copy an assignment's skeleton and README into a folder")
    make.add_argument("name", help=f"one of: {', '.join(ASSIGNMENTS)}")
    make.add_argument("folder", help="where to write it (created)")
    make.add_argument("--overwrite", action="store_true", help="replace files already there")
    check = sub.add_parser(
        "grade", help="grade one or more folders, each in a sandbox: a score per part with hints"
    )
    check.add_argument("folders", nargs="+", help="submission folders (e.g. submissions/*)")
    check.add_argument("--name", default=None, help="the assignment, when a folder has no marker")
    check.add_argument("--csv", default=None, help="also write one row per folder to this CSV")
    check.add_argument(
        "--seconds", type=int, default=PART_SECONDS,
        help=f"time limit for importing the file and for each part (default {PART_SECONDS})",
    )  # fmt: skip
    check.add_argument(
        "--memory-mb", type=int, default=MEMORY_MB,
        help=f"memory a submission may use beyond Python and torch, POSIX (default {MEMORY_MB}, "
        f"at least {MIN_MEMORY_MB})",
    )  # fmt: skip
    check.add_argument(
        "--jobs", type=int, default=1,
        help="folders graded at the same time (default 1; each run uses one CPU thread)",
    )  # fmt: skip


def _list() -> int:
    for a in ASSIGNMENTS.values():
        print(f"{a.name}: {a.title} ({a.points} points; lesson {a.lesson}; file {a.file})")
        for p in a.parts:
            print(f"    {p.points} {p.title}")
    return 0


def _new(args: argparse.Namespace) -> int:
    try:
        folder = new(args.name, args.folder, args.overwrite)
    except (ValueError, FileExistsError) as exc:
        print(f"minibert assignment new: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {get(args.name).file} and README.md to {folder}; grade it with")
    print(f"  minibert assignment grade {shlex.quote(str(folder))}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Run `minibert assignment ...`; exit code 0 when every graded part of every folder passes."""
    if args.action == "list":
        return _list()
    if args.action == "new":
        return _new(args)
    problem = _limits_problem(args) or (csv_problem(args.csv) if args.csv else None)
    if problem:  # found now, not after grading a whole class
        print(f"minibert assignment grade: error: {problem}", file=sys.stderr)
        return 2
    print(sandbox_problem() or "each submission runs in a bubblewrap sandbox", flush=True)
    results = []
    for result in grade_many(args.folders, args.name, args.seconds, args.memory_mb, args.jobs):
        report(result)
        sys.stdout.flush()
        results.append(result)
    if args.csv:
        try:
            write_csv(results, args.csv)
        except OSError as exc:
            print(f"minibert assignment grade: error: cannot write {args.csv}: {exc}", file=sys.stderr)  # fmt: skip
            return 2
        print(f"wrote {len(results)} rows to {args.csv}")
    return 0 if all(r.passed for r in results) else 1
