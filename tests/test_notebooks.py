"""Hygiene of the stored notebooks (nbval, run by the test command, checks their outputs)."""

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
MACHINE_PATH = re.compile(r"(?<![:\w/.])/(?:home|root|tmp|usr|work|Users|var|opt)/|[A-Z]:\\\\Users")
MAX_BYTES = 3_000_000


def test_the_course_notebooks_are_there():
    names = [p.name for p in NOTEBOOKS]
    assert "00_start_here.ipynb" in names
    assert names == sorted(names)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_hygiene(path):
    assert path.stat().st_size < MAX_BYTES, f"{path.name} is over 3 MB"
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["nbformat"] == 4
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    assert code, "a notebook without code"
    counts = [c["execution_count"] for c in code]
    assert counts == list(range(1, len(code) + 1)), "run top to bottom in a fresh kernel"
    for i, cell in enumerate(code, start=1):
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", f"cell {i}: {out.get('ename')}"
            text = json.dumps(
                {k: v for k, v in out.items() if k != "data"}
                | {
                    "data": {
                        k: v for k, v in out.get("data", {}).items() if not k.startswith("image/")
                    }
                }
            )
            assert not MACHINE_PATH.search(text), f"cell {i} shows a machine-specific path"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_nbval_markers_are_alone_on_their_line(path):
    """nbval only obeys a marker comment that is exactly the marker ("# NBVAL_IGNORE_OUTPUT")."""
    known = {"NBVAL_IGNORE_OUTPUT", "NBVAL_CHECK_OUTPUT", "NBVAL_SKIP", "NBVAL_RAISES_EXCEPTION"}
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        for line in "".join(cell["source"]).splitlines():
            comment = line.strip().lstrip("#").strip()
            if line.strip().startswith("#") and comment.startswith("NBVAL"):
                assert comment in known, f"nbval ignores this marker: {line.strip()!r}"


@pytest.mark.slow
def test_the_other_cpu_environment_changes_the_kernel_path():
    """make test KERNEL=other (CI) must really run the notebooks on another kernel path."""
    import os
    import subprocess
    import sys

    here = Path(__file__).resolve().parent
    probe = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS")
    }
    native = subprocess.run(
        [sys.executable, "-c", probe], env=clean, capture_output=True, text=True
    )
    settings = subprocess.run(
        [sys.executable, str(here / "other_cpu.py")], env=clean, capture_output=True, text=True
    ).stdout.split()
    other_env = clean | dict(s.split("=", 1) for s in settings)
    other = subprocess.run(
        [sys.executable, "-c", probe], env=other_env, capture_output=True, text=True
    )
    assert {"ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS"} <= set(other_env)
    assert other.stdout.strip() != native.stdout.strip(), (native.stdout, other.stdout)


# --- numbers in prose are the numbers the cells print ------------------------------------------
# A decimal percentage ("58.1%") or a decimal below 1 with two or more digits ("0.84") quoted in a
# notebook's markdown must be printed by one of its cells, so a re-executed notebook whose
# numbers moved fails here until its prose follows. Numbers that are not outputs are listed with
# where they come from.
QUOTED_NUMBER = re.compile(r"(?<![\d.])(?:\d+\.\d+%|0\.\d{2,})(?![\d.])")
NOT_OUTPUTS = {
    ("03", "0.044715"): "the constant of GELU's tanh approximation",
    ("04", "0.85"): "1 - 0.15, the chance a token is not chosen",
    ("05", "52.0%"): "ALBERT's table 5 (NSP-trained model on SOP), quoted from the paper",
    ("06", "0.693"): "log 2",
    ("06", "0.999"): "AdamW's beta 2 (BERT's), which exercise 3 asks for",
    ("06", "79.4%"): "Wang & Manning (2012), quoted from the paper",
    ("06", "0.750"): "finetuning_shapes.json: MiniLM on rotten-tomatoes at 1,024 (seeds 1, 2)",
    ("06", "0.107"): "finetuning_shapes.json: minilm - bag of words at 1,024",
    ("06", "0.083"): "finetuning_shapes.json: minilm - bag of words at 1,024, low",
    ("06", "0.130"): "finetuning_shapes.json: minilm - bag of words at 1,024, high",
    ("06", "41.9%"): "100% minus the majority's 58.1%, which the cell prints",
    ("11", "0.15"): "BERT's masking rate",
    ("11", "0.49"): "read off the figure above it (the colour bar of d2l's last panel)",
    ("11", "0.41"): "read off the figure above it (head 0's largest weight)",
}


def printed_text(nb: dict) -> str:
    """Everything a notebook's cells print or display as text."""
    parts = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")))
            for kind in ("text/plain", "text/markdown", "text/html"):
                parts.append("".join(out.get("data", {}).get(kind, "")))
    return "\n".join(parts)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_numbers_in_the_prose_are_the_ones_printed(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    printed, lesson = printed_text(nb), path.name[:2]
    drifted = [
        f"cell {i}: {number}"
        for i, cell in enumerate(nb["cells"])
        if cell["cell_type"] == "markdown"
        for number in QUOTED_NUMBER.findall("".join(cell["source"]))
        if number not in printed and (lesson, number) not in NOT_OUTPUTS
    ]
    assert not drifted, f"{path.name}: quoted but printed by no cell: {drifted}"


def test_numbers_the_readme_and_the_guide_quote_from_notebooks_are_printed():
    root = NOTEBOOKS[0].parent.parent
    printed = {
        p.name[:2]: printed_text(json.loads(p.read_text(encoding="utf-8"))) for p in NOTEBOOKS
    }
    card = (root / "data" / "course_checkpoint" / "README.md").read_text(encoding="utf-8")
    drifted = []
    for row in (root / "README.md").read_text(encoding="utf-8").splitlines():
        command = row.split("|")[-2].strip() if row.count("|") > 3 else ""
        cited = re.findall(r"^notebook (0\d)", command)
        for lesson in cited:  # a results row whose source is a notebook
            for number in re.findall(r"(?<![\d.])\d+\.\d+%", row):
                if number not in printed[lesson] and number not in card:
                    drifted.append(f"README, notebook {lesson}'s row: {number}")
    guide = (root / "docs" / "teaching.md").read_text(encoding="utf-8")
    for number in re.findall(r"(?<![\d.])\d+\.\d+%", guide):
        if not any(number in text for text in printed.values()):
            drifted.append(f"docs/teaching.md: {number}")
    assert not drifted, drifted


def test_every_written_answer_has_a_rubric_in_the_guide():
    guide = (NOTEBOOKS[0].parent.parent / "docs" / "teaching.md").read_text(encoding="utf-8")
    rubrics = guide[guide.index("## Rubrics for the written answers") :]
    rubrics = rubrics[: rubrics.index("\n## ", 1)]
    asked_for = set()
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for i, cell in enumerate(cells):
            if cell["cell_type"] != "markdown" or not "".join(cell["source"]).startswith("*Answer"):
                continue
            asked = next("".join(c["source"]) for c in reversed(cells[:i])
                         if "**Exercise" in "".join(c["source"]))  # fmt: skip
            number = re.search(r"\*\*Exercise (\d+)", asked).group(1)
            asked_for.add(f"### Lesson {path.name[:2]}, exercise {number}:")
    written = set(re.findall(r"^### Lesson \d\d, exercise \d+:", rubrics, flags=re.MULTILINE))
    assert asked_for - written == set(), "answers without a rubric"
    assert written - asked_for == set(), "rubrics for answers the notebooks no longer ask"
    assert rubrics.count("\n### ") == len(written) == 4


# --- a lesson is one class session ---------------------------------------------------------------
# Prose words: the whitespace-separated words of a notebook's markdown cells (headings, lists and
# tables included, code cells not). Lesson 08 tells one story in one session; its whole grid is
# the appendix, notebook 12; every other notebook is one session too.
PROSE_WORDS = {"08": 3000, "12": 4500}
PROSE_WORDS_OTHERWISE = 3500


def prose_words(nb: dict) -> int:
    return sum(
        len("".join(c["source"]).split()) for c in nb["cells"] if c["cell_type"] == "markdown"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_lesson_is_one_class_session_of_prose(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    limit = PROSE_WORDS.get(path.name[:2], PROSE_WORDS_OTHERWISE)
    assert prose_words(nb) <= limit, (
        f"{path.name}: {prose_words(nb):,} words of prose, over {limit:,}"
    )


@pytest.mark.slow
def test_the_evidence_of_lesson_08_is_the_appendix_after_the_d2l_one():
    """Lesson 08's grid lives in notebook 12, after the d2l appendix; the lesson points to it and
    the appendix reads the committed results rather than training anything."""
    names = [p.name for p in NOTEBOOKS]
    assert (
        names.index("12_appendix_what_pretraining_buys.ipynb")
        == names.index("11_d2l_side_by_side.ipynb") + 1
    )
    lesson, appendix = (json.loads((NOTEBOOKS[0].parent / n).read_text(encoding="utf-8"))
                        for n in ("08_what_pretraining_buys.ipynb", "12_appendix_what_pretraining_buys.ipynb"))  # fmt: skip
    assert "notebook 12" in "".join(lesson["cells"][0]["source"])
    code = "\n".join("".join(c["source"]) for c in appendix["cells"] if c["cell_type"] == "code")
    assert "finetuning_shapes.json" in code
    assert "finetune(" not in code and "pretrain(" not in code, "the appendix re-runs no grid"


def test_lesson_06_quotes_the_committed_full_runs():
    """Lesson 6's closing numbers (not printed by a cell) are finetuning_shapes.json's."""
    root = NOTEBOOKS[0].parent.parent
    shapes = json.loads(
        (root / "benchmarks" / "results" / "finetuning_shapes.json").read_text(encoding="utf-8")
    )
    mean = shapes["table"]["rotten-tomatoes"]["minilm"]["1024"]["mean"]
    gap = shapes["intervals"]["rotten-tomatoes"]["1024"]["minilm - bag of words"]
    quoted = [f"{mean:.3f}", *(f"{abs(gap[k]):.3f}" for k in ("difference", "low", "high"))]
    assert all(("06", number) in NOT_OUTPUTS for number in quoted), quoted
