"""What a task's input and answer look like (``Shape``), and the two shapes of lesson 6: a label per
text (or pair of texts) and a label per word.

A shape owns everything about itself: its model class and head size, its collate (items -> a
padded batch), how it predicts and what the gold answers are, the line that reports its test
scores, and the command that answers with a folder of its shape (``minibert classify``). A task
names its shape and brings its data and baselines. A new shape is one ``register_shape`` in its
task module (``qa.py``'s span of a context, ``swag.py``'s multiple choice): the recipe, the
``minibert finetune`` report and the commands read everything from here.

The commands are declared as data (``Command``, ``Argument``); ``minibert.commands.models`` turns
them into sub-commands, so argparse stays in the commands layer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from minibert import finetuning, inference
from minibert.config import IGNORE_INDEX
from minibert.model import BertForSequenceClassification, BertForTokenClassification
from minibert.options import POSITIVE_INT
from minibert.training import evaluate

Task = Any  # a registry.Task (the registry imports this module, so not the other way round)

__all__ = [
    "SHAPES",
    "Argument",
    "Command",
    "CommandError",
    "Shape",
    "label_line",
    "one_per_label",
    "register_shape",
]


class CommandError(Exception):
    """What a command prints as its one-line error, with the exit code."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Argument:
    """One argument of a shape's command, as argparse's ``add_argument`` takes it: a name
    ("texts") or a flag ("--pair"); kind (int, float) with check (an option's check) for a value."""

    name: str
    help: str
    nargs: str | None = None
    metavar: str | None = None
    required: bool = False
    default: Any = None
    action: str | None = None  # "append": a flag given once per value (--choice A --choice B)
    kind: type | None = None
    check: Callable[[Any], str | None] | None = None


@dataclass(frozen=True)
class Command:
    """``minibert VERB FOLDER ...``: a folder fine-tuned for the shape answering.

    ``run(args, model, tokenizer, task)`` gets the parsed arguments, the folder's model and
    tokenizer and its task (None when unknown), and returns the lines to print; it raises
    CommandError (or ValueError, exit code 2) for what it refuses."""

    verb: str
    help: str  # one line for `minibert --help`
    folder: str  # the FOLDER argument's help
    answers: str  # what a folder of the shape does, in a refusal: "labels each word"
    arguments: tuple[Argument, ...]
    run: Callable[[Any, Any, Any, Task | None], list[str]]


def one_per_label(task: Task) -> int:
    """A head with one output per label of the task (a text's, a word's)."""
    return len(task.labels)


def label_line(t: dict[str, Any]) -> str:
    """Accuracy, balanced accuracy, and precision, recall and F1 of the positive label."""
    return (
        f"accuracy {t['accuracy']:.4f}, balanced accuracy {t['balanced_accuracy']:.4f}; "
        f"{t['positive']!r}: precision {t['precision']:.4f}, recall {t['recall']:.4f}, "
        f"F1 {t['f1']:.4f}"
    )


@dataclass(frozen=True)
class Shape:
    """What a task's input and answer look like, and everything that follows from it.

    ``predict(net, data, collate)`` gives one answer per item of a dataset, in the data's order,
    and ``gold(data)`` the right ones alike; ``collate(items, pad_token_id)`` makes a batch;
    ``head_size(task)`` is the head's number of outputs (config.json's num_labels);
    ``result_line(test)`` reports the test scores (after "test (N units): "); ``command`` is the
    command that answers with a folder of this shape (None: no command)."""

    name: str
    model_class: type
    predict: Callable[[Any, Sequence, Callable], list]
    gold: Callable[[Sequence], list]
    collate: Callable[[Sequence[dict], int], dict] = finetuning.collate
    head_size: Callable[[Task], int] = one_per_label
    result_line: Callable[[dict[str, Any]], str] = label_line
    command: Command | None = None


SHAPES: dict[str, Shape] = {}


def register_shape(shape: Shape) -> Shape:
    """Add an input shape (a task module's own, e.g. a span of a context); returns it."""
    if shape.name in SHAPES:
        raise ValueError(f"a shape named {shape.name!r} is already registered")
    taken = {s.command.verb: s.name for s in SHAPES.values() if s.command}
    if shape.command is not None and shape.command.verb in taken:
        raise ValueError(
            f"the command {shape.command.verb!r} answers shape {taken[shape.command.verb]!r} "
            "already: give the new shape's command another verb"
        )
    SHAPES[shape.name] = shape
    return shape


# --- a label per text (or pair), a label per word ----------------------------------------------


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


def _classify(args: Any, model: Any, tok: Any, task: Task | None) -> list[str]:
    """Each text's label and probability (tab-separated, then the text); a pair task's folder
    takes TEXT TEXT_B (one pair) or texts with --pair."""
    texts, pairs, folder = args.texts, args.pair, args.model
    if task is not None and not task.pairs and pairs is not None:
        raise CommandError(
            f"{folder} labels single texts ({task.name}), not pairs: leave out --pair", 2
        )
    if task is not None and task.pairs and pairs is None:  # TEXT TEXT_B: one pair
        if len(texts) != 2:
            raise CommandError(
                f"{folder} labels pairs ({task.name}): give TEXT TEXT_B "
                "(or texts with --pair, one second text each)"
            )
        texts, pairs = texts[:1], texts[1:]
    labels = inference.classify(model, tok, texts, pairs)
    return [
        f"{name}\t{probability:.3f}\t{text if pairs is None else f'{text} | {pairs[i]}'}"
        for i, (text, (name, probability)) in enumerate(zip(texts, labels))
    ]


def _tag(args: Any, model: Any, tok: Any, task: Task | None) -> list[str]:
    """Each word with its label and probability, one word a line."""
    tagged = inference.tag(model, tok, args.text, args.max_length)
    return [f"{word}\t{name}\t{probability:.3f}" for word, name, probability in tagged]


CLASSIFY = Command(
    "classify",
    "label texts (or text pairs) with a fine-tuned model",
    "a folder written by `minibert finetune` for a text task",
    "labels each text (or pair of texts)",
    (
        Argument(
            "texts",
            "one or more texts, each in quotes; for a folder of a pair task (wiki-qnli), TEXT "
            "TEXT_B: one pair",
            nargs="+",
        ),
        Argument(
            "--pair",
            "the second text of each pair (segment B), one per text",
            nargs="+",
            metavar="TEXT_B",
        ),
    ),
    _classify,
)
TAG = Command(
    "tag",
    "label each word of a text with a fine-tuned token model",
    "a folder written by `minibert finetune` for a word task",
    "labels each word",
    (
        Argument("text", "the text to tag, in quotes"),
        Argument(
            "--max-length",
            "tag only the first N WordPiece tokens ([CLS] and [SEP] included; at most the "
            "model's positions); default: a text longer than the model's positions is refused",
            kind=int,
            check=POSITIVE_INT,
        ),
    ),
    _tag,
)

TEXT = register_shape(
    Shape("text", BertForSequenceClassification, _predict_labels, _text_labels, command=CLASSIFY)
)
WORDS = register_shape(
    Shape("words", BertForTokenClassification, _predict_labels, _word_labels, command=TAG)
)
