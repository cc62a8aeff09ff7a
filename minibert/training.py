"""One training loop for every task: pretraining and fine-tuning alike.

    history = train(model, train_data, eval_data, steps=2000, batch_size=32, lr=5e-4,
                    collate_fn=collate, metrics_fn=pretraining_metrics,
                    out_dir="runs/mini", checkpoint_every=500)

What it does, in order, each step: draw a batch (a fixed shuffle per epoch, from the seed), run the
model on it (the model returns ``.loss``), back-propagate (optionally accumulating gradients over
several micro-batches), clip the gradient norm, take an AdamW step (weight decay on weight
matrices, not on biases or LayerNorm), and move the learning rate along a linear warm-up then a
linear decay to zero. Every ``eval_every`` steps it measures the held-out loss and whatever the
task's ``metrics_fn`` adds. The loop knows nothing about a task: the model computes the loss and
the task supplies its batches and its measures; ``on_eval`` receives the history after each
evaluation (``minibert.viz.LiveCurves().update`` draws it live in a notebook).

A checkpoint (model, optimizer, schedule, random state, history, clock) is only ever the state at
a step boundary: it is written atomically every ``checkpoint_every`` steps, at the end, and on
Ctrl-C, which takes effect when the current step is done (a second Ctrl-C stops at once).
``resume=True`` continues from it exactly as the uninterrupted run would have on the CPU.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch import nn

from minibert.utils import atomic_write, remove_partial_files

__all__ = ["TrainingError", "evaluate", "linear_schedule", "make_optimizer", "train"]

STATE_FILE = "training_state.pt"
# settings a resumed run must share with the run that wrote the checkpoint
RESUME_SETTINGS = (
    "steps",
    "batch_size",
    "lr",
    "weight_decay",
    "warmup_steps",
    "max_grad_norm",
    "grad_accum_steps",
    "seed",
    "group_by_length",
)

Batch = dict[str, torch.Tensor]
MetricsFn = Callable[[Batch, Any], dict[str, tuple[float, float]]]  # name -> (sum, count)


class TrainingError(RuntimeError):
    """Training cannot go on (a NaN or infinite loss, a checkpoint that does not fit)."""


def make_optimizer(model: nn.Module, lr: float, weight_decay: float = 0.01) -> torch.optim.AdamW:
    """AdamW with weight decay on weight matrices only: no decay on biases and LayerNorm parameters."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        is_norm = "norm" in name.lower() or name.lower().endswith(("ln.weight", "ln_f.weight"))
        (no_decay if param.ndim < 2 or is_norm else decay).append(param)
    groups = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=1e-6)


def linear_schedule(step: int, warmup_steps: int, total_steps: int) -> float:
    """Learning-rate multiplier: 0 -> 1 over warmup_steps, then 1 -> 0 at total_steps."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))


def _to_device(batch: Batch, device: torch.device) -> Batch:
    return {k: v.to(device) for k, v in batch.items()}


@torch.no_grad()
def evaluate(
    model: nn.Module,
    data: Sequence,
    batch_size: int = 64,
    collate_fn: Callable | None = None,
    max_batches: int | None = None,
    device: torch.device | str | None = None,
    metrics_fn: MetricsFn | None = None,
) -> dict[str, float]:
    """Held-out measures: the mean loss per batch, and each of metrics_fn's sums over counts."""
    if len(data) == 0:
        raise ValueError("the evaluation set is empty: there is nothing to measure on")
    device = torch.device(device) if device is not None else next(model.parameters()).device
    was_training = model.training
    model.eval()
    totals: dict[str, list[float]] = {}
    try:
        for batches, start in enumerate(range(0, len(data), batch_size)):
            if max_batches is not None and batches >= max_batches:
                break
            items = [data[i] for i in range(start, min(start + batch_size, len(data)))]
            batch = _to_device(collate_fn(items) if collate_fn else items, device)
            out = model(**batch)
            parts = {"loss": (float(out.loss), 1)} if out.loss is not None else {}
            parts.update(metrics_fn(batch, out) if metrics_fn is not None else {})
            for name, (total, count) in parts.items():
                sums = totals.setdefault(name, [0.0, 0.0])
                sums[0] += total
                sums[1] += count
    finally:
        model.train(was_training)
    return {name: total / count for name, (total, count) in totals.items() if count}


GROUP = 50  # batches per group when batches are grouped by length


def _batch_order(
    n: int, epoch: int, seed: int, lengths: Sequence[int] | None = None, batch_size: int = 1
) -> list[int]:
    """The shuffle of epoch `epoch`: a permutation that depends only on (seed, epoch).

    With lengths, each run of GROUP * batch_size shuffled examples is sorted longest first, so a
    batch holds examples of similar length and pads little (Hugging Face's group_by_length). A
    set of fewer than GROUP batches is one run: its batches are then the same every epoch.
    """
    generator = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    order = torch.randperm(n, generator=generator).tolist()
    if lengths is None:
        return order
    size = GROUP * batch_size
    return [
        i
        for start in range(0, n, size)
        for i in sorted(order[start : start + size], key=lambda i: -lengths[i])
    ]


def _draw_batch(
    train_data: Sequence, index: int, batch_size: int, seed: int, lengths: Sequence[int] | None
) -> list:
    """The index-th batch of the run: epochs of a fixed shuffle, the last partial batch dropped."""
    first = index * batch_size
    epoch, offset = divmod(first, len(train_data) - len(train_data) % batch_size)
    if hasattr(train_data, "set_epoch"):
        train_data.set_epoch(epoch)  # dynamic masking: a new mask every epoch
    order = _batch_order(len(train_data), epoch, seed, lengths, batch_size)
    return [train_data[i] for i in order[offset : offset + batch_size]]


# --- saving and restoring a run ----------------------------------------------------------------


def _save_state(path: Path, run: dict[str, Any], seconds: float) -> None:
    """Write the run at a step boundary (model, optimizer, schedule, rng, history, clock) atomically."""
    state = {
        "model": run["model"].state_dict(),
        "optimizer": run["optimizer"].state_dict(),
        "scheduler": run["scheduler"].state_dict(),
        "torch_rng": torch.get_rng_state(),  # dropout draws from torch's generator
        "step": run["step"],
        "history": run["history"],
        "seconds": seconds,
        "eval_pending": run["eval_pending"],
        "settings": run["settings"],
    }
    atomic_write(path, lambda tmp: torch.save(state, tmp))


def _restore_state(
    path: Path, run: dict[str, Any], device: torch.device, leftovers: list[Path]
) -> None:
    """Load a saved run into `run`, refusing one made with other settings (named)."""
    if not path.is_file():
        found = sorted(p.name for p in path.parent.iterdir()) if path.parent.is_dir() else []
        found += [f"{p.name} (an unfinished write, removed)" for p in leftovers]
        raise TrainingError(
            f"resume: no {path.name} in {path.parent} (it holds: {', '.join(found) or 'nothing'}); "
            "start without resume, or point to the folder of the interrupted run"
        )
    state = torch.load(path, map_location=device, weights_only=True)
    saved = state.get("settings", {})
    differ = [
        f"{k}={run['settings'][k]!r} (the checkpoint has {saved[k]!r})"
        for k in RESUME_SETTINGS
        if k in saved and saved[k] != run["settings"][k]
    ]
    if differ:
        raise TrainingError(
            f"the checkpoint in {path.parent} was made with other settings: {', '.join(differ)}; "
            "resume with the same settings, or start a new run in another folder"
        )
    run["model"].load_state_dict(state["model"])
    run["optimizer"].load_state_dict(state["optimizer"])
    run["scheduler"].load_state_dict(state["scheduler"])
    run.update({k: state[k] for k in ("step", "seconds", "eval_pending")})
    run["history"] = list(state["history"])
    torch.set_rng_state(state["torch_rng"].cpu())


@contextmanager
def _deferred_ctrl_c() -> Iterator[dict[str, bool]]:
    """While inside, the first Ctrl-C only sets flag["stop"] (the loop stops at a step boundary)."""
    flag = {"stop": False}
    if threading.current_thread() is not threading.main_thread():
        yield flag  # signal handlers live in the main thread only; a KeyboardInterrupt still works
        return

    def handler(signum: int, frame: Any) -> None:
        flag["stop"] = True
        signal.signal(signal.SIGINT, previous)  # a second Ctrl-C interrupts at once

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)


def _adam_steps(optimizer: torch.optim.Optimizer) -> set[int]:
    """The update counts of the optimizer's parameters (one value when they are in step)."""
    return {int(s["step"]) for s in optimizer.state.values() if "step" in s}


# --- the loop ----------------------------------------------------------------------------------


def train(
    model: nn.Module,
    train_data: Sequence,
    eval_data: Sequence | None = None,
    *,
    steps: int,
    batch_size: int = 32,
    lr: float = 1e-4,
    weight_decay: float = 0.01,
    warmup_steps: int | None = None,
    max_grad_norm: float | None = 1.0,
    grad_accum_steps: int = 1,
    eval_every: int = 100,
    eval_batches: int | None = None,
    collate_fn: Callable | None = None,
    metrics_fn: MetricsFn | None = None,
    out_dir: str | Path | None = None,
    checkpoint_every: int | None = None,
    resume: bool = False,
    seed: int = 0,
    device: torch.device | str | None = None,
    progress: bool = True,
    on_eval: Callable[[list[dict]], None] | None = None,
    forward_kwargs: dict[str, Any] | None = None,
    stop_after: int | None = None,
    group_by_length: bool = False,
) -> list[dict[str, float]]:
    """Train `model` for `steps` optimizer steps; return the history (one dict per step).

    metrics_fn(batch, output) -> {name: (sum, count)} adds the task's held-out measures;
    forward_kwargs are extra arguments for the model in training steps (not in evaluation),
    e.g. {"sparse_mlm": True} for BertForPreTraining. stop_after pauses the run after that many
    steps of its `steps`-step schedule and saves its state: resume=True continues it.
    group_by_length batches examples of similar length (len of each item's "input_ids") together,
    which saves the padding of short texts of mixed lengths (fine-tuning; not pretraining).
    """
    for name, value in (
        ("steps", steps),
        ("batch_size", batch_size),
        ("grad_accum_steps", grad_accum_steps),
        ("eval_every", eval_every),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if not lr > 0 or lr == float("inf"):
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    if len(train_data) < batch_size:
        raise ValueError(
            f"train_data has {len(train_data)} examples, fewer than one batch of {batch_size}"
        )
    if eval_data is not None and len(eval_data) == 0:
        raise ValueError("eval_data is empty; pass None to train without evaluation")
    if (checkpoint_every or resume or stop_after) and out_dir is None:
        raise ValueError("checkpoints, stop_after and resume need out_dir")
    if stop_after is not None and not 1 <= stop_after <= steps:
        raise ValueError(f"stop_after must be in [1, steps={steps}], got {stop_after!r}")
    device = torch.device(device) if device is not None else next(model.parameters()).device
    model.to(device)
    warmup = warmup_steps if warmup_steps is not None else max(1, steps // 10)
    optimizer = make_optimizer(model, lr, weight_decay)
    run: dict[str, Any] = {
        "model": model,
        "optimizer": optimizer,
        "scheduler": torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: linear_schedule(s, warmup, steps)
        ),
        "step": 0,
        "history": [],
        "seconds": 0.0,
        "eval_pending": False,
        "settings": dict(
            steps=steps,
            batch_size=batch_size,
            lr=lr,
            weight_decay=weight_decay,
            warmup_steps=warmup,
            max_grad_norm=max_grad_norm,
            grad_accum_steps=grad_accum_steps,
            seed=seed,
            group_by_length=group_by_length,
        ),
    }
    lengths = [len(item["input_ids"]) for item in train_data] if group_by_length else None
    state_path = Path(out_dir) / STATE_FILE if out_dir is not None else None
    leftovers = remove_partial_files(out_dir) if out_dir is not None else []  # a hard kill's
    if resume:
        _restore_state(state_path, run, device, leftovers)

    def evaluate_now() -> None:
        metrics = evaluate(
            model, eval_data, batch_size, collate_fn, eval_batches, device, metrics_fn
        )
        record = run["history"][-1]
        record.update({f"eval_{k}": v for k, v in metrics.items()})
        record["seconds"] = run["seconds"] + time.perf_counter() - started
        run["eval_pending"] = False
        if on_eval is not None:
            on_eval(run["history"])

    def save() -> None:
        if state_path is not None:
            _save_state(state_path, run, run["seconds"] + time.perf_counter() - started)

    from tqdm.auto import tqdm

    bar = tqdm(total=steps, initial=run["step"], desc="training", disable=not progress, unit="step")
    model.train()
    started = time.perf_counter()
    phase = "boundary"  # where an interrupt lands: boundary, step, update or eval
    try:
        with _deferred_ctrl_c() as ctrl_c:
            if run["eval_pending"]:  # the saved run was interrupted during this evaluation
                phase = "eval"
                evaluate_now()
            while run["step"] < min(steps, stop_after or steps):
                if ctrl_c["stop"]:
                    raise KeyboardInterrupt
                phase, step_rng, step = "step", torch.get_rng_state(), run["step"]
                loss_value = _forward_backward(
                    model, train_data, step, batch_size, grad_accum_steps, seed, collate_fn,
                    device, forward_kwargs, run["scheduler"], lengths,
                )  # fmt: skip
                grad_norm = None
                if max_grad_norm is not None:
                    grad_norm = float(nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm))
                phase, adam_before = "update", _adam_steps(optimizer)
                optimizer.step()
                phase = "bookkeeping"
                _finish_step(run, step, loss_value, grad_norm, batch_size * grad_accum_steps)
                bar.update(1)
                bar.set_postfix(loss=f"{loss_value:.3f}")
                if eval_data is not None and (
                    run["step"] % eval_every == 0 or run["step"] == steps
                ):
                    phase, run["eval_pending"] = "eval", True
                    evaluate_now()
                phase = "boundary"
                if checkpoint_every and run["step"] % checkpoint_every == 0:
                    save()
    except KeyboardInterrupt:
        bar.close()
        # bring the run to a step boundary; only an update cut in half cannot be saved
        if phase == "update":
            after = _adam_steps(optimizer)
            if after == adam_before:
                phase = "step"  # the optimizer had not moved
            elif after == {max(adam_before, default=0) + 1}:
                phase = "bookkeeping"  # it had moved every parameter: the step is done
        if phase == "step":
            torch.set_rng_state(step_rng)  # the state where the step began
        elif phase == "bookkeeping":
            _finish_step(run, step, loss_value, grad_norm, batch_size * grad_accum_steps)
        if state_path is None:
            where = ""
        elif phase == "update":
            where = f"; the update was cut in half, so the last checkpoint in {out_dir} stands"
        else:
            save()
            where = f"; a checkpoint of step {run['step']} is in {out_dir} (resume=True continues)"
        print(f"training interrupted at step {run['step']}{where}")
        raise
    bar.close()
    save()
    return run["history"]


def _forward_backward(
    model, train_data, step, batch_size, grad_accum_steps, seed, collate_fn, device,
    forward_kwargs, scheduler, lengths,
) -> float:  # fmt: skip
    """Zero the gradients, then accumulate them over grad_accum_steps micro-batches; the loss."""
    model.zero_grad(set_to_none=True)
    loss_value = 0.0
    for micro in range(grad_accum_steps):
        items = _draw_batch(train_data, step * grad_accum_steps + micro, batch_size, seed, lengths)
        batch = _to_device(collate_fn(items) if collate_fn else items, device)
        loss = model(**batch, **(forward_kwargs or {})).loss / grad_accum_steps
        if not torch.isfinite(loss):
            raise TrainingError(
                f"the loss became {loss.item()} at step {step + 1}; lower the learning "
                f"rate (now {scheduler.get_last_lr()[0]:.2e}) or check the data"
            )
        loss.backward()
        loss_value += loss.item()
    return loss_value


def _finish_step(
    run: dict[str, Any], step: int, loss_value: float, grad_norm: float | None, examples: int
) -> None:
    """After optimizer.step() of step `step`: advance the schedule, count the step, record it.

    Idempotent, so that an interrupt in the middle of it can finish it again.
    """
    if run["scheduler"].last_epoch == step:
        run["scheduler"].step()
    run["step"] = step + 1
    if len(run["history"]) == step:  # one record per step
        record = {
            "step": step + 1,
            "train_loss": loss_value,
            "lr": run["scheduler"].get_last_lr()[0],
            "examples": (step + 1) * examples,
        }
        if grad_norm is not None:
            record["grad_norm"] = grad_norm
        run["history"].append(record)
