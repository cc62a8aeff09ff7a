"""What a reader meets speaks of BERT, not of how the project keeps its books.

A student has no ticket tracker and no list of goals the authors set themselves: the lessons (their
markdown, their code and what the code printed), the docs and the test names say what a thing does
or shows. Project tickets ("issue 52", "#52", "the issue's target"), the goals the course set
itself ("the targets this course set", "left as targets") and review finding codes ("G1", "S4",
"(D1-D3)") stay in commit messages and CHANGELOG.md, which is the project's own record."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# every tracked Markdown file a reader opens: README, docs, data cards, the assignments' READMEs
DOCS = sorted(
    {ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").rglob("*.md")}
    | set((ROOT / "data").rglob("*.md"))
    | set((ROOT / "minibert" / "teaching" / "assignment_files").rglob("*.md"))
)
DOCS = [p for p in DOCS if p.exists() and "cache" not in p.relative_to(ROOT).parts]

# "issue" is never needed: English has "problem", "question", "bug". The one use kept is a
# citation a student can follow: another project's tracker, named right before the number
# ("d2l's issue 2582", "codertimo/BERT-pytorch issue #49").
CITED_ELSEWHERE = re.compile(r"\b(?:d2l|[\w.-]+/[\w.-]+)(?:'s)? issues? #?\d+")
# the BERT paper's own section title, quoted in lesson 4
QUOTED_TITLE = re.compile(r"\bTask #\d\b")
BOOKKEEPING = {
    "the word 'issue'": re.compile(r"\bissues?\b", re.IGNORECASE),
    "a ticket number": re.compile(r"(?<![\w#&])#\d+\b"),
    "the course's own goals": re.compile(
        r"\btargets? (?:that )?(?:this|the) (?:course|project|lesson) set"
        r"|\bleft as\s+targets\b"
        r"|\b(?:the|a|its|our) targets? (?:is|are|was|were) (?:met|missed)\b",
        re.IGNORECASE,
    ),
    "a finding code": re.compile(
        r"\b(?:findings?|items?|points?) [A-Z]\d+\b"  # "finding G1"
        r"|\(\s*[A-Z]\d+(?:\s*[-,/]\s*[A-Z]\d+)+\s*\)"  # "(D1-D3)", "(S1, S2)"
        r"|\((?!F1\))[A-Z]\d\)"  # "(G1)", not "(F1)", the score
    ),
}


def bookkeeping(text: str) -> list[str]:
    """Each bookkeeping phrase in text, as 'what: ...context...'."""
    text = QUOTED_TITLE.sub("", CITED_ELSEWHERE.sub("", text))
    found = []
    for what, pattern in BOOKKEEPING.items():
        for match in pattern.finditer(text):
            context = text[max(0, match.start() - 40) : match.end() + 40].replace("\n", " ")
            found.append(f"{what}: ...{context}...")
    return found


def test_the_patterns_catch_bookkeeping_and_spare_ordinary_words():
    for text in (
        "the issue's target (recall@5 above BM25) is met",
        "Two of the targets this course set itself are therefore missed",
        "are left as\ntargets: the student",
        "as #52 asked",
        "the faults of finding G1",
        "the cases (D1-D3, S1)",
        "forged events (G1)",
    ):
        assert bookkeeping(text), text
    for text in (
        "the MLM loss averages over padding (d2l's issue 2582)",
        "(codertimo/BERT-pytorch issue #49, 2018)",
        'section 3.1 "Task #1: Masked LM"',
        "chosen: 15.18% (target 15%); more distinct prediction targets",
        "test F1 (F1), span F1 (F1 of the capitalised words), L2 1e-05, colours C0 and C1",
        "tokens 0 ##2 : 5 ##6 utc, &#39;",
    ):
        assert not bookkeeping(text), text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_lesson_speaks_of_the_projects_bookkeeping(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    found = []
    for i, cell in enumerate(nb["cells"]):
        texts = ["".join(cell["source"])]
        for out in cell.get("outputs", []):
            texts.append("".join(out.get("text", "")))
            texts += ["".join(out.get("data", {}).get(kind, "")) for kind in ("text/plain",)]
        found += [f"cell {i}: {hit}" for text in texts for hit in bookkeeping(text)]
    assert not found, f"{path.name}: say what a student can follow instead:\n" + "\n".join(found)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_doc_speaks_of_the_projects_bookkeeping(path):
    found = bookkeeping(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(ROOT)}:\n" + "\n".join(found)


# A name's leading code or number, as review findings and tickets were once written into names:
# test_52_..., test_g1_..., test_s1_s2_s3_...
CODED_NAME = re.compile(r"^test_(?:[a-z]\d+_|\d+_)")
# leading words that look like a code and are not one: the F1 score, a count of things
NOT_CODES = re.compile(r"^test_(?:f1_|\d+_(?:pairs|items|examples|words|sentences)_)")


def defined_test_functions():
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            is_function = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            if is_function and node.name.startswith("test_"):
                yield path, node.name


def test_test_names_say_the_behaviour_not_a_ticket_or_finding_code():
    coded = [
        f"{path.relative_to(ROOT)}: {name}"
        for path, name in defined_test_functions()
        if (CODED_NAME.match(name) and not NOT_CODES.match(name)) or "issue" in name
    ]
    assert not coded, "name these tests by the behaviour they check:\n" + "\n".join(coded)
