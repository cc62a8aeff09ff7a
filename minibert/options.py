"""Options as data: every option of the loop and the recipes declared once, in a dataclass field::

    @dataclass(kw_only=True)
    class TrainOptions:
        steps: int = option(help="optimizer steps", check=POSITIVE_INT)
        lr: float = option(1e-4, help="peak learning rate of AdamW", check=POSITIVE)

One declaration (name, type, default, check, help) gives everything else:

- the command-line flag and its help (``add_arguments``: ``--steps``, ``--lr``; a bool is a
  switch; an option without a default is a required flag);
- the check, run when the options are made (``check_fields``, from ``__post_init__``), and by
  argparse on the flag's text, so the command line and Python refuse the same values;
- the options saved beside a model (``saved``: recipe.json, results.json);
- what a resumed run must share with the run it continues (``changed``).

A new option is one field here, in the class that owns it (``training.TrainOptions``,
``recipes.PretrainOptions``, ``recipes.FinetuneOptions``); the CLI, the checks, the saved
recipe and the resume comparison pick it up.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "COUNT",
    "FRACTION",
    "NON_NEGATIVE",
    "OPEN_FRACTION",
    "POSITIVE",
    "POSITIVE_INT",
    "SEED",
    "UNIT_INTERVAL",
    "Check",
    "add_arguments",
    "argparse_type",
    "changed",
    "check_fields",
    "from_namespace",
    "inherit",
    "one_of",
    "option",
    "saved",
]


class Check:
    """A rule one option's value must follow: ``check(value)`` is None, or what is wrong."""

    def __init__(self, says: str, test: Callable[[Any], bool], choices: tuple | None = None):
        self.says, self.test, self.choices = says, test, choices

    def __call__(self, value: Any) -> str | None:
        """None when value follows the rule, else "must be <the rule>"."""
        return None if self.test(value) else f"must be {self.says}"


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


POSITIVE_INT = Check("a positive int", lambda v: _int(v) and v >= 1)
COUNT = Check("an int >= 0", lambda v: _int(v) and v >= 0)
POSITIVE = Check("a positive finite number", lambda v: _number(v) and v > 0)
NON_NEGATIVE = Check("a finite number >= 0", lambda v: _number(v) and v >= 0)
FRACTION = Check("in [0, 1)", lambda v: _number(v) and 0 <= v < 1)
OPEN_FRACTION = Check("in (0, 1)", lambda v: _number(v) and 0 < v < 1)
UNIT_INTERVAL = Check("in [0, 1]", lambda v: _number(v) and 0 <= v <= 1)
# what Python's random, NumPy's legacy seed and torch.manual_seed all accept as the same number
SEED = Check("an int in [0, 2**32 - 1]", lambda v: _int(v) and 0 <= v < 2**32)


def one_of(*choices: str) -> Check:
    """A check that the value is one of the choices (the CLI offers them as its choices)."""
    return Check(f"one of {', '.join(map(repr, choices))}", lambda v: v in choices, choices)


def option(
    default: Any = dataclasses.MISSING,
    *,
    help: str,
    check: Callable[[Any], str | None] | None = None,
    cli: bool = True,
    resume: str = "same",
    save: bool = True,
) -> Any:
    """A dataclass field that declares one option; no default makes it required.

    cli=False keeps it off the command line; resume="free" lets a resumed run change it (threads,
    device, how often to evaluate); save=False keeps it out of the saved options (resume itself).
    """
    if resume not in ("same", "free"):
        raise ValueError(f"resume must be 'same' or 'free', got {resume!r}")
    meta = {"help": help, "check": check, "cli": cli, "resume": resume, "save": save}
    return dataclasses.field(default=default, metadata=meta)


def inherit(cls: type, name: str, default: Any = dataclasses.MISSING, **meta: Any) -> Any:
    """A parent's option with another default (or cli/resume/save), its help and check kept."""
    parent = next(f for f in dataclasses.fields(cls) if f.name == name)
    kept = dict(parent.metadata) | meta
    return dataclasses.field(
        default=parent.default if default is dataclasses.MISSING else default, metadata=kept
    )


def _kind(hint: Any) -> tuple[type, bool]:
    """(the value's type, whether None is allowed) of a field's annotation."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        kinds = [a for a in args if a is not type(None)]
        return (str if Path in kinds else kinds[0]), type(None) in args
    return hint, False


def _declared(cls: type) -> list[tuple[dataclasses.Field, type, bool]]:
    """Every field of an options class with its type and whether it may be None."""
    hints = typing.get_type_hints(cls)
    return [(f, *_kind(hints[f.name])) for f in dataclasses.fields(cls)]


def check_fields(options: Any) -> None:
    """Run every option's check; the first value refused raises ValueError naming the option."""
    for f, _, optional in _declared(type(options)):
        value = getattr(options, f.name)
        if value is None and optional:
            continue
        problem = f.metadata["check"](value) if f.metadata.get("check") else None
        if problem:
            raise ValueError(f"{f.name} {problem}, got {value!r}")


def argparse_type(kind: type, check: Callable | None) -> Callable[[str], Any]:
    """An argparse type: the text as kind, refused with the option's own check."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a{'n int' if kind is int else ' number'}"
            ) from None
        problem = check(value) if check else None
        if problem:
            raise argparse.ArgumentTypeError(f"{problem}, got {text}")
        return value

    return parse


def add_arguments(parser: argparse.ArgumentParser, cls: type) -> None:
    """A flag for every option of cls (``--max-len`` for max_len), its help saying its default."""
    for f, kind, _ in _declared(cls):
        if not f.metadata.get("cli", True):
            continue
        flag, check = "--" + f.name.replace("_", "-"), f.metadata.get("check")
        help_text = f.metadata["help"].replace("%", "%%")
        if "default" not in help_text and f.default not in (None, False, dataclasses.MISSING):
            help_text += f" (default: {f.default})"  # the declared default, said once
        if kind is bool:
            parser.add_argument(flag, action="store_true", help=help_text)
            continue
        required = f.default is dataclasses.MISSING
        choices = getattr(check, "choices", None)
        parser.add_argument(
            flag,
            type=argparse_type(kind, None if choices else check)
            if kind in (int, float, str)
            else kind,
            choices=choices,
            required=required,
            default=None if required else f.default,
            help=help_text,
        )


def from_namespace(cls: type, args: argparse.Namespace) -> Any:
    """The options object of cls from parsed flags (only cls's own options are read)."""
    names = [f.name for f in dataclasses.fields(cls) if f.metadata.get("cli", True)]
    return cls(**{name: getattr(args, name) for name in names})


def _plain(value: Any) -> Any:
    return str(value) if isinstance(value, Path) else value


def saved(options: Any) -> dict[str, Any]:
    """The options to save beside a model (JSON types: a path as its text)."""
    return {
        f.name: _plain(getattr(options, f.name))
        for f in dataclasses.fields(options)
        if f.metadata.get("save", True)
    }


def changed(before: dict[str, Any], options: Any) -> list[str]:
    """The options a resumed run may not change that differ from the saved ones, described."""
    now = saved(options)
    return [
        f"{f.name} (saved {before[f.name]!r}, now {now[f.name]!r})"
        for f in dataclasses.fields(options)
        if f.metadata.get("resume", "same") == "same"
        and f.name in now
        and f.name in before
        and before[f.name] != now[f.name]
    ]
