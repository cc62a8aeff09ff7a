"""``distill``: a teacher encoder's mean-pooled vectors of the training articles' texts (computed
once, cached) -> a student BERT regressing them through a projection -> the student's folder,
which ``minibert search`` reads as any encoder (mean pooling)."""

from __future__ import annotations

import dataclasses
import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minibert import assets, distributed
from minibert.options import POSITIVE_INT, check_fields, inherit, nested, one_of, option, saved
from minibert.recipes.outputs import RUN_FOLDER, OutputFolder
from minibert.recipes.pretrain_recipe import PretrainOptions
from minibert.recipes.shared import SOURCE, check_resume, model_files, options_of, say, start
from minibert.retrieval.distillation import (
    UNITS,
    distill_encoder,
    teacher_vectors,
    training_texts,
)
from minibert.retrieval.encoders import load_encoder
from minibert.training import TrainOptions
from minibert.utils import atomic_write, default_device

__all__ = ["DistillOptions", "DistillResult", "distill"]


@dataclass
class DistillResult:
    """What a distillation run leaves: its folder, history, the texts and the wall time."""

    folder: Path
    history: list[dict[str, float]]
    texts: int = 0
    teacher_cache: Path | None = None
    seconds: float = 0.0
    paused: bool = False

    def report(self) -> str:
        """What ``minibert distill`` prints at the end."""
        if self.paused:
            return (
                f"paused at step {len(self.history)}; the run's state is in {self.folder}/"
                f"{RUN_FOLDER} (the same command with --resume continues it)"
            )
        last = self.history[-1]
        first = self.history[0]
        return "\n".join(
            [
                f"distilled on {self.texts:,} texts of the training articles: mean squared error "
                f"{first['train_loss']:.5f} at step 1, {last['train_loss']:.5f} at step "
                f"{last['step']:,}",
                f"teacher vectors cached in {self.teacher_cache}",
                f"saved the student (a BERT, mean-pooled: minibert search {self.folder} "
                f'"QUESTION") to {self.folder}',
                f"wall time: {self.seconds:.0f} s",
            ]
        )


def _cache_problem(value: object) -> str | None:
    """What is wrong with --cache as the teacher vectors' folder (not a path; a file, or a path
    under one), or None: checked when the options are made, before any work. (Whether it can be
    written is teacher_vectors' to say: a read-only folder that holds the vectors is read.)"""
    if SOURCE(value):
        return "must be a path to a folder"
    path = Path(value)
    existing = next(p for p in (path, *path.parents) if p.exists() or p.is_symlink())
    if not existing.is_dir():
        return f"must be a folder for the teacher's vectors ({existing} is not a folder)"
    return None


@dataclass(kw_only=True)
class DistillOptions:
    """``distill``'s options: teacher, student, the texts, the cache, and the loop's (``train``)."""

    train: TrainOptions = nested(
        TrainOptions,
        hide=("group_by_length", "eval_every", "eval_batches"),  # texts of mixed lengths; no dev
        steps=2000,
        lr=1e-3,
        batch_size=64,
        group_by_length=True,
        eval_every=None,
    )
    teacher: str | Path = option(
        "minilm", help="the encoder whose mean-pooled vectors are regressed", check=SOURCE
    )
    student: str | Path = option(
        "course", help="the BERT that learns them: 'course' or a model folder", check=SOURCE
    )
    units: str = option(
        "both",
        help="the training articles' sentences, paragraphs or both (no dev or test article)",
        check=one_of(*UNITS),
    )
    train_examples: int | None = option(
        None,
        help="distill on a random subset of this many texts (default: all)",
        check=POSITIVE_INT,
    )
    cache: str | Path | None = option(
        None,
        help="folder for the teacher's vectors, keyed by its fingerprint and the texts (default: "
        "teacher-vectors in minibert's asset cache)",
        resume="free",
        save=False,
    )
    overwrite: bool = inherit(PretrainOptions, "overwrite")

    def __post_init__(self) -> None:
        check_fields(self)
        if self.cache is not None and (problem := _cache_problem(self.cache)):
            raise ValueError(f"cache {problem}, got {str(self.cache)!r}")  # one line, exit 2


def distill(
    out: str | Path, options: DistillOptions | None = None, **changes: Any
) -> DistillResult:
    """Distill the teacher into the student on the training articles' texts; save it in out.

    options is a DistillOptions; keyword changes set or override its options (the loop's
    included): ``distill("runs/distilled", steps=3000, lr=1e-3)``. The teacher's vectors are
    computed once and cached; the student (its BERT only: the projection keeps cosines, so it is
    not needed to search) is saved as a folder with config.json, model.safetensors, the tokenizer
    and history.json."""
    o = options_of(DistillOptions, options, changes)
    folder = OutputFolder(
        out, overwrite=o.overwrite, resume=o.train.resume, writer=distributed.is_main()
    )
    teacher, student = load_encoder(o.teacher), load_encoder(o.student)
    if teacher.model.config.hidden_size < student.model.config.hidden_size:
        raise ValueError(
            f"the teacher ({teacher.model.config.hidden_size} wide) is narrower than the student "
            f"({student.model.config.hidden_size}): distill into a student at most as wide"
        )
    if o.train.resume:
        check_resume(folder, o)
    with folder:
        started = start(o.train)
        texts = training_texts(o.units)
        if o.train_examples is not None and o.train_examples < len(texts):
            chosen = random.Random(o.train.seed).sample(range(len(texts)), o.train_examples)
            texts = [texts[i] for i in sorted(chosen)]
        cache = Path(o.cache) if o.cache is not None else assets.cache_dir() / "teacher-vectors"
        say(f"teacher vectors of {len(texts):,} texts (cached in {cache})")
        targets = teacher_vectors(teacher, texts, cache)
        filled = {"device": str(default_device()), "eval_every": o.train.steps}  # no dev set
        loop = dataclasses.replace(
            o.train, **{k: v for k, v in filled.items() if getattr(o.train, k) is None}
        )
        if distributed.is_main():
            folder.run.mkdir(exist_ok=True)
            atomic_write(folder.run / "recipe.json", json.dumps(saved(o), indent=1) + "\n")
        distributed.barrier()
        student.model.train()
        history = distill_encoder(student, texts, targets, loop, out_dir=folder.run)
        seconds = time.perf_counter() - started
        paused = len(history) < loop.steps  # by stop_after: the state stays in the run folder
        if paused or not distributed.is_main():  # or a process that writes nothing (torchrun)
            return DistillResult(folder.path, history, len(texts), cache, seconds, paused)
        files = {"history.json": history, "recipe.json": saved(o) | {"texts": len(texts)}}
        folder.put_in_place(
            model_files(student.model, student.tokenizer, files), by="minibert distill"
        )
    return DistillResult(folder.path, history, len(texts), cache, time.perf_counter() - started)
