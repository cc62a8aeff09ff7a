"""What a fine-tuning task is (``Task``, its ``Selection`` and its baselines) and the registry.

A task names its shape (``shapes.Shape``: model class, head size, collate, predictions, result
line, command) and brings its data, measures and baselines."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minibert import finetuning
from minibert.tasks.shapes import SHAPES, Shape, register_shape

__all__ = [
    "Loader",
    "SHAPES",
    "TASKS",
    "TRIVIAL_MARGIN",
    "Baseline",
    "Selection",
    "Task",
    "check_name",
    "get",
    "of_folder",
    "register",
    "register_shape",
    "Shape",
    "label_scores",
    "subset",
]


def label_scores(task: Task, gold: Sequence, predictions: Sequence) -> dict[str, Any]:
    """Accuracy, balanced accuracy, precision, recall and F1 of the positive label (label 1), the
    confusion matrix, over every scored text or word; and how many there were."""
    if gold and isinstance(gold[0], list):  # a list per text: score the words
        gold = [y for text in gold for y in text]
        predictions = [y for text in predictions for y in text]
    measured = finetuning.scores(gold, predictions, len(task.labels))
    return {**measured, "positive": task.positive, "unit": task.unit, "examples": len(gold)}


TRIVIAL_MARGIN = 0.05  # a dev measure this close to the trivial level counts as that level


@dataclass(frozen=True)
class Selection:
    """The dev measure that picks the best evaluation: its name, its value in an evaluation record
    (the history's eval_* measures), and whether higher is better. Ties keep the earlier one."""

    name: str
    of: Callable[[dict[str, float]], float]
    higher_is_better: bool = True
    trivial: float = 0.0  # what a model that gives one label everywhere (no spans) scores

    def near_trivial(self, value: float) -> bool:
        """Whether a dev value is at the trivial level, or within TRIVIAL_MARGIN of it: a model
        that learned next to nothing (a restart or more steps is due)."""
        if value is None or value != value:  # no evaluation, or NaN
            return True
        gap = value - self.trivial if self.higher_is_better else self.trivial - value
        return gap <= TRIVIAL_MARGIN

    def better(self, value: float, best: float | None) -> bool:
        """True when value beats the best so far (strictly: a tie keeps the earlier evaluation)."""
        if best is None:
            return True
        return value > best if self.higher_is_better else value < best


@dataclass(frozen=True)
class Baseline:
    """A rule or a small model a fine-tuned BERT must beat, scored at the same positions.

    ``predict(train, dev, test, tokenizer)`` gets the task's three datasets (a baseline may fit
    on train and choose a setting on dev) and returns its answers for test as the task's model
    gives them (``Shape.predict``: one per item, in order; a list per text for a word task).
    """

    name: str
    predict: Callable[[Any, Any, Any, Any], list[int]]


# (tokenizer, max_length, train_examples or None, seed) -> (train, dev, test) datasets
Loader = Callable[[Any, int, "int | None", int], tuple[Any, Any, Any]]
# (train dataset, n) -> the same examples, each with its n mined hard negatives
HardNegatives = Callable[[Any, int], Any]


@dataclass(frozen=True)
class Task:
    """One fine-tuning task: what the CLI, the recipe and the benchmark need to know about it."""

    name: str
    labels: tuple[str, ...]  # index = label id; config.json's id2label
    shape: str  # a key of SHAPES: "text" (a label per text or pair), "words", "span", "choice"
    unit: str  # what one scored item is ("snippet", "word"): results say "accuracy per word"
    load: Loader
    metrics: Callable  # (batch, model output) -> {name: (correct, count)}, for training.train
    selection: Selection  # the dev measure that keeps the best evaluation
    description: str  # one line for --help
    baselines: tuple[Baseline, ...] = ()  # measured beside the model, at the same positions
    score: Callable[[Task, Sequence, Sequence], dict] = label_scores  # (task, gold, predictions)
    max_length: int = 128  # pieces per example (per window of a long context) by default
    pairs: bool = False  # its input is a pair of texts (segments A and B)
    large_model_lr: float | None = None  # finetune's default for MiniLM-sized models, if measured
    # the test line of a task whose score is its own (CoNLL's spans), else the shape's
    result_line: Callable[[dict[str, Any]], str] | None = None
    data_version: int = 1  # raised when the task's items change: older measured runs are stale
    # a task whose model trains with in-batch negatives may add mined ones (finetune's
    # hard_negatives, ``minibert finetune --hard-negatives N``); None: it takes none
    hard_negatives: HardNegatives | None = None
    # training batches of similar length (the loop's group_by_length); False for a task whose
    # label goes with length, where a run of short batches is a run of one label
    group_by_length: bool = True

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"shape must be one of {', '.join(SHAPES)}, got {self.shape!r}")

    @property
    def model_class(self) -> type:
        """The task model of its shape: BertForSequenceClassification, ...TokenClassification."""
        return SHAPES[self.shape].model_class

    @property
    def head_size(self) -> int:
        """The head's outputs (config.json's num_labels): one per label, or its shape's own."""
        return SHAPES[self.shape].head_size(self)

    @property
    def label_names(self) -> tuple[str, ...] | None:
        """config.json's label names: the task's labels when the head has one output each."""
        return self.labels if self.head_size == len(self.labels) else None

    def collate(self, items: Sequence[dict], pad_token_id: int) -> dict:
        """A padded batch of items, as its shape pads them."""
        return SHAPES[self.shape].collate(items, pad_token_id)

    def predict(self, net: Any, data: Sequence, collate: Callable) -> list:
        """The model's answer for each item of data, in order (a list per text for words)."""
        return SHAPES[self.shape].predict(net, data, collate)

    def gold(self, data: Sequence) -> list:
        """The right answer for each item of data, in order, as predict gives them."""
        return SHAPES[self.shape].gold(data)

    def test_line(self, test: dict[str, Any]) -> str:
        """The line that reports test scores: "test (N units): " and the task's (or shape's)."""
        line = self.result_line or SHAPES[self.shape].result_line
        return f"test ({test['examples']:,} {test['unit']}s): " + line(test)

    @property
    def positive(self) -> str:
        """The label whose precision, recall and F1 the scores give (label 1)."""
        return self.labels[1]

    def datasets(self, tokenizer, max_length: int, train_examples: int | None, seed: int):
        """(train, dev, test) datasets; train_examples draws a random subset of train (by seed)."""
        return self.load(tokenizer, max_length, train_examples, seed)

    def scores(self, gold: Sequence, predictions: Sequence) -> dict[str, Any]:
        """The final scores of predictions against gold (one per item, as ``predict`` gives them),
        by the task's own names (``score``), with the number of scored units ("examples")."""
        return self.score(self, gold, predictions)

    def baseline_scores(self, data: Sequence, tokenizer) -> dict[str, dict[str, Any]]:
        """Each baseline's scores on data[2] (test) of data = (train, dev, test), as the model's."""
        gold = self.gold(data[2])
        scored = {}
        for baseline in self.baselines:
            predictions = baseline.predict(*data, tokenizer)
            if len(predictions) != len(gold):
                raise RuntimeError(
                    f"baseline {baseline.name!r} answered {len(predictions)} of {len(gold)} items"
                )
            scored[baseline.name] = self.scores(gold, predictions)
        return scored


def subset(items: Sequence, train_examples: int | None, seed: int, what: str) -> list:
    """A random subset of train_examples items (all of them for None), refused if too big."""
    if train_examples is None:
        return list(items)
    if train_examples > len(items):
        raise ValueError(
            f"train_examples {train_examples} exceeds the {len(items)} training {what}"
        )
    return random.Random(seed).sample(list(items), train_examples)


TASKS: dict[str, Task] = {}


def register(task: Task) -> Task:
    """Add a task to the registry (its name must be new); returns it."""
    if task.name in TASKS:
        raise ValueError(f"a task named {task.name!r} is already registered")
    TASKS[task.name] = task
    return task


def check_name(name: object) -> str | None:
    """None for a registered task's name, else what is wrong (the options' check of --task)."""
    return None if name in TASKS else f"must be one of {', '.join(map(repr, sorted(TASKS)))}"


def get(name: str) -> Task:
    """The registered task of that name; an unknown name raises, listing the known ones."""
    if problem := check_name(name):
        raise ValueError(f"task {problem}, got {name!r}")
    return TASKS[name]


def of_folder(folder: str | Path) -> Task | None:
    """The registered task a fine-tuned folder was trained on (its results.json), or None."""
    results = Path(folder) / "results.json"
    if not results.is_file():
        return None
    try:
        name = json.loads(results.read_text(encoding="utf-8")).get("task")
    except (ValueError, UnicodeDecodeError, AttributeError):
        raise ValueError(f"{results} is damaged (not a JSON object); fine-tune again") from None
    if name is not None and not isinstance(name, str):
        raise ValueError(
            f"{results} is damaged (its task is {name!r:.60}, not a name); fine-tune again"
        )
    return TASKS.get(name)
