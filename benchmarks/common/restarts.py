"""Fair selection for a grid of fine-tuning runs: the seed that chooses the learning rate is not
reported, and a reported run that never left the trivial level on dev is restarted.

The BERT paper (section 4.1, on its small GLUE sets): "fine-tuning was sometimes unstable on
small datasets, so we ran several random restarts and selected the best model on the Dev set".
Here the rule is stated in advance and chooses on dev only:

- seed ``CHOOSING_SEED`` (0) runs at every rate of the sweep and chooses the rate
  (``recipes.choose_lr``); it is then left out: the reported seeds are ``REPORTED_SEEDS`` (1 and
  2), run at the chosen rate, so the rate is never chosen on the runs that report it (no
  winner's curse). A third reported seed would cost another 4 CPU-hours of the grid: not done;
- a reported run whose kept dev measure is at the trivial level (``Selection.near_trivial``: one
  label everywhere, no spans, all outside, within ``TRIVIAL_MARGIN`` of it) is restarted with the
  seeds ``restart_seeds(seed)`` (seed 1: 101, 102, 103), at most ``RESTARTS`` of them, and the
  first restart whose dev measure leaves the trivial level takes its place; if none does, the
  original run stays and is marked trivial. Test never chooses anything.

A restart draws its own training subset (a run's seed draws the subset, the initialisation and
the batches alike), as a fresh run with that seed would.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

CHOOSING_SEED = 0  # runs the sweep and chooses the rate; never reported
REPORTED_SEEDS = (1, 2)  # run at the chosen rate and reported
RESTARTS = 3  # at most this many restarts of a reported run at the trivial level

Run = TypeVar("Run")


def restart_seeds(seed: int, restarts: int = RESTARTS) -> list[int]:
    """The seeds that may stand in for a reported seed, in order: 101, 102, 103 for seed 1."""
    return [100 * seed + k for k in range(1, restarts + 1)]


@dataclass
class Kept:
    """Which run holds a reported seed's place: the seed itself, or the first restart that left the
    trivial level on dev."""

    seed: int  # the reported seed whose place this is
    kept: int  # the seed whose run is reported
    tried: list[int] = field(default_factory=list)  # the restarts that ran, in order
    trivial: bool = False  # the kept run is still at the trivial level on dev
    complete: bool = True  # False: a restart was due but not run (nothing may run: --cached-only)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def with_restarts(
    run: Callable[[int], Run | None],
    trivial: Callable[[Run], bool],
    seed: int,
    restarts: int = RESTARTS,
) -> tuple[Run, Kept]:
    """run(seed), restarted while its dev measure is at the trivial level (trivial(run) True):
    run(restart) for each of restart_seeds(seed, restarts) in turn, the first that is not trivial
    kept. run returns None for a restart that may not run (the rule stops there, marked
    incomplete); the reported seed itself must run. Returns the kept run and how it was kept."""
    first = run(seed)
    if first is None:
        raise LookupError(f"seed {seed} has no run: a reported seed must run")
    if not trivial(first):
        return first, Kept(seed, seed)
    tried = []
    for restart in restart_seeds(seed, restarts):
        again = run(restart)
        if again is None:
            return first, Kept(seed, seed, tried, trivial=True, complete=False)
        tried.append(restart)
        if not trivial(again):
            return again, Kept(seed, restart, tried)
    return first, Kept(seed, seed, tried, trivial=True)
