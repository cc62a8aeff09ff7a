"""The student edition of the course: the notebooks with every exercise's solution taken out.

minibert course student-edition OUT     # or: make student-edition

Solutions sit between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` (nbgrader's markers).
nbgrader's own ``generate_assignment`` does the work: each cell holding a solution is marked as
an nbgrader solution cell, nbgrader replaces every solution region with a stub that raises
NotImplementedError, and this module then clears the outputs of those cells (and of a checker
cell right after one), so no solution shows in an output either. Every other cell keeps its
source and its real outputs, byte for byte: the prose, the figures and the data cells are the
lesson. nbgrader's output clearing is left out on purpose (it would clear every figure).
The result keeps nbgrader's metadata, so a teacher can also run it through nbgrader.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from minibert.utils import atomic_write, folder_problem

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
STUB = 'raise NotImplementedError("your code here")'
ANSWER = "*Answer.*"  # a markdown cell that starts so is an exercise's answer: a student's is blank
ANSWER_STUB = "*Your answer:* (write it here; the teacher's edition has the course's answer)"
ASSIGNMENT = "course"  # nbgrader's assignment name inside the temporary course folder

# nbgrader's generate_assignment steps, without ClearOutput (it clears every output of every cell)
PREPROCESSORS = [
    "nbgrader.preprocessors.IncludeHeaderFooter",
    "nbgrader.preprocessors.LockCells",
    "nbgrader.preprocessors.ClearSolutions",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbgrader.preprocessors.ClearMarkScheme",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.SaveCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]


def _source(cell: dict) -> str:
    """A cell's source as one string (notebooks store it as a list of lines or a string)."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def solution_cells(notebook: dict) -> list[int]:
    """Indices of the code cells that hold a solution region."""
    return [
        i
        for i, cell in enumerate(notebook["cells"])
        if cell["cell_type"] == "code" and BEGIN in _source(cell)
    ]


def answer_cells(notebook: dict) -> list[int]:
    """Indices of the markdown cells that answer an exercise (they start with ``*Answer.*``)."""
    return [
        i
        for i, cell in enumerate(notebook["cells"])
        if cell["cell_type"] == "markdown" and _source(cell).lstrip().startswith(ANSWER)
    ]


def check_markers(notebook: dict, name: str) -> None:
    """Raise ValueError unless every marker is alone on its line, in a code cell, paired in order."""
    for i, cell in enumerate(notebook["cells"]):
        lines = _source(cell).splitlines()
        marked = [
            line.strip() for line in lines if "BEGIN SOLUTION" in line or "END SOLUTION" in line
        ]
        if not marked:
            continue
        where = f"{name}, cell {i}"
        if cell["cell_type"] != "code":
            raise ValueError(f"{where}: a {cell['cell_type']} cell mentions a solution marker")
        if any(m not in (BEGIN, END) for m in marked):
            raise ValueError(f"{where}: a solution marker must be alone on its line: {marked}")
        if marked != [BEGIN, END] * (len(marked) // 2) or len(marked) % 2:
            raise ValueError(f"{where}: BEGIN and END SOLUTION markers are not paired: {marked}")


def _mark(notebook: dict, stem: str) -> dict:
    """A copy with nbgrader solution metadata on every solution cell."""
    notebook = json.loads(json.dumps(notebook))
    for n, i in enumerate(solution_cells(notebook), start=1):
        notebook["cells"][i]["metadata"]["nbgrader"] = {
            "grade": False,
            "grade_id": f"{stem}-exercise-{n}",
            "locked": False,
            "schema_version": 3,
            "solution": True,
        }
    for n, i in enumerate(answer_cells(notebook), start=1):  # nbgrader blanks a markdown solution
        notebook["cells"][i]["metadata"]["nbgrader"] = {
            "grade": True,  # nbgrader's "manually graded answer": a markdown solution must be one
            "grade_id": f"{stem}-answer-{n}",
            "locked": False,
            "points": 0,
            "schema_version": 3,
            "solution": True,
            "task": False,
        }
    return notebook


def _clear(notebook: dict, cells: list[int]) -> None:
    """Clear the outputs of the solution cells and of a checker cell right after one."""
    for i in cells:
        targets = [i]
        following = notebook["cells"][i + 1] if i + 1 < len(notebook["cells"]) else None
        if (
            following is not None
            and i + 1 not in cells
            and following["cell_type"] == "code"
            and "exercises.check_" in _source(following)
        ):
            targets.append(i + 1)
        for j in targets:
            notebook["cells"][j]["outputs"] = []
            notebook["cells"][j]["execution_count"] = None


def _let_run_all_continue(notebook: dict, cells: list[int]) -> None:
    """Tag "raises-exception" on each stubbed cell whose stub raises at the top level.

    A stub inside a function raises only when a checker calls it, and the checker prints NOT YET;
    a whole-cell exercise (an experiment) raises as soon as it runs. With the tag, JupyterLab's
    Run All (and nbclient) go on to the next cell, so a student edition runs to the end.
    """
    for i in cells:
        cell = notebook["cells"][i]
        if any(line.startswith(STUB) for line in _source(cell).splitlines()):
            tags = cell["metadata"].setdefault("tags", [])
            if "raises-exception" not in tags:
                tags.append("raises-exception")


def _nbgrader(root: Path) -> None:
    """Run nbgrader's generate_assignment in the course folder root."""
    try:
        import nbgrader  # noqa: F401
    except ImportError as exc:
        raise RuntimeError(
            "the student edition is made by nbgrader, which is not installed: "
            "pip install 'minibert[teach]' (or: pip install nbgrader)"
        ) from exc
    config = {
        "CourseDirectory": {"root": str(root)},
        "GenerateAssignment": {"preprocessors": PREPROCESSORS},
        "ClearSolutions": {
            "code_stub": {"python": f"# your code here\n{STUB}"},
            "text_stub": ANSWER_STUB,
        },
        "Exchange": {"root": str(root / "exchange")},
    }
    (root / "nbgrader_config.json").write_text(json.dumps(config), encoding="utf-8")
    env = dict(os.environ)  # nbgrader calls the `alembic` command of its own environment
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", "generate_assignment", ASSIGNMENT, "--force"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        errors = [line for line in done.stdout.splitlines() + done.stderr.splitlines() if line]
        raise RuntimeError("nbgrader generate_assignment failed:\n" + "\n".join(errors[-20:]))


def read_notebook(path: Path) -> dict:
    """A notebook's JSON, or a ValueError naming the file that is not one."""
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise ValueError(f"{path} is not a readable notebook: {exc}") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise ValueError(f"{path} is not a notebook: it has no list of cells")
    for number, cell in enumerate(notebook["cells"]):
        source = cell.get("source", "") if isinstance(cell, dict) else None
        lines = source if isinstance(source, list) else [source]
        if (
            not isinstance(cell, dict)
            or not isinstance(cell.get("cell_type"), str)
            or not all(isinstance(line, str) for line in lines)
        ):
            raise ValueError(
                f"{path} is damaged: cell {number} has no cell_type or a source that is not text"
            )
    return notebook


def _has_solutions(path: Path) -> bool:
    """Whether a notebook file holds solution cells (False if it is not a readable notebook)."""
    with contextlib.suppress(ValueError, KeyError, TypeError):  # bad JSON or UTF-8: not a notebook
        return bool(solution_cells(json.loads(path.read_text(encoding="utf-8"))))
    return False


def build(notebooks: str | Path, out: str | Path, overwrite: bool = False) -> list[Path]:
    """Write the student edition of every notebook in notebooks/ to out/; return the written paths.

    Notebooks without exercises are copied as they are.
    """
    notebooks, out = Path(notebooks), Path(out)
    paths = sorted(notebooks.glob("*.ipynb"))
    if not paths:
        raise FileNotFoundError(f"no notebooks in {notebooks}; run from the course checkout")
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} is a file; give the folder to write the student edition to")
    if problem := folder_problem(out):  # before any work
        raise ValueError(problem)
    if out.resolve() == notebooks.resolve():
        raise ValueError("the student edition must go to another folder than the notebooks")
    existing = [out / p.name for p in paths if (out / p.name).exists()]
    if existing and not overwrite:
        raise FileExistsError(
            f"{out} already holds {existing[0].name}; choose another folder or --overwrite"
        )
    for path in existing:  # --overwrite must never strip a teacher's notebooks (paths swapped?)
        if _has_solutions(path):
            raise ValueError(
                f"{path} holds solutions (### BEGIN SOLUTION): it is a teacher's notebook, not a "
                "student edition; are the two folders swapped? Nothing was written"
            )
    sources = {p.name: read_notebook(p) for p in paths}
    for name, notebook in sources.items():
        check_markers(notebook, name)
    with tempfile.TemporaryDirectory(prefix="minibert-student-") as tmp:
        root = Path(tmp)
        source = root / "source" / ASSIGNMENT
        source.mkdir(parents=True)
        with_exercises = {
            n: nb for n, nb in sources.items() if solution_cells(nb) or answer_cells(nb)
        }
        for name, notebook in with_exercises.items():
            marked = _mark(notebook, Path(name).stem)
            (source / name).write_text(json.dumps(marked, indent=1), encoding="utf-8")
        if with_exercises:
            _nbgrader(root)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for name, notebook in sources.items():
            if name in with_exercises:
                path = root / "release" / ASSIGNMENT / name
                student = json.loads(path.read_text(encoding="utf-8"))
                _clear(student, solution_cells(notebook))
                _let_run_all_continue(student, solution_cells(notebook))
            else:
                student = notebook
            text = json.dumps(student, indent=1, ensure_ascii=False) + "\n"
            written.append(atomic_write(out / name, text))  # a full disk leaves the old file
    return written
