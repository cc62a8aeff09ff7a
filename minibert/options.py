"""Options as data: every option of the loop and the recipes declared once, in a dataclass field::

    @dataclass(kw_only=True)
    class TrainOptions:
        steps: int = option(help="optimizer steps", check=POSITIVE_INT)
        lr: float = option(1e-4, help="peak learning rate of AdamW", check=POSITIVE)

One declaration (name, type, default, check, help) gives everything else:

- the command-line flag and its help (``minibert.commands.flags.add_arguments``: ``--steps``,
  ``--lr``; a bool is a switch; an option without a default is a required flag);
- the check, run when the options are made (``check_fields``, from ``__post_init__``), and by
  argparse on the flag's text, so the command line and Python refuse the same values;
- the options saved beside a model (``saved``: recipe.json, results.json);
- what a resumed run must share with the run it continues (``changed``).

Options compose: a recipe's options *hold* the loop's whole ``TrainOptions`` in one ``nested``
field (with the recipe's own defaults), so every loop option reaches both commands and the Python
API without being declared twice. To a user the options are flat: the flags (``--lr``), the
keywords (``build(PretrainOptions, steps=300, lr=1e-3)``, ``pretrain(out, steps=300)``) and the
saved recipe name each option once, wherever it is declared.

A new option is one field here, in the class that owns it (``training.TrainOptions`` for the
loop, ``recipes.PretrainOptions`` or ``recipes.FinetuneOptions`` for a recipe's model, data and
task); the CLI, the checks, the saved recipe and the resume comparison pick it up.
"""

from __future__ import annotations

import dataclasses
import math
import re
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
    "REQUIRED",
    "build",
    "changed",
    "check_fields",
    "declared",
    "inherit",
    "nested",
    "one_of",
    "option",
    "replace",
    "saved",
    "values",
]

REQUIRED = dataclasses.MISSING  # a default in nested(): the option must be given


class Check:
    """A rule one option's value must follow: ``check(value)`` is None, or what is wrong.
    renamed: old value -> its new name; an old value is refused naming the new one (the CLI
    reads it as the new one, saying so in one line: a value users have met keeps working)."""

    def __init__(
        self,
        says: str,
        test: Callable[[Any], bool],
        choices: tuple | None = None,
        renamed: dict[str, str] | None = None,
    ):
        self.says, self.test, self.choices = says, test, choices
        self.renamed = renamed or {}

    def __call__(self, value: Any) -> str | None:
        """None when value follows the rule, else "must be <the rule>" (or the new name)."""
        if isinstance(value, str) and value in self.renamed:
            return f"{value!r} is now {self.renamed[value]!r}: give that"
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


def one_of(*choices: str, renamed: dict[str, str] | None = None) -> Check:
    """A check that the value is one of the choices (the CLI offers them as its choices);
    renamed: old names -> new ones (refused naming the new one; the CLI's alias)."""
    says = f"one of {', '.join(map(repr, choices))}"
    return Check(says, lambda v: v in choices, choices, renamed)


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


def nested(
    cls: type, *, hide: tuple[str, ...] = (), notes: dict[str, str] | None = None, **defaults: Any
) -> Any:
    """A field that holds a whole options object of cls (a recipe's loop options): cls's options
    become the holder's too (flags, checks, saving, resume), with these defaults in place of the
    declared ones (REQUIRED: the flag is required), the options in hide off the command line and
    notes added to some options' help (what a None default means there)."""
    names = {f.name for f in dataclasses.fields(cls)}
    if unknown := (set(defaults) | set(hide) | set(notes or {})) - names:
        raise TypeError(f"{cls.__name__} has no option {', '.join(sorted(unknown))}")
    made = {name: None if value is REQUIRED else value for name, value in defaults.items()}
    meta = {
        "nested": cls,
        "defaults": defaults,
        "hide": tuple(hide),
        "notes": notes or {},
        "help": cls.__doc__,
        "check": None,
        "cli": True,
        "resume": "same",
        "save": True,
    }
    return dataclasses.field(default_factory=lambda: cls(**made), metadata=meta)


@dataclasses.dataclass(frozen=True)
class Declared:
    """One option as a holder sees it: its declaration, type, and the default and flag it has there."""

    field: dataclasses.Field
    kind: type
    optional: bool  # None is allowed
    default: Any  # the holder's default (a nested field's override), or MISSING: required
    cli: bool
    note: str = ""  # the holder's addition to the help

    @property
    def help(self) -> str:
        """The option's help (a callable help is asked now: a list that can grow, like the
        registered tasks), with the holder's note, whose "(default: ...)" replaces the declared."""
        text = self.field.metadata["help"]
        text = text() if callable(text) else text
        if self.note.startswith("(default:"):
            text = re.sub(r"\s*\(default: [^)]*\)", "", text)
        return " ".join(filter(None, (text, self.note)))

    @property
    def name(self) -> str:
        """The option's name: its field's, its flag's (--max-len) and its saved key."""
        return self.field.name


def declared(cls: type) -> list[Declared]:
    """Every option of an options class, those of its nested options included, each once."""
    hints, found = typing.get_type_hints(cls), []
    for f in dataclasses.fields(cls):
        if "nested" in f.metadata:
            over, hide, notes = f.metadata["defaults"], f.metadata["hide"], f.metadata["notes"]
            found += [
                dataclasses.replace(
                    d,
                    default=over.get(d.name, d.default),
                    cli=d.cli and d.name not in hide,
                    note=notes.get(d.name, d.note),
                )
                for d in declared(f.metadata["nested"])
            ]
        else:
            kind, optional = _kind(hints[f.name])
            found.append(Declared(f, kind, optional, f.default, f.metadata.get("cli", True)))
    names = [d.name for d in found]
    if len(names) != len(set(names)):
        raise TypeError(f"{cls.__name__} declares an option twice: {sorted(names)}")
    return found


def build(cls: type, **given: Any) -> Any:
    """An options object of cls from flat keyword values (those of a nested options object go
    into it): ``build(PretrainOptions, steps=300, preset="tiny")``. A misspelt name is a
    TypeError listing the options."""
    fields, kwargs, rest = dataclasses.fields(cls), {}, dict(given)
    for f in fields:
        if "nested" in f.metadata:
            inner = f.metadata["nested"]
            mine = {d.name: rest.pop(d.name) for d in declared(inner) if d.name in rest}
            base = rest.pop(f.name, None)
            if base is not None:
                kwargs[f.name] = replace(base, **mine)
                continue
            made = {k: None if v is REQUIRED else v for k, v in f.metadata["defaults"].items()}
            kwargs[f.name] = build(inner, **{**made, **mine})
        elif f.name in rest:
            kwargs[f.name] = rest.pop(f.name)
    if rest:
        known = ", ".join(d.name for d in declared(cls))
        raise TypeError(
            f"{cls.__name__}: no option {', '.join(map(repr, sorted(rest)))}; the options are "
            f"{known}"
        )
    return cls(**kwargs)


def values(options: Any) -> dict[str, Any]:
    """Every option's value, flat (a nested object's options beside the holder's own)."""
    found = {}
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        found.update(values(value) if "nested" in f.metadata else {f.name: value})
    return found


def replace(options: Any, **changes: Any) -> Any:
    """A copy of an options object with flat changes (nested options included), checked anew."""
    return build(type(options), **{**values(options), **changes})


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
    """Run every option's check; the first value refused raises ValueError naming the option.
    (A nested options object checked itself when it was made.)"""
    for f, _, optional in _declared(type(options)):
        if "nested" in f.metadata:
            continue
        value = getattr(options, f.name)
        if value is None and optional:
            continue
        problem = f.metadata["check"](value) if f.metadata.get("check") else None
        if problem:
            raise ValueError(f"{f.name} {problem}, got {value!r}")


def _plain(value: Any) -> Any:
    return str(value) if isinstance(value, Path) else value


def saved(options: Any) -> dict[str, Any]:
    """The options to save beside a model, flat (JSON types: a path as its text)."""
    found = {}
    for f in dataclasses.fields(options):
        if "nested" in f.metadata:
            found.update(saved(getattr(options, f.name)))
        elif f.metadata.get("save", True):
            found[f.name] = _plain(getattr(options, f.name))
    return found


def changed(before: dict[str, Any], options: Any) -> list[str]:
    """The options a resumed run may not change that differ from the saved ones, described."""
    now = saved(options)
    return [
        f"{d.name} (saved {before[d.name]!r}, now {now[d.name]!r})"
        for d in declared(type(options))
        if d.field.metadata.get("resume", "same") == "same"
        and d.name in now
        and d.name in before
        and before[d.name] != now[d.name]
    ]
