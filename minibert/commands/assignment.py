"""``minibert assignment list | new | grade``: hand out an assignment, grade a class (the teaching
kit's ``assignments``: each submission in a sandbox, the report and CSV written by the grader)."""

from __future__ import annotations

import argparse
import shlex
import sys

from minibert.options import POSITIVE_INT
from minibert.teaching.assignments.catalogue import ASSIGNMENTS, get, new
from minibert.teaching.assignments.reports import ENOUGH_MEMORY, csv_problem, report, write_csv
from minibert.teaching.assignments.runner import (
    MEMORY_MB,
    MIN_MEMORY_MB,
    PART_SECONDS,
    grade_many,
    sandbox_problem,
)

__all__ = ["add_arguments", "run"]


def _limits_problem(args: argparse.Namespace) -> str | None:
    """Why --seconds, --memory-mb or --jobs cannot be used, or None."""
    for flag, value, check in (
        ("--seconds", args.seconds, POSITIVE_INT),
        ("--memory-mb", args.memory_mb, ENOUGH_MEMORY),
        ("--jobs", args.jobs, POSITIVE_INT),
    ):
        if check(value):
            return f"{flag} {check(value)}, got {value}"
    return None


def _name_problem(args: argparse.Namespace) -> str | None:
    """Why --name cannot be used (unknown), or is needed (several folders), or None."""
    if args.name is not None and args.name not in ASSIGNMENTS:
        known = ", ".join(ASSIGNMENTS)
        return f"--name: unknown assignment {args.name!r}; the assignments are: {known}"
    if args.name is None and len(args.folders) > 1:
        return (
            "grading several folders needs --name ASSIGNMENT, the one the class was set (a "
            "folder's marker is the student's file, and may name an easier assignment)"
        )
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
    check.add_argument(
        "--name",
        default=None,
        help="the assignment set (needed with several folders; one folder alone may be graded "
        "as the assignment its marker names)",
    )
    check.add_argument("--csv", default=None, help="also write one row per folder to this CSV")
    check.add_argument(
        "--seconds",
        type=int,
        default=PART_SECONDS,
        help=f"time limit for importing the file and for each part (default {PART_SECONDS})",
    )
    check.add_argument(
        "--memory-mb",
        type=int,
        default=MEMORY_MB,
        help=f"memory a run's processes may hold beyond Python and torch, Linux: proportional "
        f"set sizes, a page shared counted once (default {MEMORY_MB}, at least {MIN_MEMORY_MB})",
    )
    check.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="folders graded at the same time (default 1; each run uses one CPU thread)",
    )


def _list() -> int:
    for a in ASSIGNMENTS.values():
        print(f"{a.name}: {a.title} ({a.points} points; lesson {a.lesson}; file {a.file})")
        for p in a.parts:
            print(f"    {p.points} {p.title}")
    return 0


def _new(args: argparse.Namespace) -> int:
    try:
        folder = new(args.name, args.folder, args.overwrite)
    except (ValueError, OSError) as exc:  # FileExistsError; a read-only place, a full disk
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
    problem = (
        _limits_problem(args)
        or _name_problem(args)
        or (csv_problem(args.csv) if args.csv else None)
    )
    if problem:  # found now, not after grading a whole class
        print(f"minibert assignment grade: error: {problem}", file=sys.stderr)
        return 2
    print(sandbox_problem() or "each submission runs in a bubblewrap sandbox", flush=True)
    results = []
    try:
        for result in grade_many(args.folders, args.name, args.seconds, args.memory_mb, args.jobs):
            report(result)
            sys.stdout.flush()
            results.append(result)
    except KeyboardInterrupt:  # Ctrl-C: every run is killed with its sandbox; nothing half-written
        kept = f"{args.csv} was not written" if args.csv else "no CSV was asked for"
        print(
            f"minibert assignment grade: interrupted after {len(results)} of "
            f"{len(args.folders)} folders; {kept}",
            file=sys.stderr,
        )
        return 130
    if args.csv:
        try:
            write_csv(results, args.csv)
        except OSError as exc:
            print(
                f"minibert assignment grade: error: cannot write {args.csv}: {exc}", file=sys.stderr
            )
            return 2
        print(f"wrote {len(results)} rows to {args.csv}")
    return 0 if all(r.passed for r in results) else 1
