"""What a fine-tuning task is (``Task``, its ``Selection`` and its baselines) and the registry."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minibert import finetuning
from minibert.config import IGNORE_INDEX
from minibert.model import BertForSequenceClassification, BertForTokenClassification
from minibert.training import evaluate

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


@dataclass(frozen=True)
class Shape:
    """What a task's input and answer look like: its model class, what it predicts for each
    item of a dataset (``predict``, in the data's order) and the gold answers (``gold``)."""

    name: str
    model_class: type
    predict: Callable[[Any, Sequence, Callable], list]  # (net, data, collate) -> one per item
    gold: Callable[[Sequence], list]  # data -> one per item, as predict gives them


def _text_labels(data: Sequence) -> list[int]:
    """Each text's (or pair's) label."""
    return [data[i]["labels"] for i in range(len(data))]


def _word_labels(data: Sequence) -> list[list[int]]:
    """Each text's labels at its labelled pieces (a word's first piece), in order."""
    return [[y for y in data[i]["labels"] if y != IGNORE_INDEX] for i in range(len(data))]


def _predict_labels(net: Any, data: Sequence, collate: Callable) -> list:
    """The argmax label of each text, or of each labelled piece of each text, in data's order."""
    order = sorted(range(len(data)), key=lambda i: -len(data[i]["input_ids"]))  # less padding
    found: list = []

    def collect(batch: dict, out: Any) -> dict:
        guess = out.logits.argmax(-1)  # (batch,) or (batch, seq)
        if guess.dim() == 1:
            found.extend(guess.tolist())
        else:
            keep = batch["labels"] != IGNORE_INDEX
            found.extend(g[k].tolist() for g, k in zip(guess, keep))
        return {}

    evaluate(net, [data[i] for i in order], 64, collate, metrics_fn=collect)
    return [guess for _, guess in sorted(zip(order, found), key=lambda pair: pair[0])]


SHAPES = {  # the input shape -> its model class (config.json's architectures) and answers
    "text": Shape("text", BertForSequenceClassification, _predict_labels, _text_labels),
    "words": Shape("words", BertForTokenClassification, _predict_labels, _word_labels),
}


def register_shape(shape: Shape) -> Shape:
    """Add an input shape (a task module's own, e.g. a span of a context); returns it."""
    if shape.name in SHAPES:
        raise ValueError(f"a shape named {shape.name!r} is already registered")
    SHAPES[shape.name] = shape
    return shape


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


@dataclass(frozen=True)
class Task:
    """One fine-tuning task: what the CLI, the recipe and the benchmark need to know about it."""

    name: str
    labels: tuple[str, ...]  # index = label id; config.json's id2label
    shape: str  # a key of SHAPES: "text" (a label per text or pair), "words" (per word), "span"
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

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"shape must be one of {', '.join(SHAPES)}, got {self.shape!r}")

    @property
    def model_class(self) -> type:
        """The task model of its shape: BertForSequenceClassification or ...TokenClassification."""
        return SHAPES[self.shape].model_class

    def predict(self, net: Any, data: Sequence, collate: Callable) -> list:
        """The model's answer for each item of data, in order (a list per text for words)."""
        return SHAPES[self.shape].predict(net, data, collate)

    def gold(self, data: Sequence) -> list:
        """The right answer for each item of data, in order, as predict gives them."""
        return SHAPES[self.shape].gold(data)

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
