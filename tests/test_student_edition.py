"""Tests for the student edition: no solution survives, nothing else changes, and the solutions
pasted back in give the course notebooks again and pass their checkers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from conftest import nbgrader_once

from minibert import cli
from minibert.teaching import student_edition
from minibert.teaching.student_edition import BEGIN, END, STUB

NOTEBOOKS = Path(__file__).parent.parent / "notebooks"


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    with nbgrader_once():  # the student edition's nbgrader step: once per input in the session
        assert cli.main(["course", "student-edition", str(out), "--notebooks", str(NOTEBOOKS)]) == 0
    return out


def regions(source: str) -> list[list[str]]:
    """The solution regions of a cell: their lines, markers excluded."""
    found, current = [], None
    for line in source.splitlines():
        if line.strip() == BEGIN:
            current = []
        elif line.strip() == END:
            found.append(current)
            current = None
        elif current is not None:
            current.append(line)
    return found


def paste_back(student: str, solutions: list[list[str]]) -> str:
    """The student's cell with each stub replaced by the next solution region."""
    lines, out, k = student.splitlines(), [], 0
    i = 0
    while i < len(lines):
        if lines[i].strip() == "# your code here" and i + 1 < len(lines) and STUB in lines[i + 1]:
            out += solutions[k]
            k, i = k + 1, i + 2
            continue
        out.append(lines[i])
        i += 1
    assert k == len(solutions), "a stub is missing"
    return "\n".join(out)


def without_regions(source: str) -> str:
    """The cell's lines outside its solution regions."""
    keep, inside = [], False
    for line in source.splitlines():
        if line.strip() in (BEGIN, END):
            inside = line.strip() == BEGIN
        elif not inside:
            keep.append(line)
    return "\n".join(keep)


def without_markers(source: str) -> str:
    return "\n".join(line for line in source.splitlines() if line.strip() not in (BEGIN, END))


def course_notebooks():
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def test_every_notebook_is_written_and_valid(edition):
    names = [p.name for p in course_notebooks()]
    assert sorted(p.name for p in edition.glob("*.ipynb")) == names
    for name in names:
        nbformat.validate(nbformat.read(edition / name, as_version=4))


@pytest.mark.parametrize("path", course_notebooks(), ids=lambda p: p.stem)
def test_no_solution_survives_and_nothing_else_changes(edition, path):
    course = json.loads(path.read_text(encoding="utf-8"))
    student = json.loads((edition / path.name).read_text(encoding="utf-8"))
    assert len(student["cells"]) == len(course["cells"])
    exercises = set(student_edition.solution_cells(course))
    assert bool(exercises) == (
        path.stem[:2] in {"01", "02", "03", "04", "05", "06", "07", "08", "09", "10"}
    )
    text = json.dumps(student)
    answers = set(student_edition.answer_cells(course))
    for i, (c, s) in enumerate(zip(course["cells"], student["cells"])):
        if i in answers:  # an exercise's answer: blank for the student, its text nowhere
            assert "".join(s["source"]) == student_edition.ANSWER_STUB
            assert "".join(c["source"])[len(student_edition.ANSWER) :][:60] not in text
            continue
        if i not in exercises:
            assert s == c, f"cell {i} changed"  # byte-identical: source, outputs, metadata
            continue
        source = "".join(s["source"])
        assert BEGIN not in source and END not in source
        assert s["outputs"] == [] and s["execution_count"] is None
        assert s["metadata"]["nbgrader"]["solution"] is True
        original = "".join(c["source"])
        outside = {line.strip() for line in without_regions(original).splitlines()}
        student_lines = {line.strip() for line in source.splitlines()}
        for region in regions(original):
            for line in (line.strip() for line in region):
                if len(line) >= 8 and not line.startswith("#") and line not in outside:
                    assert line not in student_lines, f"cell {i}: solution line survives: {line}"
            assert "\n".join(region) not in text
        # the solutions pasted back give the course's cell again, markers aside
        assert paste_back(source, regions("".join(c["source"]))) == without_markers(
            "".join(c["source"])
        )


def test_solutions_pasted_back_pass_their_checkers(edition):
    """Run lesson 2's student notebook with the reference solutions pasted back in: the cells the
    exercises read from, as below (the whole lesson, solutions included, runs in nbval)."""
    from nbclient import NotebookClient

    course = nbformat.read(NOTEBOOKS / "02_attention_math.ipynb", as_version=4)
    student = nbformat.read(edition / "02_attention_math.ipynb", as_version=4)
    cells = student_edition.solution_cells(course)
    for i in cells:
        student.cells[i].source = paste_back(
            student.cells[i].source, regions(course.cells[i].source)
        )
    keep = cells_the_exercises_need(student, cells)
    run = nbformat.v4.new_notebook(metadata=student.metadata)
    run.cells = [student.cells[i] for i in keep]
    NotebookClient(run, timeout=600, kernel_name="python3").execute(cwd=str(NOTEBOOKS))
    ran = dict(zip(keep, run.cells))
    for i in cells:
        printed = "".join(o.get("text", "") for o in ran[i].outputs)
        assert re.search(r"^PASS ", printed, re.M) and "NOT YET" not in printed, printed


def test_student_edition_refuses_to_overwrite_or_to_write_over_the_course(edition, capsys):
    assert cli.main(["course", "student-edition", str(edition), "--notebooks", str(NOTEBOOKS)]) == 1
    assert "--overwrite" in capsys.readouterr().err
    assert (
        cli.main(["course", "student-edition", str(NOTEBOOKS), "--notebooks", str(NOTEBOOKS)]) == 1
    )
    assert "another folder" in capsys.readouterr().err
    assert cli.main(["course", "student-edition", "--notebooks", str(NOTEBOOKS)]) == 2


def test_swapped_folders_never_strip_the_teachers_notebooks(edition, tmp_path, capsys):
    import shutil

    teacher = tmp_path / "teacher"
    shutil.copytree(NOTEBOOKS, teacher)
    before = {p.name: p.read_bytes() for p in teacher.glob("*.ipynb")}
    args = ["course", "student-edition", str(teacher), "--notebooks", str(edition), "--overwrite"]
    assert cli.main(args) == 1  # OUT and --notebooks swapped
    assert "holds solutions" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in teacher.glob("*.ipynb")} == before


def test_markers_must_be_alone_and_paired():
    def notebook(*sources, kind="code"):
        return {"cells": [{"cell_type": kind, "source": s, "metadata": {}} for s in sources]}

    student_edition.check_markers(notebook(f"x = 1\n{BEGIN}\ny = 2\n{END}\n"), "ok")
    with pytest.raises(ValueError, match="not paired"):
        student_edition.check_markers(notebook(f"{BEGIN}\ny = 2\n"), "nb")
    with pytest.raises(ValueError, match="alone on its line"):
        student_edition.check_markers(notebook(f"x = 1  {BEGIN}\n{END}\n"), "nb")
    with pytest.raises(ValueError, match="markdown cell"):
        student_edition.check_markers(notebook(f"between `{BEGIN}` and", kind="markdown"), "nb")


def test_a_damaged_notebook_is_named(tmp_path):
    folder = tmp_path / "nbs"
    folder.mkdir()
    (folder / "01_broken.ipynb").write_text('{"cells": [\n', encoding="utf-8")
    with pytest.raises(ValueError, match="01_broken.ipynb is not a readable notebook"):
        student_edition.build(folder, tmp_path / "out")


def test_the_course_answers_are_found():
    found = [len(student_edition.answer_cells(json.loads(p.read_text(encoding="utf-8"))))
             for p in course_notebooks()]  # fmt: skip
    assert sum(found) >= 4  # 04, 06, 07 and 08 answer their experiments


def test_run_all_goes_past_every_whole_cell_exercise(edition):
    """A stub raising at the top level is tagged raises-exception, and nothing after it needs it."""
    import ast

    tagged = 0
    for path in course_notebooks():
        course = json.loads(path.read_text(encoding="utf-8"))
        student = json.loads((edition / path.name).read_text(encoding="utf-8"))
        for i in student_edition.solution_cells(course):
            cell = student["cells"][i]
            lines = "".join(cell["source"]).splitlines()
            top_level = any(line.startswith(student_edition.STUB) for line in lines)
            assert ("raises-exception" in cell["metadata"].get("tags", [])) == top_level, (path, i)
            if not top_level:
                continue
            tagged += 1
            code = "\n".join("\n".join(r) for r in regions("".join(course["cells"][i]["source"])))
            assigned = {n.id for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Name)
                        and isinstance(n.ctx, ast.Store)}  # fmt: skip
            later = "\n".join(
                "".join(c["source"]) for c in course["cells"][i + 1 :] if c["cell_type"] == "code"
            )
            needed = {name for name in assigned if re.search(rf"\b{name}\b", later)}
            assert not needed, f"{path.name} cell {i}: later cells need {needed}"
    assert tagged >= 5  # the experiments of 01, 02, 04, 06 and 08


def test_no_cell_calls_an_unwritten_function_outside_its_checker():
    """After a solution region, the student's function runs only in its checker (or under it)."""
    for path in course_notebooks():
        course = json.loads(path.read_text(encoding="utf-8"))
        for i in student_edition.solution_cells(course):
            source = "".join(course["cells"][i]["source"])
            names = re.findall(r"^def (\w+)\(", source, re.M)
            after = source[source.rindex(END) :].splitlines()[1:]
            guarded = False
            for line in after:
                if line.startswith("if exercises.check_"):
                    guarded = True  # runs only once the checker passed
                elif line and not line[0].isspace() and not line.startswith(")"):
                    guarded = False
                used = [n for n in names if re.search(rf"\b{n}\b", line)]
                assert not used or guarded or "exercises.check_" in line or line.startswith(" "), (
                    f"{path.name} cell {i}: {line.strip()!r} calls {used} outside its checker"
                )


def _names(source: str) -> tuple[set[str], set[str]]:
    """The names a cell defines (assigned, def, class, import) and those it reads first."""
    import ast

    code = "\n".join(
        line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))
    )
    tree = ast.parse(code)
    defined, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (defined if isinstance(node.ctx, ast.Store) else read).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):  # a parameter: the function's own, never a cell's
            defined.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return defined, read


def cells_the_exercises_need(notebook, exercises: list[int]) -> list[int]:
    """The code cells the exercises (and the cells after them) read from, transitively, in order."""
    cells = notebook.cells
    code = [i for i, c in enumerate(cells) if c.cell_type == "code"]
    names = {i: _names(cells[i].source) for i in code}
    wanted = set()
    for i in exercises:
        wanted |= {j for j in (i, i + 1) if j in names}
    todo = sorted(wanted)
    while todo:
        i = todo.pop()
        defined_here, read = names[i]
        for name in read - defined_here:
            earlier = [j for j in code if j < i and name in names[j][0]]
            if earlier and earlier[-1] not in wanted:
                wanted.add(earlier[-1])
                todo.append(earlier[-1])
    return sorted(wanted)


def test_the_exercises_need_only_what_they_read():
    """The pruning below keeps a cell whose name is read and drops one nothing reads."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in (
        "import torch\nfrom minibert import exercises", "model = train()  # slow",
        "x = torch.zeros(3)", f"def f(a):\n    {BEGIN}\n    return a\n    {END}\n",
        "_ = exercises.check_f(f, x)",
    )]  # fmt: skip
    assert cells_the_exercises_need(nb, [3]) == [0, 2, 3, 4]


WITH_EXERCISES = [p.name for p in course_notebooks() if student_edition.solution_cells(
    json.loads(p.read_text(encoding="utf-8")))]  # fmt: skip


@pytest.fixture(scope="module")
def students_runs(edition):
    """Each notebook with exercises run from the student's folder: the cells its exercises read
    from, in a kernel of its own, two kernels at a time (each works in a process of its own, and
    a 2-core machine runs two). name -> the run's cells by their index in the notebook, or the
    error its run raised (CellExecutionError for an error outside a raises-exception cell)."""
    import asyncio

    from nbclient import NotebookClient

    async def run_all() -> list:
        two = asyncio.Semaphore(2)

        async def run(name: str) -> dict:
            course = nbformat.read(NOTEBOOKS / name, as_version=4)
            notebook = nbformat.read(edition / name, as_version=4)
            keep = cells_the_exercises_need(notebook, student_edition.solution_cells(course))
            part = nbformat.v4.new_notebook(metadata=notebook.metadata)
            part.cells = [notebook.cells[i] for i in keep]
            # the student's folder, not the checkout: whatever a notebook reads must be found there
            client = NotebookClient(
                part,
                timeout=600,
                kernel_name="python3",
                resources={"metadata": {"path": str(edition)}},
            )
            async with two:
                await client.async_execute()
            return dict(zip(keep, part.cells))

        return await asyncio.gather(*map(run, WITH_EXERCISES), return_exceptions=True)

    return dict(zip(WITH_EXERCISES, asyncio.run(run_all())))


@pytest.mark.parametrize("name", WITH_EXERCISES)
def test_the_student_edition_exercises_run_in_the_students_folder(students_runs, name):
    """Each stub raises NotImplementedError or its checker says NOT YET, run from the student's
    folder. Only the cells the exercises read from run (the course's training cells run once, in
    nbval); that the cells after a stub never need it is checked above, without running them."""
    ran = students_runs[name]
    if isinstance(ran, BaseException):
        raise ran  # the run stopped at an error outside a raises-exception cell
    course = nbformat.read(NOTEBOOKS / name, as_version=4)
    for i in student_edition.solution_cells(course):
        cells = [ran[j] for j in (i, i + 1) if j in ran]
        said = "".join(o.get("text", "") for c in cells for o in c.outputs)
        if "raises-exception" in ran[i].metadata.get("tags", []):  # a whole-cell stub
            (error,) = [o for o in ran[i].outputs if o.output_type == "error"]
            assert error.ename == "NotImplementedError", f"{name} cell {i}: {error.ename}"
        elif any("exercises.check_" in c.source for c in cells):
            assert "PASS" not in said, f"{name} cell {i}: a stub passed its checker"
            assert "NOT YET" in said, f"{name} cell {i}: the checker of a stub said nothing"


def test_the_prose_quotes_the_stub_the_student_edition_writes():
    """Text telling students what to replace names the very line they will see."""
    quoted = 0
    for path in course_notebooks():
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            text = "".join(cell["source"])
            if cell["cell_type"] == "markdown" and "NotImplementedError" in text:
                assert STUB in text, f"{path.name}: the prose quotes another stub than {STUB!r}"
                quoted += 1
    assert quoted >= 2  # 02's and 03's exercise sections


# --- one line, before any work, for a place that cannot be written or a damaged cell --------------


def test_a_place_that_cannot_be_written_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    """Into a read-only place: OSError [Errno 30] after 16 s of work; a dangling link as OUT:
    [Errno 17] File exists."""
    from minibert import utils

    (tmp_path / "afile").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    for out, says in (
        (tmp_path / "afile" / "sub", "afile is a file, so"),
        (tmp_path / "link", "which does not exist; give a folder"),
    ):
        code = cli.main(["course", "student-edition", str(out), "--notebooks", str(NOTEBOOKS)])
        err = capsys.readouterr().err
        assert code == 1 and says in err and len(err.strip().splitlines()) == 1, err
    monkeypatch.setattr(utils.os, "access", lambda path, mode: False)  # as a read-only mount
    code = cli.main(["course", "student-edition", str(tmp_path / "ro"), "--notebooks", str(NOTEBOOKS)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and "is not writable" in err and not (tmp_path / "ro").exists()


def test_a_cell_whose_source_is_not_text_is_named(tmp_path):
    """A cell whose source is an int: AttributeError."""
    folder = tmp_path / "nbs"
    folder.mkdir()
    cell = {"cell_type": "code", "source": 5, "metadata": {}, "outputs": []}
    (folder / "01_odd.ipynb").write_text(json.dumps({"cells": [cell]}), encoding="utf-8")
    with pytest.raises(ValueError, match="01_odd.ipynb is damaged: cell 0"):
        student_edition.build(folder, tmp_path / "out")
