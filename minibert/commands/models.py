"""``minibert fill-mask`` and each shape's command: a trained folder answering.

    minibert fill-mask runs/tiny "the [MASK] of france is paris ."
    minibert classify runs/rt "a gem of a film" "a tedious mess"
    minibert classify runs/qnli "who built it ?" "the tower was built by eiffel ."  # a pair task
    minibert classify runs/pairs "who built it ?" --pair "the tower was built by eiffel ."
    minibert tag runs/caps "the eiffel tower is in paris ."
    minibert answer runs/qa --question "who built it ?" --context paragraph.txt
    minibert choose runs/swag "the tower was built in 1889 ." --choice "it is in paris ." ...

The commands after fill-mask are the shapes' own (``tasks.Shape.command``, declared as data beside
the shape): one sub-command per registered shape, built here. A fine-tuned folder says what it
answers: its config.json's architectures (and results.json's task): a folder of another shape is
refused in one line naming the command that fits it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from minibert import inference, tasks
from minibert.commands.flags import argparse_type
from minibert.model import BertForMaskedLM
from minibert.options import POSITIVE_INT
from minibert.tasks.shapes import Argument, CommandError, Shape

__all__ = ["CommandError", "add_arguments", "fill_mask"]


# shapes with no command of their own -> what their folders do, and the command that reads them
READ_ELSEWHERE = {"vector": ("encodes texts as vectors", "search")}


def _commands() -> dict[str, Shape]:
    """The architecture (model class name) each shape's command answers -> the shape."""
    return {s.model_class.__name__: s for s in tasks.SHAPES.values() if s.command is not None}


def _load(folder: str, cls: type) -> tuple[Any, Any]:
    """(model, tokenizer) from a folder; anything wrong becomes one line naming the folder, exit
    code 2 for the folder given (missing, not a model, damaged), 1 for the machine (a read error)."""
    from minibert.tokenization import BertTokenizer

    try:
        model = cls.from_pretrained(folder)
        return model, BertTokenizer.from_pretrained(folder)
    except (FileNotFoundError, NotADirectoryError, ValueError, KeyError, TypeError) as exc:
        raise CommandError(f"cannot load the model in {folder}: {exc}", 2) from None
    except OSError as exc:
        raise CommandError(f"cannot load the model in {folder}: {exc}") from None


def _architecture(folder: str) -> str | None:
    """The task model a folder's config.json names (architectures), if it names one we answer."""
    config = Path(folder) / "config.json"
    try:
        names = json.loads(config.read_text(encoding="utf-8")).get("architectures") or []
    except (OSError, ValueError, AttributeError):
        return None  # _load says what is wrong with the folder
    return next((name for name in names if name in _commands()), None)


def _fine_tuned(folder: str, shape: Shape) -> tuple[Any, Any, Any]:
    """The model and tokenizer of a folder fine-tuned for this shape, and its task (None when
    unknown), or a CommandError (exit code 2: the folder given is the wrong one) naming the
    command that fits the folder, or saying it is not fine-tuned."""
    found, command = _architecture(folder), shape.command.verb
    try:
        task = tasks.of_folder(folder)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    trained = f" (task {task.name})" if task else ""
    if task is not None and task.shape in READ_ELSEWHERE:
        does, verb = READ_ELSEWHERE[task.shape]
        raise CommandError(
            f"{folder} {does}{trained}, it does not {command}: use `minibert {verb} {folder} ...`",
            2,
        )
    if found is not None and _commands()[found] is not shape:
        other = _commands()[found].command
        raise CommandError(
            f"{folder} {other.answers} ({found}{trained}), it does not {command}: use "
            f"`minibert {other.verb} {folder} ...`",
            2,
        )
    model, tok = _load(folder, shape.model_class)
    if task is None:  # no results.json: the task whose labels the config names, if only one
        names = tuple(model.config.names())
        same = [t for t in tasks.TASKS.values() if t.labels == names and t.shape == shape.name]
        task = same[0] if len(same) == 1 else None
    if missing := model.loading_info["newly_initialized"]:  # a random head answers at random
        raise CommandError(
            f"{folder} has no trained head (its weights lack {', '.join(missing)}): it is a "
            "pretrained model, not a fine-tuned one; fine-tune it first (minibert finetune "
            "--model FOLDER --out OUT)",
            2,
        )
    return model, tok, task


def add_arguments(sub: argparse._SubParsersAction) -> None:
    """The sub-commands fill-mask and each registered shape's (classify, tag, answer, ...)."""
    fill = sub.add_parser("fill-mask", help="predict the [MASK] tokens of a sentence")
    fill.add_argument(
        "model",
        help="a folder written by `minibert pretrain`, or by "
        "save_pretrained of BertForPreTraining or BertForMaskedLM",
    )
    fill.add_argument(
        "text",
        help='a sentence with [MASK], e.g. "the [MASK] of france is paris ."; at most the '
        "model's positions (512 WordPiece tokens for BERT, with [CLS] and [SEP]): a longer text "
        "is refused, not cut, so that no [MASK] loses its context; shorten it to the sentences "
        "around the [MASK]",
    )
    fill.add_argument(
        "--top-k",
        type=argparse_type(int, POSITIVE_INT),
        default=5,
        help="how many candidates to print per [MASK]",
    )
    fill.set_defaults(run=fill_mask)
    for shape in tasks.SHAPES.values():
        if shape.command is not None:
            _add_command(sub, shape)


def _add_command(sub: argparse._SubParsersAction, shape: Shape) -> None:
    """A shape's command: FOLDER, then the arguments it declares."""
    command = shape.command
    parser = sub.add_parser(command.verb, help=command.help, description=command.help)
    parser.add_argument("model", help=command.folder)
    for argument in command.arguments:
        parser.add_argument(argument.name, **_keywords(argument))
    parser.set_defaults(run=lambda args: _answer(shape, args))


def _keywords(argument: Argument) -> dict[str, Any]:
    """argparse's add_argument keywords for a declared argument (a flag's default and required)."""
    kw = {"help": argument.help, "nargs": argument.nargs, "metavar": argument.metavar}
    if argument.kind is not None:
        kw["type"] = argparse_type(argument.kind, argument.check)
    if argument.action is not None:
        kw["action"] = argument.action
    if argument.name.startswith("-"):
        kw |= {"default": argument.default, "required": argument.required}
    return {k: v for k, v in kw.items() if v is not None}


def _answer(shape: Shape, args: argparse.Namespace) -> int:
    """Load the folder as the shape's model and print what its command answers; the exit code."""

    def run() -> None:
        model, tok, task = _fine_tuned(args.model, shape)
        for line in shape.command.run(args, model, tok, task):
            print(line)

    return _run(shape.command.verb, run)


def _run(command: str, answer: Any) -> int:
    try:
        answer()
    except CommandError as exc:
        print(f"minibert {command}: error: {exc}", file=sys.stderr)
        return exc.code
    except (ValueError, TypeError) as exc:  # the texts given, or the folder's weights
        print(f"minibert {command}: error: {exc}", file=sys.stderr)
        return 2
    return 0


def fill_mask(args: argparse.Namespace) -> int:
    """Print each [MASK]'s top candidates with their probabilities; the exit code."""

    def answer() -> None:
        model, tok = _load(args.model, BertForMaskedLM)  # pretraining folders load too
        for n, found in enumerate(inference.fill_mask(model, tok, args.text, args.top_k), 1):
            print(f"[MASK] {n}: " + "  ".join(f"{t} {p:.3f}" for t, p in found))

    return _run("fill-mask", answer)
