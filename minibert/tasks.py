"""The fine-tuning tasks as data: each task owns its data, input shape, model, measures and use.

    task = tasks.get("rotten-tomatoes")            # an unknown name is an error naming the known ones
    train, dev, test = task.datasets(tok, max_length=128, train_examples=1024, seed=0)
    net = task.model_class.from_pretrained(folder, num_labels=len(task.labels), label_names=task.labels)
    task.selection.of(history[-1])                 # the dev measure that keeps the best evaluation
    task.scores(labels, predictions)               # the final scores, by the task's own names
    tasks.of_folder("runs/rt")                     # the task a fine-tuned folder was trained on

What a task declares: its labels, its shape ("text": a label per text, or per text pair; "words":
a label per word), its model class, its training measures (``metrics``, summed by the loop), the
dev measure that picks the best evaluation (``selection``, with its direction: not accuracy,
which a model answering the majority label everywhere can win on an imbalanced dev set), the
final scores (``scores``) and the unit they count. ``minibert finetune --task`` offers the
registered names; ``recipes.finetune``, the commands (``minibert classify``, ``minibert tag``)
and the fine-tuning benchmark read everything else from here. A new task is one
``register(Task(...))`` call with a function that returns its three datasets.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minibert import corpora, finetuning
from minibert.model import BertForSequenceClassification, BertForTokenClassification

__all__ = ["SHAPES", "TASKS", "Selection", "Task", "check_name", "get", "of_folder", "register"]

SHAPES = {  # the input shape -> the model class of its folders (config.json's architectures)
    "text": BertForSequenceClassification,  # a label per text, or per pair of texts
    "words": BertForTokenClassification,  # a label per word (on its first piece)
}


@dataclass(frozen=True)
class Selection:
    """The dev measure that picks the best evaluation: its name, its value in an evaluation record
    (the history's eval_* measures), and whether higher is better. Ties keep the earlier one."""

    name: str
    of: Callable[[dict[str, float]], float]
    higher_is_better: bool = True

    def better(self, value: float, best: float | None) -> bool:
        """True when value beats the best so far (strictly: a tie keeps the earlier evaluation)."""
        if best is None:
            return True
        return value > best if self.higher_is_better else value < best


# (tokenizer, max_length, train_examples or None, seed) -> (train, dev, test) datasets
Loader = Callable[[Any, int, "int | None", int], tuple[Any, Any, Any]]


@dataclass(frozen=True)
class Task:
    """One fine-tuning task: what the CLI, the recipe and the benchmark need to know about it."""

    name: str
    labels: tuple[str, ...]  # index = label id; config.json's id2label
    shape: str  # a key of SHAPES: "text" (a label per text or pair) or "words" (per word)
    unit: str  # what one scored item is ("snippet", "word"): results say "accuracy per word"
    load: Loader
    metrics: Callable  # (batch, model output) -> {name: (correct, count)}, for training.train
    selection: Selection  # the dev measure that keeps the best evaluation
    description: str  # one line for --help

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"shape must be one of {', '.join(SHAPES)}, got {self.shape!r}")

    @property
    def model_class(self) -> type:
        """The task model of its shape: BertForSequenceClassification or ...TokenClassification."""
        return SHAPES[self.shape]

    @property
    def positive(self) -> str:
        """The label whose precision, recall and F1 the scores give (label 1)."""
        return self.labels[1]

    def datasets(self, tokenizer, max_length: int, train_examples: int | None, seed: int):
        """(train, dev, test) datasets; train_examples draws a random subset of train (by seed)."""
        return self.load(tokenizer, max_length, train_examples, seed)

    def scores(self, labels: Sequence[int], predictions: Sequence[int]) -> dict[str, Any]:
        """The final scores: accuracy, balanced accuracy, precision, recall and F1 of the
        positive label, the confusion matrix, and the selection measure under its own name."""
        measured = finetuning.scores(labels, predictions, len(self.labels))
        return {**measured, "positive": self.positive, "unit": self.unit}


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
    return TASKS.get(name)


def _subset(items: Sequence, train_examples: int | None, seed: int, what: str) -> list:
    """A random subset of train_examples items (all of them for None), refused if too big."""
    if train_examples is None:
        return list(items)
    if train_examples > len(items):
        raise ValueError(
            f"train_examples {train_examples} exceeds the {len(items)} training {what}"
        )
    return random.Random(seed).sample(list(items), train_examples)


def _rotten_tomatoes(tok, max_length: int, train_examples: int | None, seed: int):
    """Review snippets, split by movie (corpora.rotten_tomatoes)."""
    train, dev, test = (corpora.rotten_tomatoes(s) for s in ("train", "dev", "test"))
    train = _subset(train, train_examples, seed, "snippets")
    return tuple(
        finetuning.ClassificationDataset.from_reviews(r, tok, max_length)
        for r in (train, dev, test)
    )


def _capitalisation(tok, max_length: int, train_examples: int | None, seed: int):
    """Sentences of the Wikipedia training articles (every tenth is dev) and of the held-out ones."""
    sentences = [s for a in corpora.wikipedia_articles("train") for s in a.sentences]
    train = [s for i, s in enumerate(sentences) if i % 10]
    test = [s for a in corpora.wikipedia_articles("heldout") for s in a.sentences]
    return _words_capitalised(tok, max_length, _subset(train, train_examples, seed, "sentences"),
                              sentences[::10], test)  # fmt: skip


def _review_capitalisation(tok, max_length: int, train_examples: int | None, seed: int):
    """Review snippets of the training, dev and test movies (corpora.rotten_tomatoes' split)."""
    train, dev, test = (
        [r.text for r in corpora.rotten_tomatoes(s)] for s in ("train", "dev", "test")
    )
    return _words_capitalised(tok, max_length, _subset(train, train_examples, seed, "snippets"),
                              dev, test)  # fmt: skip


def _words_capitalised(tok, max_length: int, *parts: Sequence[str]) -> tuple:
    """A dataset per part: each text lower-cased, its words labelled capitalised or not."""
    return tuple(
        finetuning.TokenLabellingDataset(finetuning.capitalisation_examples(p, tok, max_length))
        for p in parts
    )


def _capitalisation_task(name: str, load: Loader, description: str) -> Task:
    """A task of restoring capitalisation: a label per word, kept by the F1 of capitalised words
    (most words are lower-case: accuracy would favour answering "lower" everywhere)."""
    return Task(name=name, labels=("lower", "capitalised"), shape="words", unit="word", load=load,
                metrics=finetuning.token_metrics, selection=Selection("f1", finetuning.positive_f1),
                description=description)  # fmt: skip


register(
    Task(
        name="rotten-tomatoes",
        labels=corpora.LABELS,
        shape="text",
        unit="snippet",
        load=_rotten_tomatoes,
        metrics=finetuning.classification_metrics,
        # dev holds 58% fresh snippets: accuracy would favour answering "fresh" everywhere
        selection=Selection("balanced_accuracy", finetuning.balanced_accuracy),
        description="sentiment of review snippets (fresh/rotten, split by movie)",
    )
)
register(
    _capitalisation_task(
        "capitalisation",
        _capitalisation,
        "which words of lower-cased Wikipedia text were capitalised (a token task)",
    )
)
register(
    _capitalisation_task(
        "review-capitalisation",
        _review_capitalisation,
        "which words of lower-cased review snippets were capitalised (the token task in the "
        "reviews' domain, split by movie)",
    )
)
