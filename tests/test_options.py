"""Options as data: one declaration per option gives the CLI flag, its default and check, the saved
recipe and the resume comparison; the command line and Python refuse the same values."""

import argparse
import dataclasses
import re

import pytest

from minibert import cli
from minibert.commands.flags import add_arguments, from_namespace
from minibert.options import (
    POSITIVE_INT,
    REQUIRED,
    build,
    changed,
    declared,
    inherit,
    nested,
    option,
    saved,
)
from minibert.recipes import FinetuneOptions, PretrainOptions
from minibert.training import TrainOptions, train

RECIPES = {"pretrain": PretrainOptions, "finetune": FinetuneOptions}


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


@pytest.mark.parametrize("command", sorted(RECIPES))
def test_every_cli_default_is_the_declared_default(command):
    cls = RECIPES[command]
    required = ["--out", "x", *(["--steps", "5"] if command == "pretrain" else [])]
    args = _subparser(command).parse_args(required)
    flags = {a.dest for a in _subparser(command)._actions}
    for d in declared(cls):  # the recipe's own options and the loop's it holds
        if not d.cli:
            assert d.name not in flags, f"{d.name} is declared off the command line"
            continue
        assert d.name in flags, f"{d.name} has no flag"
        if d.default is not REQUIRED:
            assert getattr(args, d.name) == d.default, d.name
    made = from_namespace(cls, args)  # the defaults pass their own checks
    assert isinstance(made, cls)


@pytest.mark.parametrize("command", sorted(RECIPES))
def test_every_flag_has_help_and_belongs_to_a_declaration(command):
    names = {d.name for d in declared(RECIPES[command])}
    for action in _subparser(command)._actions:
        # --out, and pretrain's --recipe (flags expanded before parsing, cli.with_recipe), are the
        # command's own, not options of the recipe
        if action.option_strings and action.dest not in ("help", "out", "recipe"):
            assert action.dest in names, action.dest
            assert action.help and len(action.help) > 10, action.dest


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--mask-rate", "0"], "mask_rate must be in (0, 1), got 0"),  # the CLI once took 0
        (["--dropout", "1"], "dropout must be in [0, 1)"),
        (["--steps", "0"], "steps must be a positive int"),
        (["--objective", "mlm"], "objective must be one of"),
        (["--warmup-steps", "-1"], "warmup_steps must be an int >= 0"),
    ],
)
def test_the_command_line_and_python_refuse_the_same_values(flags, message, capsys):
    argv = ["pretrain", "--out", "x", "--steps", "5", *flags]
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(argv)
    err = capsys.readouterr().err
    name, _, rule = message.partition(" must be ")
    assert f"must be {rule}" in err or "invalid choice" in err, err  # argparse words choices
    value = flags[1]
    kind = {"objective": str}.get(
        name, float if "." in value or name in ("mask_rate", "dropout") else int
    )
    with pytest.raises(
        ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
    ):
        build(PretrainOptions, **{"steps": 5, name: kind(value)})


def test_checks_that_span_options_run_when_the_options_are_made():
    with pytest.raises(ValueError, match=r"stop_after must be in \[1, steps=3\]"):
        build(PretrainOptions, steps=3, stop_after=4)
    with pytest.raises(ValueError, match="init and preset conflict"):
        build(PretrainOptions, steps=3, init="course", preset="tiny")
    with pytest.raises(ValueError, match="use objective 'none'"):
        build(PretrainOptions, steps=3, corpus="reviews")
    with pytest.raises(ValueError, match="task must be one of"):
        build(FinetuneOptions, task="ner")
    with pytest.raises(ValueError, match="steps is required"):
        build(PretrainOptions)
    with pytest.raises(TypeError, match="no option 'stpes'; the options are steps, batch_size"):
        build(FinetuneOptions, stpes=3)


@pytest.mark.parametrize("command", sorted(RECIPES))
def test_a_recipe_holds_the_whole_loop_options_declared_once(command):
    cls = RECIPES[command]
    (holder,) = [f for f in dataclasses.fields(cls) if "nested" in f.metadata]
    assert holder.metadata["nested"] is TrainOptions and holder.name == "train"
    own = {f.name for f in dataclasses.fields(cls)} - {"train"}
    loop = {f.name: f for f in dataclasses.fields(TrainOptions)}
    assert not own & set(loop), "a loop option declared again by the recipe"
    for d in declared(cls):  # the very declarations of the loop, not copies
        if d.name in loop:
            assert d.field is loop[d.name]
    args = _subparser(command).parse_args(
        ["--out", "x", "--steps", "5", "--grad-accum-steps", "2", "--checkpoint-every", "2",
         "--max-grad-norm", "0.5", "--precision", "bf16"]
    )  # fmt: skip
    made = from_namespace(cls, args)
    assert (made.train.grad_accum_steps, made.train.checkpoint_every) == (2, 2)
    assert (made.train.max_grad_norm, made.train.precision) == (0.5, "bf16")


def test_a_holder_gives_the_loop_its_own_defaults():
    assert build(PretrainOptions, steps=4).train.lr == 1e-3  # pretraining's
    finetuning = build(FinetuneOptions).train
    assert finetuning.lr is None and finetuning.steps is None  # filled by the recipe
    assert finetuning.group_by_length and TrainOptions(steps=1).lr == 1e-4  # the declared ones
    with pytest.raises(TypeError, match="TrainOptions has no option nope"):
        nested(TrainOptions, nope=1)


def test_saved_options_and_what_a_resume_may_change():
    before = saved(build(PretrainOptions, steps=10, lr=2e-3))
    assert "resume" not in before and "overwrite" not in before and "stop_after" not in before
    assert before["corpus"] == "wikipedia" and before["lr"] == 2e-3
    assert (
        changed(before, build(PretrainOptions, steps=10, lr=2e-3, threads=1, eval_batches=2)) == []
    )
    assert changed(before, build(PretrainOptions, steps=10, lr=1e-3)) == [
        "lr (saved 0.002, now 0.001)"
    ]


def test_a_new_option_is_one_field():
    @dataclasses.dataclass(kw_only=True)
    class Extra(TrainOptions):
        label_smoothing: float = option(0.0, help="smooth the targets by this much")
        lr: float = inherit(TrainOptions, "lr", 3e-4)
        rounds: int = option(2, help="rounds of something", check=POSITIVE_INT)

    parser = argparse.ArgumentParser()
    add_arguments(parser, Extra)
    args = parser.parse_args(["--steps", "4", "--label-smoothing", "0.1"])
    made = from_namespace(Extra, args)
    assert (made.label_smoothing, made.lr, made.rounds) == (0.1, 3e-4, 2)
    with pytest.raises(ValueError, match="rounds must be a positive int, got 0"):
        Extra(steps=4, rounds=0)


def test_train_names_the_options_when_one_is_misspelt(tiny_model=None):
    with pytest.raises(TypeError, match="the options are steps, batch_size"):
        train(None, [], stpes=3)


@pytest.mark.parametrize("command", sorted(RECIPES))
def test_seed_beyond_what_the_generators_take_is_refused_by_the_flag(command, capsys):
    required = ["--out", "x", *(["--steps", "5"] if command == "pretrain" else [])]
    with pytest.raises(SystemExit) as exit_:
        _subparser(command).parse_args([*required, "--seed", str(10**20)])
    assert exit_.value.code == 2
    assert re.search(
        r"--seed: must be an int in \[0, 2\*\*32 - 1\], got 1000", capsys.readouterr().err
    )
    assert _subparser(command).parse_args([*required, "--seed", str(2**32 - 1)]).seed == 2**32 - 1
    with pytest.raises(ValueError, match=r"seed must be an int in \[0, 2\*\*32 - 1\]"):
        build(RECIPES[command], **({"steps": 5} if command == "pretrain" else {}), seed=2**32)
