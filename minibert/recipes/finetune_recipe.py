"""``finetune``: a pretrained folder (or random weights of its size) -> a task's data -> loop,
keeping the evaluation that is best by the task's dev measure -> a fine-tuned folder."""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from minibert import distributed, tasks
from minibert.config import POOLINGS, RENAMED_POOLINGS, BertConfig
from minibert.options import (
    COUNT,
    FRACTION,
    POSITIVE_INT,
    UNIT_INTERVAL,
    check_fields,
    inherit,
    nested,
    one_of,
    option,
    saved,
)
from minibert.recipes.outputs import RUN_FOLDER, OutputFolder
from minibert.recipes.pretrain_recipe import PretrainOptions
from minibert.recipes.shared import (
    SOURCE,
    check_resume,
    model_files,
    model_folder,
    options_of,
    start,
)
from minibert.tokenization import BertTokenizer
from minibert.training import WARMUP_FRACTION, TrainOptions, train
from minibert.utils import atomic_write, default_device

__all__ = ["FinetuneOptions", "FinetuneResult", "default_lr", "finetune"]

MAX_EVALUATIONS = 10  # dev evaluations per fine-tuning run, at most
MIN_STEPS = 100  # finetune's default steps: --epochs' worth, but at least this many (#52)
SMALL_MODEL_LR = 1e-3  # finetune's default for the course's small models (default_lr)
LARGE_MODEL_LR = 5e-5  # and for MiniLM-sized and larger ones


@dataclass
class FinetuneResult:
    """What a fine-tuning run leaves: its folder, history and the best dev and the test measures."""

    folder: Path
    history: list[dict[str, float]]
    dev: dict[str, Any] = field(default_factory=dict)
    test: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    selection: dict[str, Any] = field(default_factory=dict)  # measure, step, value, ties
    paused: bool = False  # stopped by stop_after: resume continues
    task: str | None = None  # the task's name: its test line

    def report(self) -> str:
        """What ``minibert finetune`` prints at the end: the dev measure per evaluation, the
        evaluation kept, and the test scores by the task's names."""
        if self.paused:
            return (
                f"paused at step {len(self.history)}; the run's state is in {self.folder}/"
                f"{RUN_FOLDER} (the same command with --resume continues it)"
            )
        chosen = self.selection
        lines = [
            f"step {h['step']:>6,}: dev {chosen['measure']} {v:.4f}"
            for h, v in zip(self.evaluations, chosen["values"])
        ]
        ties = f" (tied with step {', '.join(map(str, chosen['ties']))}: the earliest kept)"
        lines.append(
            f"kept step {chosen['step']:,}: dev {chosen['measure']} {chosen['value']:.4f}"
            + (ties if chosen["ties"] else "")
        )
        lines.append(_test_line(self.test, self.task))
        if chosen.get("trivial"):
            lines.append(
                f"note: the kept evaluation is at the trivial level (dev {chosen['measure']} "
                f"{chosen['value']:.3f}, within {tasks.TRIVIAL_MARGIN} of a model that gives one "
                "label everywhere): it learned next to nothing; try more steps (--steps) or "
                "another rate (minibert sweep)"
            )
        lines.append(f"saved the fine-tuned model, tokenizer and results.json to {self.folder}")
        return "\n".join([*lines, f"wall time: {self.seconds:.0f} s"])

    @property
    def evaluations(self) -> list[dict[str, float]]:
        """The history's records that hold a dev evaluation."""
        return [h for h in self.history if any(k.startswith("eval_") for k in h)]


def _test_line(test: dict[str, Any], task: str | None) -> str:
    """The test scores by the task's names (``Task.test_line``: its shape's line, or its own)."""
    if task in tasks.TASKS:
        return tasks.get(task).test_line(test)
    head = f"test ({test['examples']:,} {test['unit']}s): "  # a result of no registered task
    return head + tasks.shapes.label_line(test)


def default_lr(config: BertConfig, task: tasks.Task | None = None) -> float:
    """finetune's learning rate when none is given, chosen by the model's size.

    SMALL_MODEL_LR for the course's small models (hidden size below 384); BERT's small steps,
    LARGE_MODEL_LR, for larger pretrained models (MiniLM, BERT-base), unless the task names its
    own rate for them (``Task.large_model_lr``). The rates were chosen on dev by the sweeps in
    ``benchmarks/``; what they measured is in ``benchmarks/results/``.
    """
    if config.hidden_size < 384:
        return SMALL_MODEL_LR
    return LARGE_MODEL_LR if task is None or task.large_model_lr is None else task.large_model_lr


def _rate(lr: float) -> str:
    """A learning rate as the help writes it: 1e-3, 5e-5."""
    mantissa, exponent = f"{lr:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


_LR_NOTE = (
    f"(default: measured per model size: {_rate(SMALL_MODEL_LR)} for the course's small models, "
    f"{_rate(LARGE_MODEL_LR)} for MiniLM and larger, or the task's own rate for them: "
    + ", ".join(
        f"{_rate(t.large_model_lr)} on {t.name}" for t in tasks.TASKS.values() if t.large_model_lr
    )
    + ")"
)


@dataclass(kw_only=True)
class FinetuneOptions:
    """``finetune``'s options: the model, the task and its data, and the loop's (``train``: a
    whole TrainOptions, fine-tuning's defaults; what is left None is filled from the task)."""

    train: TrainOptions = nested(
        TrainOptions,
        hide=("group_by_length",),
        group_by_length=True,
        steps=None,
        lr=None,
        eval_every=None,
        notes={
            "steps": f"(default: --epochs' worth, at least {MIN_STEPS}, so that a small subset "
            "gets more epochs; benchmarks/finetune_defaults.py times them)",
            "lr": _LR_NOTE,
            "eval_every": "(default: after each epoch, at most --evaluations times)",
            "warmup_steps": "(default: --warmup-fraction of the steps)",
        },
    )
    model: str | Path = option(
        "course",
        help="'course' (the course checkpoint, Wikipedia), 'course-reviews' (the course "
        "checkpoint continued on the training movies' review text), 'minilm' (the pretrained "
        "MiniLM) or a model folder",
        check=SOURCE,
    )
    scratch: bool = option(
        False,
        help="start from random weights of the same size and vocabulary (what pretraining buys)",
    )
    task: str = option(
        "rotten-tomatoes",
        help=lambda: "; ".join(f"{t.name}: {t.description}" for t in tasks.TASKS.values()),
        check=tasks.check_name,
    )
    epochs: int = option(3, help="passes over the training examples", check=POSITIVE_INT)
    max_length: int | None = option(
        None,
        help="tokens per example (per window of a long context), [CLS]/[SEP] included (default: "
        "the task's, 128, or 256 for wiki-qa; at most the model's positions)",
        check=POSITIVE_INT,
    )
    train_examples: int | None = option(
        None,
        help="train on a random subset of this many examples (default: all)",
        check=POSITIVE_INT,
    )
    pooling: str | None = option(
        None,
        help="what a sentence task's classifier reads: 'pooler' (the default: BERT's pooler on "
        "[CLS], BERT's head), 'cls' (the raw [CLS] vector, no pooler) or 'mean' (the tokens' "
        "mean, as MiniLM's sentence training pooled); transformers cannot load the last two "
        "heads; refused for the other tasks",
        check=one_of(*POOLINGS, renamed=RENAMED_POOLINGS),
    )
    freeze_encoder: bool = option(
        False, help="train only the classifier on frozen features (a linear probe)"
    )
    reinit_layers: int = option(
        0,
        help="re-initialise the pooler and the top N encoder layers first (Zhang et al., 2021)",
        check=COUNT,
    )
    dropout: float | None = option(
        None,
        help="dropout while fine-tuning (hidden and attention; default: the model's own, BERT's "
        f"{BertConfig.hidden_dropout:g}); with 0, a run on N processes (torchrun) equals the run "
        "on one",
        check=FRACTION,
    )
    hard_negatives: int = option(
        0,
        help="wiki-search only: N hard negatives per training question, the paragraphs BM25 "
        "ranks highest that are not its own (DPR's: 1), scored beside the in-batch ones "
        "(default: 0, in-batch negatives only); refused for the other tasks",
        check=COUNT,
    )
    warmup_fraction: float = option(
        WARMUP_FRACTION,
        help="share of the steps spent warming the learning rate up",
        check=UNIT_INTERVAL,
    )
    evaluations: int = option(
        MAX_EVALUATIONS,
        help="dev evaluations at most (after each epoch, or every few epochs on a small subset)",
        check=POSITIVE_INT,
    )
    overwrite: bool = inherit(PretrainOptions, "overwrite")

    def __post_init__(self) -> None:
        check_fields(self)


def finetune(
    out: str | Path, options: FinetuneOptions | None = None, **changes: Any
) -> FinetuneResult:
    """Fine-tune a pretrained BERT folder (or a random one of its size) on a task; save it in out.

    options is a FinetuneOptions; keyword changes set or override its options (the loop's
    included): ``finetune("runs/rt", model="course", train_examples=1024, lr=1e-3)``. Evaluates
    on dev after every epoch (at most `evaluations` times: a small subset trained for many epochs
    is evaluated every few epochs), keeps the evaluation that is best by the task's dev measure,
    then measures test and saves a Hugging Face folder (config with the label names, weights,
    tokenizer, results.json). Training batches hold texts of similar length (group_by_length),
    which halves the padding, unless the task's label goes with length (wiki-rerank).
    freeze_encoder trains only the classifier (a linear probe); reinit_layers re-initialises the
    pooler and the top N encoder layers before training (Zhang et al., 2021). lr=None takes ``default_lr`` of the model's size (SMALL_MODEL_LR for the course's
    small models, LARGE_MODEL_LR for MiniLM). Every loop option works as in pretraining: grad_accum_steps,
    checkpoint_every with resume (the best evaluation's weights are kept in the run folder too),
    stop_after, precision, device, threads.
    """
    o = options_of(FinetuneOptions, options, changes)
    spec = tasks.get(o.task)
    if spec.shape == "text":  # a sentence task's classifier: BERT's head unless told
        o = dataclasses.replace(o, pooling=o.pooling or "pooler")
    elif o.pooling is not None:  # before anything is written
        vector = spec.shape == "vector"  # wiki-search: the encoder is mean-pooled, as search reads
        why = " (its encoder is mean-pooled, as minibert search reads it)" if vector else ""
        raise ValueError(
            f"pooling applies to a sentence task's classifier; {spec.name} is a {spec.shape} "
            f"task{why}: leave out --pooling, got {o.pooling!r}"
        )
    if o.hard_negatives and spec.hard_negatives is None:  # before anything is written
        takers = ", ".join(t.name for t in tasks.TASKS.values() if t.hard_negatives)
        raise ValueError(
            f"hard negatives apply to {takers} only (a retriever trained on questions with "
            f"in-batch negatives); {spec.name} takes none: leave out --hard-negatives, got "
            f"{o.hard_negatives}"
        )
    folder = OutputFolder(
        out, overwrite=o.overwrite, resume=o.train.resume, writer=distributed.is_main()
    )
    source = model_folder(o.model)
    if o.max_length is None:  # the task's own length, at most the model's positions
        positions = BertConfig.from_hf_config(source).max_position_embeddings
        o = dataclasses.replace(o, max_length=min(spec.max_length, positions))
    distributed.check_split(o.train.batch_size)
    if o.train.resume:
        check_resume(folder, o)
    with folder:
        return _finetune(o, spec, source, folder)


def _finetune_loop(o: FinetuneOptions, config: BertConfig, examples: int) -> TrainOptions:
    """The loop's options: the user's, with what they left None filled for this task and model
    (steps from epochs, lr by the model's size, warm-up from warmup_fraction, evaluations)."""
    grouped = o.train.group_by_length and tasks.get(o.task).group_by_length  # the task may refuse
    loop = dataclasses.replace(o.train, group_by_length=grouped)
    per_epoch = examples // (loop.batch_size * loop.grad_accum_steps)
    if per_epoch < 1:
        raise ValueError(
            f"{examples} training examples is fewer than one step of {loop.batch_size} x "
            f"{loop.grad_accum_steps} (batch_size x grad_accum_steps)"
        )
    steps = loop.steps or max(o.epochs * per_epoch, MIN_STEPS)  # a small subset: more epochs
    filled = {
        "steps": steps,
        "lr": default_lr(config, tasks.get(o.task)) if loop.lr is None else loop.lr,
        "warmup_steps": round(o.warmup_fraction * steps),
        "eval_every": min(max(per_epoch, math.ceil(steps / o.evaluations)), steps),
        "device": str(default_device()),
    }
    return dataclasses.replace(
        loop, **{k: v for k, v in filled.items() if getattr(loop, k) is None}
    )


def _finetune(
    o: FinetuneOptions, spec: tasks.Task, source: Path, folder: OutputFolder
) -> FinetuneResult:
    """finetune's work, inside its locked output folder."""
    started = start(o.train)
    tok = BertTokenizer.from_pretrained(source)
    pooling = o.pooling or "pooler"  # None: not a sentence task, its head reads no pooled vector
    config = BertConfig.from_hf_config(source).replace(
        num_labels=spec.head_size, label_names=spec.label_names, classifier_pooling=pooling
    )
    if not o.reinit_layers <= config.num_layers:
        raise ValueError(
            f"reinit_layers must be in [0, {config.num_layers}], got {o.reinit_layers}"
        )
    if o.max_length > config.max_position_embeddings:
        raise ValueError(
            f"max_length {o.max_length} exceeds the model's {config.max_position_embeddings} "
            "positions"
        )
    data = spec.datasets(tok, o.max_length, o.train_examples, o.train.seed)
    if o.hard_negatives:  # the training questions' mined negatives (wiki-search)
        data = (spec.hard_negatives(data[0], o.hard_negatives), data[1], data[2])
    loop = _finetune_loop(o, config, len(data[0]))
    net = _classifier(o, spec, source, config)
    keeper = _BestEvaluation(spec.selection, net, folder.run if _keeps_state(o) else None)
    if _keeps_state(o) and distributed.is_main():
        folder.run.mkdir(exist_ok=True)
        atomic_write(folder.run / "recipe.json", json.dumps(saved(o), indent=1) + "\n")
    collate = lambda batch: spec.collate(batch, tok.pad_token_id)  # noqa: E731  (its shape's)
    history = train(
        net,
        data[0],
        _by_length(data[1]),  # the same measures; batches of similar length pad less
        loop,
        collate_fn=collate,
        metrics_fn=spec.metrics,
        out_dir=folder.run if _keeps_state(o) else None,
        on_eval=keeper.update,
    )
    if len(history) < loop.steps or not distributed.is_main():  # paused; or not the writer
        seconds, paused = time.perf_counter() - started, len(history) < loop.steps
        return FinetuneResult(folder.path, history, seconds=seconds, paused=paused)
    trained = _Trained(net, tok, collate, data, history, keeper)
    return _finetune_results(o, spec, loop, trained, folder, started)


def _keeps_state(o: FinetuneOptions) -> bool:
    """Whether the run keeps a resumable state in its run folder (checkpoints, pauses, resume)."""
    return bool(o.train.checkpoint_every or o.train.stop_after or o.train.resume)


class _BestEvaluation:
    """The evaluation that is best by the task's dev measure so far, and its weights (in memory,
    and in the run folder when the run can be resumed)."""

    def __init__(self, measure: tasks.Selection, net: Any, run: Path | None):
        self.measure, self.net, self.run = measure, net, run
        self.value, self.step, self.state = None, None, None
        if run is not None and (run / "best.pt").is_file():  # a resumed run's best so far
            kept = torch.load(run / "best.pt", map_location="cpu", weights_only=True)
            self.value, self.step, self.state = kept["value"], kept["step"], kept["state"]

    def update(self, history: list[dict]) -> None:
        """After an evaluation: keep it if it beats the best (a tie keeps the earlier one)."""
        value = self.measure.of(history[-1])
        if not self.measure.better(value, self.value):
            return
        self.value, self.step = value, history[-1]["step"]
        self.state = {k: v.detach().clone() for k, v in self.net.state_dict().items()}
        if self.run is not None and distributed.is_main():
            kept = {"value": value, "step": self.step, "state": self.state}
            atomic_write(self.run / "best.pt", lambda path: torch.save(kept, path))


@dataclasses.dataclass(frozen=True)
class _Trained:
    """A finished run, as its measuring and writing need it: the network, its tokenizer and
    collate, the task's (train, dev, test) datasets, the loop's history and the best evaluation."""

    net: Any
    tok: BertTokenizer
    collate: Callable[[Sequence[dict]], dict]
    data: tuple[Sequence, Sequence, Sequence]
    history: list[dict]
    keeper: _BestEvaluation


def _finetune_results(
    o: FinetuneOptions,
    spec: tasks.Task,
    loop: TrainOptions,
    trained: _Trained,
    folder: OutputFolder,
    started: float,
) -> FinetuneResult:
    """Measure the kept evaluation's weights on dev and test; write the folder; the result."""
    net, keeper, history = trained.net, trained.keeper, trained.history
    net.load_state_dict(keeper.state)
    dev = _measure(net, trained.data[1], trained.collate, spec)
    test = _measure(net, trained.data[2], trained.collate, spec)
    evaluated = [h for h in history if any(k.startswith("eval_") for k in h)]
    values = [keeper.measure.of(h) for h in evaluated]
    selection = {
        "measure": keeper.measure.name,
        "higher_is_better": keeper.measure.higher_is_better,
        "step": keeper.step,
        "value": keeper.value,
        "values": values,
        "trivial": keeper.measure.near_trivial(keeper.value),
        "ties": [
            h["step"]
            for h, v in zip(evaluated, values)
            if v == keeper.value and h["step"] != keeper.step
        ],
    }
    results = {
        "task": o.task,
        "model": str(o.model),
        "scratch": o.scratch,
        "selection": selection,
        "dev": dev,
        "test": test,
        "options": saved(o) | saved(loop),  # with what the recipe filled (steps, lr, ...)
        "train_size": len(trained.data[0]),
        "seconds": round(time.perf_counter() - started, 1),
    }
    files = {"history.json": history, "results.json": results}
    folder.put_in_place(model_files(net, trained.tok, files), by="minibert finetune")
    seconds = time.perf_counter() - started
    return FinetuneResult(folder.path, history, dev, test, seconds, selection, task=o.task)


def _classifier(o: FinetuneOptions, spec: tasks.Task, source: Path, config: BertConfig):
    """The task's model: the folder's weights with a new head (or random weights for scratch),
    its top layers re-initialised and its encoder frozen as the options say."""
    drop = (
        {} if o.dropout is None else {"hidden_dropout": o.dropout, "attention_dropout": o.dropout}
    )
    if o.scratch:
        net = spec.model_class(config.replace(**drop))  # the same size, random weights
    else:  # a new classifier of the task's size, unless the folder holds one already
        net = spec.model_class.from_pretrained(
            source,
            num_labels=spec.head_size,  # its shape's: one per label, or one score per choice
            label_names=spec.label_names,
            classifier_pooling=config.classifier_pooling,
            **drop,
        )
    if o.reinit_layers:
        parts = [*net.bert.encoder.layers[-o.reinit_layers :]]
        if getattr(net.bert, "pooler", None) is not None:
            parts.append(net.bert.pooler)
        for part in parts:
            net.init_weights(part)
    if o.freeze_encoder:
        for p in net.bert.parameters():
            p.requires_grad_(False)
    return net


def _measure(net, data, collate, spec: tasks.Task) -> dict[str, Any]:
    """The task's scores on a dataset (its unit counted) and each item's prediction, in order."""
    predictions = spec.predict(net, data, collate)
    return {**spec.scores(spec.gold(data), predictions), "predictions": predictions}


def _by_length(data: Sequence) -> list:
    """The examples of a dataset, longest first: evaluation batches of similar length pad less."""
    return sorted((data[i] for i in range(len(data))), key=lambda item: -len(item["input_ids"]))
