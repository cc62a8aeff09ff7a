"""The fine-tuning tasks as data: a name, its labels, its model class, its data and its measures.

    task = tasks.get("rotten-tomatoes")            # an unknown name is an error naming the known ones
    train, dev, test = task.datasets(tok, max_length=128, train_examples=1024, seed=0)
    net = task.model_class.from_pretrained(folder, num_labels=len(task.labels), label_names=task.labels)

``minibert finetune --task`` offers the registered names; ``recipes.finetune`` and the fine-tuning
benchmark read everything else from here. A new task (a token task such as NER, a sentence-pair
task) is one ``register(Task(...))`` call with a function that returns its three datasets.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from minibert import corpora, finetuning
from minibert.model import BertForSequenceClassification, BertForTokenClassification

__all__ = ["TASKS", "Task", "check_name", "get", "register"]

# (tokenizer, max_length, train_examples or None, seed) -> (train, dev, test) datasets
Loader = Callable[[Any, int, "int | None", int], tuple[Any, Any, Any]]


@dataclass(frozen=True)
class Task:
    """One fine-tuning task: what the CLI, the recipe and the benchmark need to know about it."""

    name: str
    labels: tuple[str, ...]  # index = label id; config.json's id2label
    model_class: type  # a minibert task model: one label per text, or one per token
    unit: str  # what one scored item is ("snippet", "word"): results say "accuracy per word"
    load: Loader
    metrics: Callable  # (batch, model output) -> {name: (correct, count)}, for training.train
    description: str  # one line for --help

    def datasets(self, tokenizer, max_length: int, train_examples: int | None, seed: int):
        """(train, dev, test) datasets; train_examples draws a random subset of train (by seed)."""
        return self.load(tokenizer, max_length, train_examples, seed)


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
    dev = sentences[::10]
    train = _subset(
        [s for i, s in enumerate(sentences) if i % 10], train_examples, seed, "sentences"
    )
    test = [s for a in corpora.wikipedia_articles("heldout") for s in a.sentences]
    return tuple(
        finetuning.TokenLabellingDataset(finetuning.capitalisation_examples(s, tok, max_length))
        for s in (train, dev, test)
    )


register(
    Task(
        name="rotten-tomatoes",
        labels=corpora.LABELS,
        model_class=BertForSequenceClassification,
        unit="snippet",
        load=_rotten_tomatoes,
        metrics=finetuning.classification_metrics,
        description="sentiment of review snippets (fresh/rotten, split by movie)",
    )
)
register(
    Task(
        name="capitalisation",
        labels=("lower", "capitalised"),
        model_class=BertForTokenClassification,
        unit="word",
        load=_capitalisation,
        metrics=finetuning.token_metrics,
        description="which words of lower-cased Wikipedia text were capitalised (a token task)",
    )
)
