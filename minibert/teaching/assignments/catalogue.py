"""The assignments: what each one hands out, teaches and grades, part by part; list, new, which.

Each assignment is package data (``minibert/teaching/assignment_files/NAME``): a README with the
task, the learning goals and the rules, and the student's file, whose bodies raise
NotImplementedError. Its parts are checks.py's checks, each worth some points.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from minibert.teaching import exercises
from minibert.teaching.assignments.checks import (
    Check,
    attention_heads,
    attention_multi_head,
    checked,
    encoder_attention,
    encoder_embeddings,
    encoder_layer,
    encoder_model,
    finetuning_loop,
)
from minibert.utils import folder_problem

FILES = Path(__file__).parent.parent / "assignment_files"
MARKER = ".minibert-assignment.json"  # written by `new`: which assignment a folder holds


@dataclass(frozen=True)
class Part:
    """One graded piece of an assignment: its points and the check of the student's module."""

    title: str
    points: int
    check: Check  # the student's module (remote) -> (passed, one-line verdict)


@dataclass(frozen=True)
class Assignment:
    """An assignment: the student's file, what it teaches, and its parts."""

    name: str
    title: str
    file: str
    lesson: str
    parts: tuple[Part, ...]

    @property
    def points(self) -> int:
        """The total points."""
        return sum(p.points for p in self.parts)


# --- the assignments (masking, nsp, finetuning, spans and retrieval are notebooks' checkers) -------------

ASSIGNMENTS: dict[str, Assignment] = {
    a.name: a
    for a in (
        Assignment(
            "attention",
            "Attention: scaled dot-product, masks, heads, multi-head self-attention",
            "attention.py",
            "02_attention_math",
            (
                Part(
                    "scaled dot-product attention",
                    3,
                    checked("scaled_dot_product_attention", exercises.check_attention),
                ),
                Part("padding mask", 1, checked("padding_mask", exercises.check_padding_mask)),
                Part("split and merge heads", 2, attention_heads),
                Part("multi-head self-attention", 4, attention_multi_head),
            ),
        ),
        Assignment(
            "encoder",
            "The encoder: embeddings, self-attention, the post-LN layer, BertModel on MiniLM",
            "encoder.py",
            "03_encoder",
            (
                Part("embeddings", 2, encoder_embeddings),
                Part("self-attention", 2, encoder_attention),
                Part("encoder layer", 3, encoder_layer),
                Part("BertModel with MiniLM's weights", 3, encoder_model),
            ),
        ),
        Assignment(
            "masking",
            "Pretraining data: BERT's masking, the MLM loss, accuracy at [MASK]",
            "masking.py",
            "04_masked_language_model",
            (
                Part("masking procedure", 4, checked("mask_tokens", exercises.check_masking)),
                Part("MLM loss", 3, checked("mlm_loss", exercises.check_mlm_loss)),
                Part(
                    "accuracy at the [MASK] positions",
                    3,
                    checked("mask_accuracy", exercises.check_mask_accuracy),
                ),
            ),
        ),
        Assignment(
            "nsp",
            "Sentence-pair pretraining data: NSP pairs, SOP pairs, the NSP loss",
            "nsp.py",
            "05_next_sentence_prediction",
            (
                Part("NSP pairs", 5, checked("nsp_pairs", exercises.check_nsp_pairs)),
                Part("SOP pairs", 3, checked("sop_pairs", exercises.check_sop_pairs)),
                Part("NSP loss", 2, checked("nsp_loss", exercises.check_nsp_loss)),
            ),
        ),
        Assignment(
            "finetuning",
            "The fine-tuning loop: an evaluation, the warm-up schedule, AdamW, clipping, the best "
            "evaluation kept",
            "finetuning.py",
            "06_fine_tuning",
            (
                Part("evaluation", 2, checked("evaluate", exercises.check_evaluation)),
                Part(
                    "learning-rate schedule",
                    2,
                    checked("lr_multiplier", exercises.check_lr_schedule),
                ),
                Part("fine-tuning loop", 6, finetuning_loop),
            ),
        ),
        Assignment(
            "spans",
            "Answering with a span: the best span, the answer over windows, SQuAD's F1",
            "spans.py",
            "07_tagging_pairs_and_spans",
            (
                Part("best span in a window", 4, checked("best_span", exercises.check_best_span)),
                Part(
                    "the answer over windows",
                    4,
                    checked("answer_text", exercises.check_answer_over_windows),
                ),
                Part("SQuAD F1", 2, checked("squad_f1", exercises.check_squad_f1)),
            ),
        ),
        Assignment(
            "retrieval",
            "Judging, combining and training retrievers: recall@k, MRR@10, the hybrid's "
            "standardised scores, the in-batch contrastive loss",
            "retrieval.py",
            "09_search",
            (
                Part("recall@k", 2, checked("recall_at_k", exercises.check_recall_at_k)),
                Part("MRR@10", 2, checked("mrr_at_10", exercises.check_mrr)),
                Part("hybrid scores", 3, checked("hybrid_scores", exercises.check_hybrid_scores)),
                Part(
                    "in-batch contrastive loss",
                    3,
                    checked("in_batch_loss", exercises.check_in_batch_loss),
                ),
            ),
        ),
    )
}


# --- list, new, grade --------------------------------------------------------------------------


def get(name: str) -> Assignment:
    """The assignment called name, or a ValueError listing the known ones."""
    if name not in ASSIGNMENTS:
        raise ValueError(
            f"unknown assignment {name!r}; the assignments are: {', '.join(ASSIGNMENTS)}"
        )
    return ASSIGNMENTS[name]


def new(name: str, folder: str | Path, overwrite: bool = False) -> Path:
    """Copy assignment name's skeleton and README into folder (created); return the folder."""
    assignment = get(name)
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise FileExistsError(f"{folder} is a file; give a folder for the assignment")
    if problem := folder_problem(folder):  # before anything is written
        raise ValueError(problem)
    others = [
        a.file for a in ASSIGNMENTS.values() if a.name != name and (folder / a.file).is_file()
    ]
    with contextlib.suppress(ValueError):
        held = which(folder) if (folder / MARKER).is_file() else None
        others += [f"the marker of {held!r}"] if held not in (None, name) else []
    if others:
        raise FileExistsError(
            f"{folder} already holds another assignment's work ({', '.join(others)}); "
            "choose another folder"
        )
    source = FILES / name
    targets = [folder / f.name for f in sorted(source.iterdir()) if f.is_file()]
    existing = [t for t in targets if t.exists()]
    if existing and not overwrite:
        raise FileExistsError(
            f"{', '.join(str(t) for t in existing)} already exist; choose another folder or "
            "pass overwrite=True (--overwrite), which replaces them"
        )
    folder.mkdir(parents=True, exist_ok=True)
    for target in targets:
        shutil.copyfile(source / target.name, target)
    (folder / MARKER).write_text(
        json.dumps({"assignment": assignment.name, "file": assignment.file}) + "\n",
        encoding="utf-8",
    )
    return folder


def which(folder: str | Path) -> str:
    """The assignment a folder holds: from the marker `new` wrote, else from the file it holds."""
    folder = Path(folder)
    marker = folder / MARKER
    if marker.is_file():
        try:
            return str(json.loads(marker.read_text(encoding="utf-8"))["assignment"])
        except (ValueError, KeyError, TypeError) as exc:  # bad JSON, bad UTF-8, no such key
            raise ValueError(
                f"{marker} is damaged ({type(exc).__name__}: {exc}); pass --name, or delete it"
            ) from None
    found = [a.name for a in ASSIGNMENTS.values() if (folder / a.file).is_file()]
    if len(found) == 1:
        return found[0]
    raise ValueError(
        f"cannot tell which assignment {folder} holds (no {MARKER}, and "
        f"{'several' if found else 'none'} of {', '.join(a.file for a in ASSIGNMENTS.values())}); "
        "pass --name"
    )
