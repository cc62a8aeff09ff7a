"""A training run's state: what the loop holds between steps, and its checkpoint on disk.

    run = Run(model, forward, options, optimizer, scheduler, settings=...)   # a run at step 0
    save(path, run, seconds)                  # at a step boundary, atomically
    restore(path, run, device, leftovers)     # exactly where it stopped (or a clear refusal)

``Run`` is the loop's state (model, optimizer, schedule, step, history, clock); ``Position`` is
where the current step is (its phase and what undoing or finishing it needs), so that Ctrl-C lands
on a step boundary. A checkpoint is a torch zip (``torch.save``) loaded with weights_only: a
damaged file, a foreign one or one of another run is refused in one line naming it.
"""

from __future__ import annotations

import pickle
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from minibert.utils import atomic_write

__all__ = ["STATE_FILE", "Position", "Run", "TrainingError", "restore", "save"]

STATE_FILE = "training_state.pt"  # in the run's folder
AGAIN = "start again without resume (--overwrite on the command line)"


class TrainingError(RuntimeError):
    """Training cannot go on (a NaN or infinite loss, a checkpoint that does not fit)."""


@dataclass
class Run:
    """The loop's state between steps."""

    model: nn.Module
    forward: nn.Module  # what to call in training: DDP around the model under torchrun
    options: Any  # the TrainOptions
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    settings: dict[str, Any]  # the options a resumed run must share (its checkpoint records them)
    step: int = 0  # optimizer steps taken
    history: list[dict[str, float]] = field(default_factory=list)  # one record per step
    seconds: float = 0.0  # training time before this session (a resumed run's earlier ones)
    eval_pending: bool = False  # interrupted during the evaluation of the last step


@dataclass
class Position:
    """Where the current step is, for an interrupt to land on a step boundary."""

    phase: str = "boundary"  # boundary, step, update, bookkeeping or eval
    step: int = 0  # the step being taken
    rng: torch.Tensor | None = None  # torch's generator where the step began
    loss: float = 0.0
    grad_norm: float | None = None
    adam_before: set[int] = field(default_factory=set)  # the optimizer's step counts before


STATE_TYPES = {
    "model": dict,
    "optimizer": dict,
    "scheduler": dict,
    "torch_rng": torch.Tensor,
    "step": int,
    "history": list,
    "seconds": float,
    "eval_pending": bool,
    "settings": dict,
}


def save(path: Path, run: Run, seconds: float) -> None:
    """Write the run at a step boundary (model, optimizer, schedule, rng, history, clock) atomically."""
    state = {
        "model": run.model.state_dict(),
        "optimizer": run.optimizer.state_dict(),
        "scheduler": run.scheduler.state_dict(),
        "torch_rng": torch.get_rng_state(),  # dropout draws from torch's generator
        "step": run.step,
        "history": run.history,
        "seconds": seconds,
        "eval_pending": run.eval_pending,
        "settings": run.settings,
    }
    atomic_write(path, lambda tmp: torch.save(state, tmp))


def restore(path: Path, run: Run, device: torch.device, leftovers: list[Path]) -> None:
    """Load a saved run into `run`, refusing one made with other settings (named)."""
    if not path.is_file():
        found = sorted(p.name for p in path.parent.iterdir()) if path.parent.is_dir() else []
        found += [f"{p.name} (an unfinished write, removed)" for p in leftovers]
        raise TrainingError(
            f"resume: no {path.name} in {path.parent} (it holds: {', '.join(found) or 'nothing'}); "
            "start without resume, or point to the folder of the interrupted run"
        )
    state = read(path, device)
    saved = state["settings"]
    differ = [
        f"{k}={run.settings[k]!r} (the checkpoint has {saved[k]!r})"
        for k in run.settings
        if k in saved and saved[k] != run.settings[k]
    ]
    if differ:
        raise TrainingError(
            f"the checkpoint in {path.parent} was made with other settings: {', '.join(differ)}; "
            "resume with the same settings, or start a new run in another folder"
        )
    try:
        run.model.load_state_dict(state["model"])
        run.optimizer.load_state_dict(state["optimizer"])
        run.scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["torch_rng"].cpu())
    except (RuntimeError, ValueError, KeyError, TypeError) as exc:  # another model's, or damaged
        cause = " ".join(str(exc).split())  # load_state_dict's message spans lines
        raise ValueError(f"{path} does not fit this run ({cause:.300}); {AGAIN}") from None
    run.step, run.seconds, run.eval_pending = state["step"], state["seconds"], state["eval_pending"]
    run.history = list(state["history"])


def read(path: Path, device: torch.device) -> dict[str, Any]:
    """A saved run's state; a file that is damaged or holds something else raises a ValueError.
    torch.save writes a zip with a checksum per entry: checked first, they find a flipped bit."""
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
        if bad is not None:
            raise ValueError(f"the data of {bad} fails its checksum")
        # weights_only: a damaged or foreign pickle is refused, never run
        state = torch.load(path, map_location=device, weights_only=True)
    except (
        zipfile.BadZipFile,
        NotImplementedError,
        RuntimeError,
        EOFError,
        OSError,
        ValueError,
        KeyError,
        pickle.UnpicklingError,
    ) as exc:
        cause = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"{path} is damaged ({cause:.200}); {AGAIN}") from None
    wrong = [
        key
        for key, kind in STATE_TYPES.items()
        if not isinstance(state, dict) or not isinstance(state.get(key), kind)
    ]
    if wrong:
        raise ValueError(
            f"{path} is not a minibert training state (no valid {', '.join(wrong)}); {AGAIN}"
        )
    return state
