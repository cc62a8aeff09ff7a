"""Flags from options: the command line of ``minibert pretrain`` and ``finetune`` is generated
from the options' declarations (``minibert.options``), each flag with the option's own check.

    add_arguments(parser, PretrainOptions)        # --steps, --lr, ... (the loop's options too)
    options = from_namespace(PretrainOptions, parser.parse_args())
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Collection
from typing import Any

from minibert.options import build, declared

__all__ = ["add_arguments", "argparse_type", "from_namespace"]


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


def add_arguments(
    parser: argparse.ArgumentParser, cls: type, unlisted: Collection[str] = ()
) -> None:
    """A flag for every option of cls, nested ones included (``--max-len`` for max_len), its help
    saying its default there. The options in unlisted are parsed but left out of --help: a
    command that sets one itself refuses it with its own message."""
    for d in declared(cls):
        if not d.cli:
            continue
        f, kind, default = d.field, d.kind, d.default
        flag, check = "--" + f.name.replace("_", "-"), f.metadata.get("check")
        help_text = d.help.replace("%", "%%")
        if "default" not in help_text and default not in (None, False, dataclasses.MISSING):
            help_text += f" (default: {default})"  # the default, said once
        if d.name in unlisted:
            help_text = argparse.SUPPRESS
        if kind is bool:
            parser.add_argument(flag, action="store_true", default=default, help=help_text)
            continue
        required = default is dataclasses.MISSING
        choices = getattr(check, "choices", None)
        renamed = getattr(check, "renamed", None)
        parser.add_argument(
            flag,
            type=_renaming(flag, renamed)
            if renamed
            else argparse_type(kind, None if choices else check)
            if kind in (int, float, str)
            else kind,
            choices=choices,
            required=required,
            default=None if required else default,
            help=help_text,
        )


def _renaming(flag: str, renamed: dict[str, str]) -> Callable[[str], str]:
    """An argparse type that reads a renamed value as its new name, saying so in one line (the
    promise to users: an old name keeps working, and says what it is now)."""

    def parse(text: str) -> str:
        if text in renamed:
            print(f"minibert: {flag} {text} is now {flag} {renamed[text]}", file=sys.stderr)
            return renamed[text]
        return text

    return parse


def from_namespace(cls: type, args: argparse.Namespace) -> Any:
    """The options object of cls from parsed flags (only cls's options that have flags are read)."""
    return build(cls, **{d.name: getattr(args, d.name) for d in declared(cls) if d.cli})
