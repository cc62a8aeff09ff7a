"""Graded assignments that reuse minibert: hand out a skeleton, grade it part by part, offline.

minibert assignment list                          # the assignments, their parts and points
minibert assignment new attention hw1             # the skeleton and its README in hw1/
minibert assignment grade hw1                     # a score per part, a hint per failed part
minibert assignment grade subs/* --csv grades.csv # a whole class: one row per folder

Grading is split so that a submission cannot forge its score: the grader makes every input and
compares every output with the reference (``checks``), while the student's code runs in a worker
(``minibert.teaching.grading_worker``), sandboxed by bubblewrap where it can be (``runner``),
which only sends back what that code returned (``remote``). Without a sandbox, grading still runs
and every row says "not sandboxed". The modules:

- ``catalogue``: the assignments and their parts; ``list``, ``new``, ``which``;
- ``checks``: each part's inputs, comparison and hint;
- ``runner``: running a submission (sandboxed, in a child process, or in this process);
- ``remote``: the grader's side of the channel and proxies for the student's objects;
- ``minibert.teaching.grading_worker`` (beside this package, since the exercises use it too): the
  program that runs the student's code (standard library and torch only);
- ``reports``: the report and the CSV, written by the grader alone (the command that prints them,
  ``minibert assignment``, is ``minibert.commands.assignment``).
"""

from minibert.teaching.assignments.catalogue import (
    ASSIGNMENTS,
    FILES,
    MARKER,
    Assignment,
    Part,
    get,
    new,
    which,
)
from minibert.teaching.assignments.reports import csv_problem, report, write_csv
from minibert.teaching.assignments.runner import (
    MEMORY_MB,
    MIN_MEMORY_MB,
    PART_SECONDS,
    Grade,
    PartResult,
    grade,
    grade_isolated,
    grade_many,
    sandbox_problem,
)

__all__ = [
    "ASSIGNMENTS",
    "FILES",
    "MARKER",
    "MEMORY_MB",
    "MIN_MEMORY_MB",
    "PART_SECONDS",
    "Assignment",
    "Grade",
    "Part",
    "PartResult",
    "csv_problem",
    "get",
    "grade",
    "grade_isolated",
    "grade_many",
    "new",
    "report",
    "sandbox_problem",
    "which",
    "write_csv",
]
