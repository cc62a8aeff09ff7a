"""``minibert fill-mask``, ``classify``, ``tag`` and ``answer``: a trained folder answering.

    minibert fill-mask runs/tiny "the [MASK] of france is paris ."
    minibert classify runs/rt "a gem of a film" "a tedious mess"
    minibert classify runs/qnli "who built it ?" "the tower was built by eiffel ."  # a pair task
    minibert classify runs/pairs "who built it ?" --pair "the tower was built by eiffel ."
    minibert tag runs/caps "the eiffel tower is in paris ."
    minibert answer runs/qa --question "who built it ?" --context paragraph.txt

A fine-tuned folder says what it answers: its config.json's architectures (and results.json's
task): a folder of another shape is refused in one line naming the command that fits it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from minibert import inference, tasks
from minibert.commands.flags import argparse_type
from minibert.options import POSITIVE_INT

COMMANDS = {
    "BertForSequenceClassification": "classify",
    "BertForTokenClassification": "tag",
    "BertForQuestionAnswering": "answer",
}
ANSWERS = {
    "classify": "labels each text (or pair of texts)",
    "tag": "labels each word",
    "answer": "answers a question with a span of a context",
}


class CommandError(Exception):
    """What a command prints as its one-line error, with the exit code."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


def _load(folder: str, cls_name: str) -> tuple[Any, Any]:
    """(model, tokenizer) from a folder; anything wrong becomes one line naming the folder."""
    from minibert import model as models
    from minibert.tokenization import BertTokenizer

    try:
        model = getattr(models, cls_name).from_pretrained(folder)
        return model, BertTokenizer.from_pretrained(folder)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CommandError(f"cannot load the model in {folder}: {exc}") from None


def _architecture(folder: str) -> str | None:
    """The task model a folder's config.json names (architectures), if it names one we answer."""
    config = Path(folder) / "config.json"
    try:
        names = json.loads(config.read_text(encoding="utf-8")).get("architectures") or []
    except (OSError, ValueError, AttributeError):
        return None  # _load says what is wrong with the folder
    return next((name for name in names if name in COMMANDS), None)


def _fine_tuned(folder: str, command: str) -> tuple[Any, Any, Any]:
    """The model and tokenizer of a folder fine-tuned for this command's shape, or a CommandError
    naming the command that fits the folder (or saying it is not fine-tuned)."""
    found = _architecture(folder)
    try:
        task = tasks.of_folder(folder)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    trained = f" (task {task.name})" if task else ""
    if found is not None and COMMANDS[found] != command:
        other = COMMANDS[found]
        raise CommandError(
            f"{folder} {ANSWERS[other]} ({found}{trained}), it does not {command}: use "
            f"`minibert {other} {folder} ...`"
        )
    wanted = next(name for name, c in COMMANDS.items() if c == command)
    model, tok = _load(folder, wanted)
    if task is None:  # no results.json: the task whose labels the config names, if only one
        names = tuple(model.config.names())
        shape = {"classify": "text", "tag": "words", "answer": "span"}[command]
        same = [t for t in tasks.TASKS.values() if t.labels == names and t.shape == shape]
        task = same[0] if len(same) == 1 else None
    if missing := model.loading_info["newly_initialized"]:  # a random head answers at random
        raise CommandError(
            f"{folder} has no trained head (its weights lack {', '.join(missing)}): it is a "
            "pretrained model, not a fine-tuned one; fine-tune it first (minibert finetune "
            "--model FOLDER --out OUT)"
        )
    return model, tok, task


def add_arguments(sub: argparse._SubParsersAction) -> None:
    """The sub-commands fill-mask, classify and tag."""
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
    label = sub.add_parser("classify", help="label texts (or text pairs) with a fine-tuned model")
    label.add_argument("model", help="a folder written by `minibert finetune` for a text task")
    label.add_argument(
        "texts",
        nargs="+",
        help="one or more texts, each in quotes; for a folder "
        "of a pair task (wiki-qnli), TEXT TEXT_B: one pair",
    )
    label.add_argument(
        "--pair",
        nargs="+",
        default=None,
        metavar="TEXT_B",
        help="the second text of each pair (segment B), one per text",
    )
    label.set_defaults(run=classify)
    words = sub.add_parser("tag", help="label each word of a text with a fine-tuned token model")
    words.add_argument("model", help="a folder written by `minibert finetune` for a word task")
    words.add_argument("text", help="the text to tag, in quotes")
    words.add_argument(
        "--max-length",
        type=argparse_type(int, POSITIVE_INT),
        default=None,
        help="tag only the first N WordPiece tokens ([CLS] and [SEP] included; at most the "
        "model's positions); default: a text longer than the model's positions is refused",
    )
    words.set_defaults(run=tag)
    reader = sub.add_parser("answer", help="answer a question with a span of a context")
    reader.add_argument("model", help="a folder written by `minibert finetune --task wiki-qa`")
    reader.add_argument("--question", required=True, help="the question, in quotes")
    reader.add_argument(
        "--context",
        required=True,
        metavar="TEXT_OR_FILE",
        help="the context to answer from: a text in quotes, or a file",
    )
    reader.add_argument(
        "--max-length",
        type=argparse_type(int, POSITIVE_INT),
        default=None,
        help="pieces per window (default: the folder's training length)",
    )
    reader.set_defaults(run=answer)


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
        model, tok = _load(args.model, "BertForMaskedLM")  # pretraining folders load too
        for n, found in enumerate(inference.fill_mask(model, tok, args.text, args.top_k), 1):
            print(f"[MASK] {n}: " + "  ".join(f"{t} {p:.3f}" for t, p in found))

    return _run("fill-mask", answer)


def classify(args: argparse.Namespace) -> int:
    """Print each text's label and probability (tab-separated, then the text)."""

    def answer() -> None:
        model, tok, task = _fine_tuned(args.model, "classify")
        texts, pairs = args.texts, args.pair
        if task is not None and not task.pairs and pairs is not None:
            raise CommandError(
                f"{args.model} labels single texts ({task.name}), not pairs: leave out --pair", 2
            )
        if task is not None and task.pairs and pairs is None:  # TEXT TEXT_B: one pair
            if len(texts) != 2:
                raise CommandError(
                    f"{args.model} labels pairs ({task.name}): give TEXT TEXT_B "
                    "(or texts with --pair, one second text each)"
                )
            texts, pairs = texts[:1], texts[1:]
        labels = inference.classify(model, tok, texts, pairs)
        for i, (text, (name, probability)) in enumerate(zip(texts, labels)):
            shown = text if pairs is None else f"{text} | {pairs[i]}"
            print(f"{name}\t{probability:.3f}\t{shown}")

    return _run("classify", answer)


def tag(args: argparse.Namespace) -> int:
    """Print each word with its label and probability, one word a line."""

    def answer() -> None:
        model, tok, _ = _fine_tuned(args.model, "tag")
        for word, name, probability in inference.tag(model, tok, args.text, args.max_length):
            print(f"{word}\t{name}\t{probability:.3f}")

    return _run("tag", answer)


def answer(args: argparse.Namespace) -> int:
    """Print the answer's text alone on the first line, then its probability and characters."""

    def run() -> None:
        model, tok, _ = _fine_tuned(args.model, "answer")
        context = _text_or_file(args.context)
        length = args.max_length or _trained_length(args.model)
        found = inference.answer(model, tok, args.question, context, length, length // 4)
        print(found.text)
        print(f"probability {found.probability:.3f}\tcharacters {found.start}-{found.end}")

    return _run("answer", run)


def _text_or_file(value: str) -> str:
    """--context: the text of the file of that name when one exists, else the value itself (a
    paragraph pasted in quotes); a folder, or what can only be a missing file's name, refused."""
    path = Path(value)
    if not value.strip() or "\0" in value:  # not a file's name ("" is "."): a text, checked later
        return value
    try:
        if path.is_file():
            try:
                return path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"cannot read the context file {value}: {exc}", 2) from None
        if path.is_dir():
            raise CommandError(f"--context {value} is a folder; give a text or a file", 2)
    except OSError:  # a name too long for a file (ENAMETOOLONG): a text
        return value
    if not any(c.isspace() for c in value) and path.suffix in (".txt", ".md", ".text"):
        raise CommandError(f"--context: no file {value}; give an existing file or a text", 2)
    return value


def _trained_length(folder: str) -> int:
    """The window length a folder was fine-tuned with (results.json), else 384."""
    try:
        results = json.loads((Path(folder) / "results.json").read_text(encoding="utf-8"))
        return int(results["options"]["max_length"])
    except (OSError, ValueError, KeyError, TypeError):
        return 384
