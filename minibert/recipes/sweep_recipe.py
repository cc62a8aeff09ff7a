"""The learning rate chosen on dev, by a rule a sceptic can check.

    from minibert.recipes import sweep
    result = sweep("runs/rt-sweep", [1e-4, 3e-4, 1e-3, 3e-3], model="course", train_examples=256)
    result.chosen.lr, result.report()

One fine-tuning run per rate (``finetune``, each into its own sub-folder, ``lr-0.001``); each run
keeps its best evaluation by the task's dev measure, which is insensitive to label balance
(balanced accuracy for a label per text, span F1 or exact match for the others), so a model
that gives every dev item the majority label scores 0.5, not the majority's share. The rules:

- the rate whose kept evaluation is best by that measure wins;
- a tie on the measure (a collapsed model scores exactly 0.5 at every rate that collapses) is
  broken by the lower dev loss at the kept evaluation, then by the smaller rate; the tied rates
  are reported;
- a winner at the grid's smallest or largest rate widens the grid by one more rate at the same
  ratio on that side, at most ``widen`` times; a winner still at the edge is reported as such.

Test never chooses: it is measured for every run and left to the caller to report.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from minibert.options import changed, saved
from minibert.recipes.finetune_recipe import FinetuneOptions, FinetuneResult, finetune
from minibert.recipes.outputs import LOCK, MANIFEST, RUN_FOLDER, add_to_manifest, manifest_files
from minibert.recipes.shared import options_of
from minibert.run_state import STATE_FILE
from minibert.utils import atomic_write, read_json_object

__all__ = ["Sweep", "Trial", "choose_lr", "sweep"]


@dataclass
class Trial:
    """One rate's run: its dev measure and dev loss at the kept evaluation, and what it returned."""

    lr: float
    measure: float
    loss: float
    result: Any = None


@dataclass
class Sweep:
    """The rates tried, the one chosen, and how: ties broken, rates added at the grid's edge."""

    measure: str
    higher_is_better: bool
    trials: list[Trial]  # in the order they ran
    chosen: Trial
    ties: list[float] = field(default_factory=list)  # other rates with the chosen one's measure
    widened: list[float] = field(
        default_factory=list
    )  # rates added because a winner was at an edge
    at_edge: bool = False  # the winner is the smallest or largest rate tried, after widening
    folder: Path | None = None  # where sweep() wrote the runs and sweep.json

    def report(self) -> str:
        """A line per rate (dev measure, dev loss), then the rate kept and why."""
        lines = []
        for t in sorted(self.trials, key=lambda t: t.lr):
            added = "  (added: the best was at the grid's edge)" if t.lr in self.widened else ""
            mark = "  <- chosen" if t is self.chosen else ""
            lines.append(
                f"lr {t.lr:<8g} dev {self.measure} {t.measure:.4f}, dev loss {t.loss:.4f}"
                f"{mark}{added}"
            )
        if self.ties:
            lines.append(
                f"tied on dev {self.measure} with lr {', '.join(f'{r:g}' for r in self.ties)}: "
                "the lower dev loss kept"
            )
        if self.at_edge:
            lines.append(
                f"lr {self.chosen.lr:g} is still at the edge of the rates tried: a wider grid may do "
                "better"
            )
        if isinstance(self.chosen.result, FinetuneResult):  # its test scores and folder
            kept = self.chosen.result.report().splitlines()
            lines += [line for line in kept if line.startswith(("test", "saved"))]
        if self.folder is not None:
            lines.append(f"every rate's dev and test measures: {self.folder / 'sweep.json'}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """The sweep for a JSON file: every rate's measure and loss, the choice and its reasons."""
        return {
            "measure": self.measure,
            "higher_is_better": self.higher_is_better,
            "trials": [
                {"lr": t.lr, "dev_measure": t.measure, "dev_loss": t.loss} for t in self.trials
            ],
            "chosen": self.chosen.lr,
            "ties": self.ties,
            "widened": self.widened,
            "at_edge": self.at_edge,
        }


def _next_rate(rates: list[float], side: int) -> float:
    """One more rate beyond the grid's edge (side -1: below the smallest, +1: above the largest),
    at the ratio of the two rates at that edge, to 3 significant digits."""
    low, high = (rates[0], rates[1]) if side < 0 else (rates[-2], rates[-1])
    rate = low * low / high if side < 0 else high * high / low
    return float(f"{rate:.3g}")


def _best(trials: Sequence[Trial], higher_is_better: bool) -> tuple[Trial, list[float]]:
    """The winner (best measure; then lower dev loss; then the smaller rate) and the rates tied
    with it on the measure."""
    sign = 1 if higher_is_better else -1
    top = max(sign * t.measure for t in trials)
    tied = [t for t in trials if sign * t.measure == top]
    winner = min(tied, key=lambda t: (t.loss if math.isfinite(t.loss) else math.inf, t.lr))
    return winner, sorted(t.lr for t in tied if t is not winner)


def choose_lr(
    run: Callable[[float], Trial],
    grid: Sequence[float],
    *,
    measure: str = "dev measure",
    higher_is_better: bool = True,
    widen: int = 2,
) -> Sweep:
    """Run every rate of grid (ascending, at least two), widen at the edge, choose; see the module."""
    _check_grid(grid, widen)
    rates = sorted(float(r) for r in grid)
    trials = [run(rate) for rate in rates]
    widened: list[float] = []
    for _ in range(widen):
        winner, _ = _best(trials, higher_is_better)
        tried = sorted(t.lr for t in trials)
        if winner.lr not in (tried[0], tried[-1]):
            break
        rate = _next_rate(tried, -1 if winner.lr == tried[0] else 1)
        trials.append(run(rate))
        widened.append(rate)
    winner, ties = _best(trials, higher_is_better)
    tried = sorted(t.lr for t in trials)
    return Sweep(
        measure,
        higher_is_better,
        trials,
        winner,
        ties,
        widened,
        at_edge=winner.lr in (tried[0], tried[-1]),
    )


def _kept_loss(result: FinetuneResult) -> float:
    """The dev loss of the evaluation a fine-tuning run kept (NaN when it recorded none)."""
    step = result.selection["step"]
    record = next((h for h in result.history if h.get("step") == step and "eval_loss" in h), None)
    return float(record["eval_loss"]) if record else math.nan


def _task_measure(options: FinetuneOptions | None, changes: dict[str, Any]) -> tuple[str, bool]:
    """The dev measure (its name, whether higher is better) of the task being fine-tuned."""
    from minibert import tasks

    selection = tasks.get(changes.get("task", (options or FinetuneOptions()).task)).selection
    return selection.name, selection.higher_is_better


def sweep(
    out: str | Path,
    grid: Sequence[float],
    options: FinetuneOptions | None = None,
    *,
    widen: int = 2,
    **changes: Any,
) -> Sweep:
    """Fine-tune at each rate of grid into out/lr-RATE and choose the rate on dev (the module's
    rules); writes out/sweep.json. options and changes are finetune's (lr is the grid's).

    With resume (``--resume``), a sweep that was stopped goes on: a rate whose run finished is
    read from its folder (with the same options), an interrupted one is resumed from its
    checkpoint or run again, and the rates not yet reached run as usual.
    """
    o = options_of(FinetuneOptions, options, changes)
    if o.train.lr is not None:
        raise ValueError(
            "the sweep sets the learning rate: the rates to try are its grid (--lrs); "
            "lr (--lr) is finetune's, for one rate"
        )
    _check_grid(grid, widen)
    out = Path(out)
    _check_summary(out, o)

    def run(rate: float) -> Trial:
        result = _run_or_read(out / f"lr-{rate:g}", o, rate)
        return Trial(rate, float(result.selection["value"]), _kept_loss(result), result)

    name, higher_is_better = _task_measure(o, {})
    chosen = choose_lr(run, grid, measure=name, higher_is_better=higher_is_better, widen=widen)
    summary = chosen.as_dict() | {
        "folders": {f"{t.lr:g}": str(t.result.folder) for t in chosen.trials},
        "test": {
            f"{t.lr:g}": {
                k: v for k, v in t.result.test.items() if isinstance(v, (int, float, str))
            }
            for t in chosen.trials
        },
    }
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / SUMMARY, json.dumps(summary, indent=1, default=str) + "\n")
    add_to_manifest(out, [SUMMARY])  # ours: a later sweep may replace it
    chosen.folder = out
    return chosen


SUMMARY = "sweep.json"  # in the sweep's folder: every rate's measures and the choice


def _check_grid(grid: Sequence[float], widen: int) -> None:
    """Every rate finite and positive, at least two different ones: checked before any training."""
    rates = list(grid)
    usable = all(isinstance(r, (int, float)) and math.isfinite(r) and r > 0 for r in rates)
    if len(rates) < 2 or not usable or len(set(rates)) != len(rates):
        raise ValueError(f"the grid needs at least two different positive rates, got {rates}")
    if widen < 0:
        raise ValueError(f"widen must be 0 or more, got {widen}")


def _check_summary(out: Path, o: FinetuneOptions) -> None:
    """Refuse a sweep folder that is a file, or whose sweep.json no sweep of ours wrote; with
    resume, one that does not exist."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"sweep folder {out} is a file; give a folder")
    if o.train.resume and not out.is_dir():
        raise ValueError(f"resume: {out} does not exist, so it holds no sweep to continue")
    if (out / SUMMARY).exists() and SUMMARY not in manifest_files(out):
        raise ValueError(
            f"{out / SUMMARY} was not written by a sweep (no {MANIFEST} lists it), and a sweep "
            "writes its summary there: move it away, or choose another folder"
        )


def _run_or_read(folder: Path, o: FinetuneOptions, rate: float) -> FinetuneResult:
    """Fine-tune at rate into folder; with resume, read a finished run of the same options, resume
    an interrupted one, and start the others afresh."""
    if not o.train.resume:
        return finetune(folder, o, lr=rate)
    if (folder / RUN_FOLDER / STATE_FILE).is_file():  # interrupted after a checkpoint
        return finetune(folder, o, lr=rate)
    if (folder / "results.json").is_file() and not (folder / RUN_FOLDER).exists():
        return _finished(folder, options_of(FinetuneOptions, o, {"lr": rate}))
    left = [p.name for p in folder.iterdir()] if folder.is_dir() else []
    started = {RUN_FOLDER, LOCK} | {p.name for p in folder.glob(".*.partial")}
    if set(left) - started:
        raise ValueError(
            f"resume: {folder} holds neither a finished run nor an interrupted one "
            f"({', '.join(sorted(left)[:5])}); move it away, or run the sweep with --overwrite"
        )  # a folder the run began and left before its first checkpoint: started again
    return finetune(folder, o, lr=rate, resume=False, overwrite=bool(left))


def _finished(folder: Path, o: FinetuneOptions) -> FinetuneResult:
    """A finished run's result, read from its folder (refused if it ran with other options)."""
    record = read_json_object(folder / "results.json")
    history = json.loads((folder / "history.json").read_text(encoding="utf-8"))
    before = dict(record.get("options", {}))
    now = saved(o)
    before.update({k: None for k, v in now.items() if v is None})  # left for the recipe to fill
    if differ := changed(before, o):
        raise ValueError(
            f"resume: {folder} holds a finished run with other options ({', '.join(differ)}); "
            "resume with the same options, or run the sweep with --overwrite"
        )
    dev, test = record.get("dev", {}), record.get("test", {})
    return FinetuneResult(
        folder, history, dev, test, record.get("seconds", 0.0), record["selection"], task=o.task
    )
