"""The ``minibert`` command: fetch assets, open the course, pretrain, fine-tune, ask models.

minibert fetch all              # the data and the pretrained MiniLM, once, with pip
minibert assets list            # what is cached, sizes, licences
minibert course                 # JupyterLab on the course notebooks
minibert course student-edition student/   # the notebooks without the exercises' solutions
minibert pretrain --preset tiny --steps 300 --out runs/tiny
minibert fill-mask runs/tiny "the [MASK] of france is paris ."
minibert finetune --model minilm --task rotten-tomatoes --out runs/rt
minibert classify runs/rt "a gem of a film" "a tedious mess"
minibert assignment new attention hw1   # a graded assignment; then: minibert assignment grade hw1
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
from pathlib import Path

from minibert import assets


def _course(args: argparse.Namespace) -> int:
    notebooks = Path(args.notebooks)
    if not notebooks.is_dir():
        print(
            f"error: no notebooks folder at {notebooks}; run from the course checkout",
            file=sys.stderr,
        )
        return 1
    if args.action == "student-edition":
        return _student_edition(notebooks, args)
    if args.out is not None:
        print(f"minibert course: error: unexpected argument {args.out!r}", file=sys.stderr)
        return 2
    command = [sys.executable, "-m", "jupyter", "lab", f"--notebook-dir={notebooks}"]
    if args.no_browser:
        command.append("--no-browser")
    if args.port:
        command.append(f"--port={args.port}")
    return subprocess.call(command)


def _student_edition(notebooks: Path, args: argparse.Namespace) -> int:
    from minibert import student_edition

    if args.out is None:
        print(
            "minibert course student-edition: error: give the folder to write, OUT", file=sys.stderr
        )
        return 2
    try:
        written = student_edition.build(notebooks, args.out, overwrite=args.overwrite)
    except (FileNotFoundError, FileExistsError, ValueError, RuntimeError) as exc:
        print(f"minibert course student-edition: error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote the student edition of {len(written)} notebooks to {args.out}")
    return 0


def _call_recipe(command: str, recipe, args: argparse.Namespace):
    """The recipe run with the command's options: its result, or an exit code after one line."""
    from minibert.training import TrainingError

    options = {k: v for k, v in vars(args).items() if k not in ("command", "run", "out")}
    try:
        return recipe(args.out, **options)
    except (ValueError, FileNotFoundError) as exc:
        print(f"minibert {command}: error: {exc}", file=sys.stderr)
        return 2
    except (TrainingError, OSError) as exc:  # a diverged run; a write that failed (full disk)
        print(f"minibert {command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _pretrain(args: argparse.Namespace) -> int:
    from minibert.recipes import pretrain

    result = _call_recipe("pretrain", pretrain, args)
    if isinstance(result, int):
        return result
    if result.paused:
        print(
            f"paused at step {len(result.history)} of {args.steps}; the run's state is in "
            f"{result.folder}/.run (the same command with --resume continues it)"
        )
    else:
        print(f"saved the model, vocabulary and history to {result.folder}")
    if result.heldout:
        print("held-out: " + ", ".join(f"{k} {v:.4f}" for k, v in result.heldout.items()))
    print(f"wall time: {result.seconds:.0f} s")
    return 0


def _finetune(args: argparse.Namespace) -> int:
    from minibert.recipes import finetune

    result = _call_recipe("finetune", finetune, args)
    if isinstance(result, int):
        return result
    for h in result.history:
        if "eval_accuracy" in h:
            print(f"step {h['step']:>6,}: dev accuracy {h['eval_accuracy']:.4f}")
    unit = result.test["unit"]
    print(
        f"best dev accuracy {result.dev['accuracy']:.4f}; test accuracy "
        f"{result.test['accuracy']:.4f}, F1 {result.test['f1']:.4f} "
        f"({result.test['examples']:,} {unit}s)"
    )
    print(f"saved the classifier, tokenizer and results.json to {result.folder}")
    print(f"wall time: {result.seconds:.0f} s")
    return 0


def _classify(args: argparse.Namespace) -> int:
    from minibert.inference import classify

    model, tok = _load_model(args.model, "BertForSequenceClassification")
    if model.loading_info["newly_initialized"]:  # a random head would answer at random
        raise SystemExit(
            f"minibert classify: error: {args.model} has no trained classifier (its weights lack "
            f"{', '.join(model.loading_info['newly_initialized'])}): it is a pretrained model, not "
            "a fine-tuned one; fine-tune it first (minibert finetune --model FOLDER --out OUT)"
        )
    for text, (label, probability) in zip(args.texts, classify(model, tok, args.texts)):
        print(f"{label}\t{probability:.3f}\t{text}")
    return 0


def _load_model(folder: str, cls_name: str):
    """(model, tokenizer) from a folder; anything wrong becomes one line naming the folder."""
    from minibert import model as models
    from minibert.tokenization import BertTokenizer

    try:
        return getattr(models, cls_name).from_pretrained(folder), BertTokenizer.from_pretrained(
            folder
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"minibert: error: cannot load the model in {folder}: {exc}") from None


def _fill_mask(args: argparse.Namespace) -> int:
    from minibert.inference import fill_mask

    model, tok = _load_model(args.model, "BertForMaskedLM")  # pretraining folders load too
    try:
        predictions = fill_mask(model, tok, args.text, top_k=args.top_k)
    except ValueError as exc:
        print(f"minibert fill-mask: error: {exc}", file=sys.stderr)
        return 1
    for n, candidates in enumerate(predictions, start=1):
        print(f"[MASK] {n}: " + "  ".join(f"{t} {p:.3f}" for t, p in candidates))
    return 0


def _number(kind: type, low: float, high: float = math.inf, low_open: bool = False):
    """An argparse type: a finite kind (int or float) in [low, high), or (low, high) if low_open."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a{'n int' if kind is int else ' number'}"
            ) from None
        ok = math.isfinite(value) and (value > low if low_open else value >= low) and value < high
        if not ok:
            bounds = f"{'(' if low_open else '['}{low}, {high})"
            raise argparse.ArgumentTypeError(f"{text} is not in {bounds}")
        return value

    return parse


POSITIVE_INT = _number(int, 1)
POSITIVE = _number(float, 0, low_open=True)
PROBABILITY = _number(float, 0, 1)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``minibert`` command, with one sub-parser per command."""
    parser = argparse.ArgumentParser(prog="minibert", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    fetch = sub.add_parser("fetch", help="fetch data and model assets (same as `assets fetch`)")
    fetch.add_argument(
        "names", nargs="*", default=["all"], help=f"{', '.join(assets.ASSETS)} or all"
    )
    fetch.add_argument("--quiet", action="store_true", help="no progress bars")
    fetch.set_defaults(run=lambda a: assets.run(argparse.Namespace(action="fetch", **vars(a))))

    manage = sub.add_parser("assets", help="list, verify, fetch or locate the cached assets")
    assets.add_arguments(manage)
    manage.set_defaults(run=assets.run)

    course = sub.add_parser(
        "course",
        help="open the course notebooks in JupyterLab, or write their student edition",
        description="minibert course: JupyterLab on the notebooks. minibert course "
        "student-edition OUT: the notebooks without the exercises' solutions (needs nbgrader: "
        "pip install 'minibert[teach]').",
    )
    course.add_argument(
        "action", nargs="?", default="open", choices=["open", "student-edition"], help="what to do"
    )
    course.add_argument("out", nargs="?", default=None, help="student-edition: the folder to write")
    course.add_argument(
        "--overwrite", action="store_true", help="student-edition: replace notebooks in OUT"
    )
    course.add_argument("--notebooks", default="notebooks", help="the notebooks folder")
    course.add_argument("--port", type=int, default=None, help="port for JupyterLab")
    course.add_argument("--no-browser", action="store_true", help="do not open a browser")
    course.set_defaults(run=_course)

    hw = sub.add_parser(
        "assignment",
        help="graded assignments: list them, hand one out (new), grade submissions",
        description="Graded assignments that reuse minibert: list, new NAME DIR, grade DIR...",
    )
    from minibert import assignments

    assignments.add_arguments(hw)
    hw.set_defaults(run=assignments.run)

    pre = sub.add_parser(
        "pretrain",
        help="pretrain a BERT with MLM (+ NSP or SOP) on Wikipedia (or your corpus)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = pre.add_argument
    add(
        "--preset",
        default=None,
        choices=("tiny", "mini", "small", "medium", "base"),
        help="size of a new model (layers/hidden: 2/128, 4/256, 4/512, 8/512, 12/768); "
        "default: mini, or the --init model's size",
    )
    add(
        "--corpus",
        default="wikipedia",
        help="'wikipedia' (the course extract), 'reviews' (the review text of the Rotten Tomatoes "
        "training movies, one document per movie, no labels; needs --objective none), a "
        "MediaWiki dump (.xml/.xml.bz2) or a folder of .txt files",
    )
    add(
        "--init",
        default=None,
        help="continue pretraining from a model: 'course' (the course checkpoint) or a folder "
        "with a pretraining head; its weights, vocabulary and size are kept (no --preset, "
        "--vocab). E.g. --init course --corpus reviews --objective none",
    )
    add("--out", required=True, help="folder for the model, vocabulary, history and checkpoints")
    add("--steps", type=POSITIVE_INT, required=True, help="optimizer steps")
    add(
        "--vocab",
        default=None,
        help="a vocab.txt or tokenizer folder; default: train one on the training articles",
    )
    add(
        "--vocab-size",
        type=POSITIVE_INT,
        default=8000,
        help="size of the vocabulary trained when --vocab is not given",
    )
    add(
        "--max-len",
        type=POSITIVE_INT,
        default=128,
        help="tokens per example, [CLS] and [SEP] included",
    )
    add("--batch-size", type=POSITIVE_INT, default=32, help="examples per micro-batch")
    add("--grad-accum-steps", type=POSITIVE_INT, default=1, help="micro-batches per optimizer step")
    add("--lr", type=POSITIVE, default=1e-3, help="peak learning rate of AdamW")
    add(
        "--dropout",
        type=PROBABILITY,
        default=0.1,
        help="dropout while pretraining (hidden and attention); 0 is about 1.7x faster on a CPU. "
        "The saved config.json keeps BERT's 0.1 for fine-tuning",
    )
    add(
        "--warmup-steps",
        type=_number(int, 0),
        default=None,
        help="linear warm-up steps (default: 10%% of --steps)",
    )
    add(
        "--weight-decay",
        type=_number(float, 0),
        default=0.01,
        help="AdamW weight decay (not on biases and LayerNorm)",
    )
    add(
        "--dupe-factor",
        type=POSITIVE_INT,
        default=5,
        help="times each document is cut into examples, differently",
    )
    add(
        "--max-predictions",
        type=POSITIVE_INT,
        default=None,
        help="cap on masked tokens per example (default: 15%% of tokens)",
    )
    add(
        "--mask-rate",
        type=PROBABILITY,
        default=0.15,
        help="share of tokens chosen for MLM in training examples (held-out ones: always 15%%)",
    )
    add("--whole-word", action="store_true", help="whole-word masking")
    add(
        "--static-masking", action="store_true", help="mask each example once, not anew every epoch"
    )
    add(
        "--objective",
        default="nsp",
        choices=("nsp", "sop", "none"),
        help="the sentence-level task beside MLM: next sentence prediction (BERT), sentence "
        "order prediction (ALBERT: A and B in order or swapped) or none (RoBERTa: MLM only)",
    )
    add(
        "--neighbour-steps",
        type=_number(int, 0),
        default=0,
        help="guide layer 0's first two heads to the previous/next token for this many steps "
        "(a score bonus and an auxiliary loss, annealed to 0; the saved model is plain BERT). "
        "Escapes the MLM plateau where plain BERT says 'the' at every [MASK]",
    )
    add(
        "--neighbour-bias",
        type=_number(float, 0),
        default=8.0,
        help="the guided heads' score bonus for their neighbour at step 1",
    )
    add(
        "--neighbour-aux",
        type=_number(float, 0),
        default=1.0,
        help="weight at step 1 of the loss pulling the guided heads' own attention to the neighbour",
    )
    add("--eval-every", type=POSITIVE_INT, default=200, help="steps between held-out evaluations")
    add(
        "--eval-batches",
        type=POSITIVE_INT,
        default=None,
        help="limit held-out evaluation to this many batches",
    )
    add("--checkpoint-every", type=POSITIVE_INT, default=500, help="steps between checkpoints")
    add(
        "--stop-after",
        type=POSITIVE_INT,
        default=None,
        help="pause after this many steps of the --steps schedule (state saved; --resume "
        "continues): compare recipes on their first steps, or train a little at a time",
    )
    add("--resume", action="store_true", help="continue the interrupted run in --out")
    add(
        "--overwrite",
        action="store_true",
        help="replace the model already in --out (all its files) once the new run has finished",
    )
    add(
        "--seed",
        type=_number(int, 0),
        default=0,
        help="seed for data, masking, initialisation and dropout",
    )
    add(
        "--device",
        default=None,
        choices=("cpu", "cuda", "mps"),
        help="default: the GPU when present",
    )
    add(
        "--threads",
        type=POSITIVE_INT,
        default=None,
        help="CPU threads for torch (default: torch's choice)",
    )
    pre.set_defaults(run=_pretrain)

    fm = sub.add_parser(
        "fill-mask", help="predict the [MASK] tokens of a sentence with a pretrained model"
    )
    fm.add_argument(
        "model",
        help="a folder written by `minibert pretrain`, or by save_pretrained of "
        "BertForPreTraining or BertForMaskedLM",
    )
    fm.add_argument("text", help='a sentence with [MASK], e.g. "the [MASK] of france is paris ."')
    fm.add_argument(
        "--top-k", type=POSITIVE_INT, default=5, help="how many candidates to print per [MASK]"
    )
    fm.set_defaults(run=_fill_mask)

    from minibert import tasks

    ft = sub.add_parser(
        "finetune",
        help="fine-tune a pretrained BERT (or a random one of its size) on a labelled task",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = ft.add_argument
    add(
        "--model",
        default="course",
        help="'course' (the course checkpoint, Wikipedia), 'course-reviews' (the course checkpoint "
        "continued on the training movies' review text), 'minilm' (the pretrained MiniLM) or a "
        "model folder",
    )
    add(
        "--scratch",
        action="store_true",
        help="start from random weights of the same size and vocabulary (what pretraining buys)",
    )
    add(
        "--task",
        default="rotten-tomatoes",
        choices=sorted(tasks.TASKS),
        help="; ".join(f"{t.name}: {t.description}" for t in tasks.TASKS.values()),
    )
    add("--out", required=True, help="folder for the fine-tuned model, tokenizer and results.json")
    add("--epochs", type=POSITIVE_INT, default=3, help="passes over the training examples")
    add(
        "--max-steps",
        type=POSITIVE_INT,
        default=None,
        help="stop after this many optimizer steps instead (default: --epochs)",
    )
    add(
        "--lr",
        type=POSITIVE,
        default=None,
        help="peak learning rate of AdamW (default: measured per model size: 1e-3 for the "
        "course's small models, 5e-5 for MiniLM and larger)",
    )
    add("--batch-size", type=POSITIVE_INT, default=32, help="examples per step")
    add(
        "--max-length",
        type=POSITIVE_INT,
        default=128,
        help="tokens per example, [CLS]/[SEP] included",
    )
    add(
        "--train-examples",
        type=POSITIVE_INT,
        default=None,
        help="train on a random subset of this many examples (default: all)",
    )
    add(
        "--freeze-encoder",
        action="store_true",
        help="train only the classifier on frozen features (a linear probe)",
    )
    add(
        "--reinit-layers",
        type=_number(int, 0),
        default=0,
        help="re-initialise the pooler and the top N encoder layers first (Zhang et al., 2021)",
    )
    add(
        "--evaluations",
        type=POSITIVE_INT,
        default=10,
        help="dev evaluations at most (after each epoch, or every few epochs on a small subset)",
    )
    add("--overwrite", action="store_true", help="replace what --out holds")
    add("--seed", type=_number(int, 0), default=0, help="seed for the subset, the head and batches")
    add("--threads", type=POSITIVE_INT, default=None, help="torch CPU threads")
    ft.set_defaults(run=_finetune)

    cl = sub.add_parser("classify", help="label texts with a fine-tuned classifier")
    cl.add_argument("model", help="a folder written by `minibert finetune`")
    cl.add_argument("texts", nargs="+", help="one or more texts, each in quotes")
    cl.set_defaults(run=_classify)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``minibert`` console script."""
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
