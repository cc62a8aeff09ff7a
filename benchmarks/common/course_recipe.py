"""The course checkpoint's pretraining recipe, defined once: the recipe.json that `minibert
pretrain` wrote beside the checkpoint (data/course_checkpoint), which the checkpoint's card
prints. The benchmarks that re-run the recipe (on less text, or its first steps) read it here."""

from __future__ import annotations

import json
from typing import Any

from minibert import assets

# the options that make the recipe (the rest of recipe.json are the command's defaults, the
# corpus and where it ran)
SCHEDULE = ("preset", "steps", "warmup_steps", "lr", "dropout", "eval_every", "seed")
COMMAND = (*SCHEDULE[:5], "neighbour_steps", "eval_every", "checkpoint_every", "seed")


def options(keys: tuple[str, ...] = SCHEDULE) -> dict[str, Any]:
    """The recipe's options by name (recipes.pretrain's keywords): {"preset": "tiny", ...}."""
    recipe = json.loads(
        (assets.course_checkpoint("course") / "recipe.json").read_text(encoding="utf-8")
    )
    missing = [key for key in keys if key not in recipe]
    if missing:
        raise KeyError(
            f"the course checkpoint's recipe.json has no {missing}; it has {list(recipe)}"
        )
    return {key: recipe[key] for key in keys}


def flags(keys: tuple[str, ...] = COMMAND) -> list[str]:
    """The same options as `minibert pretrain` flags: ["--preset", "tiny", "--steps", ...]."""
    out = []
    for key, value in options(keys).items():
        out += [
            f"--{key.replace('_', '-')}",
            f"{value:g}" if isinstance(value, float) else str(value),
        ]
    return out
