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
evaluation (``minibert.teaching.viz.LiveCurves().update`` draws it live in a notebook).

A checkpoint (model, optimizer, schedule, random state, history, clock) is only ever the state at
a step boundary: it is written atomically every ``checkpoint_every`` steps, at the end, and on
Ctrl-C, which takes effect when the current step is done (a second Ctrl-C stops at once).
``resume=True`` continues from it exactly as the uninterrupted run would have on the CPU.
"""

from __future__ import annotations

import dataclasses
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from minibert import distributed, run_state
from minibert.label_counts import add_counts, label_counts, loss_share, step_label_counts
from minibert.options import (
    COUNT,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    SEED,
    check_fields,
    one_of,
    option,
    saved,
)
from minibert.run_state import Position, Run, TrainingError
from minibert.utils import evaluating, remove_partial_files

__all__ = [
    "TrainOptions",
    "evaluate",
    "linear_schedule",
    "make_optimizer",
    "train",
]

WARMUP_FRACTION = 0.1  # the share of the steps that warms the learning rate up, unless told


def _device_problem(name: Any) -> str | None:
    """None for a device this machine has ('cpu', 'cuda', 'cuda:1', 'mps'), else what is wrong."""
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError) as exc:
        return f"must name a device ({exc})"
    mps = getattr(torch.backends, "mps", None)
    if device.type == "cuda" and not torch.cuda.is_available():
        return "must be a device this machine has (it has no CUDA GPU)"
    if device.type == "mps" and not (mps is not None and mps.is_available()):
        return "must be a device this machine has (it has no Apple GPU)"
    return None


@dataclass(kw_only=True)
class TrainOptions:
    """The loop's options: schedule, batches, evaluation, checkpoints, seed and device."""

    steps: int | None = option(
        None,
        help="optimizer steps",
        check=POSITIVE_INT,
    )
    batch_size: int = option(32, help="examples per micro-batch", check=POSITIVE_INT)
    grad_accum_steps: int = option(
        1,
        help="micro-batches per optimizer step; their gradient is one big batch's (every label "
        "weighted once)",
        check=POSITIVE_INT,
    )
    lr: float | None = option(1e-4, help="peak learning rate of AdamW", check=POSITIVE)
    warmup_steps: int | None = option(
        None,
        help=f"linear warm-up steps (default: {WARMUP_FRACTION:.0%} of the steps)",
        check=COUNT,
    )
    weight_decay: float = option(
        0.01, help="AdamW weight decay (not on biases and LayerNorm)", check=NON_NEGATIVE
    )
    max_grad_norm: float | None = option(
        1.0, help="clip the gradient's norm to this (in Python, None: no clipping)", check=POSITIVE
    )
    group_by_length: bool = option(
        False, help="batch examples of similar length together (less padding when fine-tuning)"
    )
    eval_every: int | None = option(
        100, help="steps between held-out evaluations", check=POSITIVE_INT
    )
    eval_batches: int | None = option(
        None,
        help="limit held-out evaluation to this many batches",
        check=POSITIVE_INT,
        resume="free",
    )
    checkpoint_every: int | None = option(
        None, help="steps between checkpoints", check=POSITIVE_INT, resume="free"
    )
    stop_after: int | None = option(
        None,
        help="pause after this many steps of the schedule (state saved; resume continues): "
        "compare recipes on their first steps, or train a little at a time",
        check=POSITIVE_INT,
        resume="free",
        save=False,
    )
    resume: bool = option(
        False,
        help="continue the interrupted run in the output folder",
        save=False,
        resume="free",
    )
    progress: bool = option(True, help="show a progress bar", cli=False, save=False, resume="free")
    seed: int = option(
        0, help="seed for data order, masking, initialisation and dropout", check=SEED
    )
    device: str | None = option(
        None,
        help="cpu, cuda or mps (default: the GPU when present)",
        check=_device_problem,
        resume="free",
    )
    threads: int | None = option(
        None,
        help="CPU threads for torch (default: torch's choice)",
        check=POSITIVE_INT,
        resume="free",
    )
    compile: bool = option(
        False,
        help="torch.compile the model for training (the first steps wait while it compiles: "
        "up to a minute); off by default: on a CPU it bought nothing, and a GPU's figures are "
        "still to be measured (benchmarks/results/cpu_levers.json, benchmarks/gpu_suite.py)",
        resume="free",
    )
    precision: str = option(
        "fp32",
        help="fp32, or bf16: the forward in bfloat16 (torch.autocast; the weights, gradients and "
        "optimizer stay float32), for GPUs with bf16 (Ampere or newer) and recent CPUs",
        check=one_of("fp32", "bf16"),
    )

    def __post_init__(self) -> None:
        check_fields(self)
        for name, low in (("warmup_steps", 0), ("stop_after", 1)):
            value = getattr(self, name)
            if value is not None and self.steps is not None and not low <= value <= self.steps:
                raise ValueError(f"{name} must be in [{low}, steps={self.steps}], got {value!r}")

    @property
    def warmup(self) -> int:
        """The warm-up steps: as given, or WARMUP_FRACTION of the steps (at least 1)."""
        if self.warmup_steps is not None:
            return self.warmup_steps
        return max(1, int(self.steps * WARMUP_FRACTION))


def _train_settings(options: TrainOptions) -> dict[str, Any]:
    """What a checkpoint records of the loop's options (warm-up resolved)."""
    return {
        f.name: saved(options)[f.name]
        for f in dataclasses.fields(TrainOptions)
        if f.metadata["save"] and f.metadata["resume"] == "same"
    } | {"warmup_steps": options.warmup}


Batch = dict[str, torch.Tensor]
MetricsFn = Callable[[Batch, Any], dict[str, tuple[float, float]]]  # name -> (sum, count)


def make_optimizer(
    model: nn.Module, lr: float, weight_decay: float = 0.01, fused: bool = False
) -> torch.optim.AdamW:
    """AdamW with weight decay on weight matrices only: none on biases and LayerNorm (1-D) ones.

    fused: one kernel for every parameter's update (CUDA), the same arithmetic as the loop."""
    trained = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in trained if p.ndim >= 2], "weight_decay": weight_decay},
        {"params": [p for p in trained if p.ndim < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=1e-6, fused=fused or None)


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
    totals: dict[str, list[float]] = {}
    with evaluating(model):
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


def _micro_batch_drawer(
    train_data: Sequence, o: TrainOptions, step: int, lengths: Sequence[int] | None
) -> Callable[[int], list]:
    """micro -> this process's shard of the step's micro-th micro-batch (its examples, uncollated):
    epochs of a fixed shuffle (each computed once per step), the last partial batch dropped."""
    orders: dict[int, list[int]] = {}
    usable = len(train_data) - len(train_data) % o.batch_size

    def draw(micro: int) -> list:
        epoch, offset = divmod((step * o.grad_accum_steps + micro) * o.batch_size, usable)
        if hasattr(train_data, "set_epoch"):
            train_data.set_epoch(epoch)  # dynamic masking: a new mask every epoch
        if epoch not in orders:
            orders[epoch] = _batch_order(len(train_data), epoch, o.seed, lengths, o.batch_size)
        items = [train_data[i] for i in orders[epoch][offset : offset + o.batch_size]]
        return distributed.shard(items, o.batch_size)  # all of it in one process

    return draw


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
    options: TrainOptions | None = None,
    *,
    collate_fn: Callable | None = None,
    metrics_fn: MetricsFn | None = None,
    out_dir: str | Path | None = None,
    on_eval: Callable[[list[dict]], None] | None = None,
    forward_kwargs: dict[str, Any] | None = None,
    **changes: Any,
) -> list[dict[str, float]]:
    """Train `model` for options.steps optimizer steps; return the history (one dict per step).

    options is a TrainOptions; keyword changes set or override its fields:
    ``train(model, data, steps=300, lr=1e-3, progress=False)``. metrics_fn(batch, output) ->
    {name: (sum, count)} adds the task's held-out measures; forward_kwargs are extra arguments for
    the model in training steps (not in evaluation), e.g. {"sparse_mlm": True} for
    BertForPreTraining. stop_after pauses the run after that many steps of its schedule and saves
    its state in out_dir: resume=True continues it. group_by_length batches examples of similar
    length (len of each item's "input_ids") together, which saves the padding of short texts of
    mixed lengths. threads applies for the run only: torch's thread count is restored after.
    """
    o = _with_changes(options, changes)
    _check_run(o, train_data, eval_data, out_dir)
    threads = torch.get_num_threads()
    try:
        if o.threads:
            torch.set_num_threads(o.threads)
        device = torch.device(o.device) if o.device else next(model.parameters()).device
        model.to(device)
        calls = _TaskCalls(collate_fn, metrics_fn, on_eval)
        session = _Session(_new_run(model, o, device), device, out_dir, eval_data, calls)
        lengths = [len(item["input_ids"]) for item in train_data] if o.group_by_length else None
        session.run_steps(
            lambda: _forward_backward(
                session.run, train_data, collate_fn, device, forward_kwargs, lengths
            )
        )
        return session.run.history
    finally:
        torch.set_num_threads(threads)


@dataclass(frozen=True)
class _TaskCalls:
    """What the task lends the loop (each may be None): how its examples become a batch, what it
    measures on held-out batches, and what it does after each evaluation."""

    collate_fn: Callable | None
    metrics_fn: MetricsFn | None
    on_eval: Callable[[list[dict]], None] | None


class _Session:
    """One call of train(): the run, where its state is saved, and its evaluation."""

    def __init__(
        self, run: Run, device: torch.device, out_dir, eval_data, calls: _TaskCalls
    ) -> None:
        self.run, self.device, self.out_dir, self.eval_data = run, device, out_dir, eval_data
        self.calls = calls
        self.state_path = Path(out_dir) / run_state.STATE_FILE if out_dir is not None else None
        leftovers = remove_partial_files(out_dir) if out_dir is not None else []  # a hard kill's
        if run.options.resume:
            run_state.restore(self.state_path, run, device, leftovers)
        self.started = time.perf_counter()

    def evaluate_now(self) -> None:
        """Measure on the held-out data; the measures go into the last step's record."""
        o, run = self.run.options, self.run
        metrics = evaluate(
            run.model,
            self.eval_data,
            o.batch_size,
            self.calls.collate_fn,
            o.eval_batches,
            self.device,
            self.calls.metrics_fn,
        )
        record = run.history[-1]
        record.update({f"eval_{k}": v for k, v in metrics.items()})
        record["seconds"] = run.seconds + time.perf_counter() - self.started
        run.eval_pending = False
        if self.calls.on_eval is not None:
            self.calls.on_eval(run.history)

    def save(self) -> None:
        """Save the run's state (by the process that writes), if it has a folder."""
        if self.state_path is not None and distributed.is_main():
            run_state.save(
                self.state_path, self.run, self.run.seconds + time.perf_counter() - self.started
            )

    def run_steps(self, forward_backward: Callable[[], float]) -> None:
        """Take the steps of the schedule (until stop_after), evaluating and saving as asked."""
        run, o = self.run, self.run.options
        from tqdm.auto import tqdm

        bar = tqdm(
            total=o.steps,
            initial=run.step,
            desc="training",
            unit="step",
            disable=not o.progress or not distributed.is_main(),
        )
        run.model.train()
        at = Position()  # where an interrupt lands (_to_boundary)
        try:
            with _deferred_ctrl_c() as ctrl_c:
                if run.eval_pending:  # the saved run was interrupted during this evaluation
                    at.phase = "eval"
                    self.evaluate_now()
                while run.step < (o.stop_after or o.steps):
                    if distributed.any_process(ctrl_c["stop"]):  # every process stops here
                        raise KeyboardInterrupt
                    _step(run, at, forward_backward)
                    bar.update(1)
                    bar.set_postfix(loss=f"{at.loss:.3f}")
                    self._after_step(at)
        except KeyboardInterrupt:
            bar.close()
            self._interrupted(at)
            raise
        bar.close()
        self.save()

    def _after_step(self, at: Position) -> None:
        run, o = self.run, self.run.options
        if (
            self.eval_data is not None
            and distributed.is_main()
            and (run.step % o.eval_every == 0 or run.step == o.steps)
        ):
            at.phase, run.eval_pending = "eval", True
            self.evaluate_now()
        at.phase = "boundary"
        if o.checkpoint_every and run.step % o.checkpoint_every == 0:
            self.save()

    def _interrupted(self, at: Position) -> None:
        """After Ctrl-C: back to a step boundary, saved if it can be, and say where."""
        saveable = _to_boundary(self.run, at)
        if self.state_path is None:
            where = ""
        elif not saveable:
            where = f"; the update was cut in half, so the last checkpoint in {self.out_dir} stands"
        else:
            self.save()
            where = (
                f"; a checkpoint of step {self.run.step} is in {self.out_dir} (resume=True "
                "continues)"
            )
        print(f"training interrupted at step {self.run.step}{where}")


def _check_run(
    o: TrainOptions, train_data: Sequence, eval_data: Sequence | None, out_dir: str | Path | None
) -> None:
    """Refuse data and folders the options cannot run with, before anything is done."""
    if unset := [name for name in ("steps", "lr", "eval_every") if getattr(o, name) is None]:
        raise ValueError(f"train needs {' and '.join(unset)} (None is left for a recipe to fill)")
    if len(train_data) < o.batch_size:
        raise ValueError(
            f"train_data has {len(train_data)} examples, fewer than one batch of {o.batch_size}"
        )
    if eval_data is not None and len(eval_data) == 0:
        raise ValueError("eval_data is empty; pass None to train without evaluation")
    if (o.checkpoint_every or o.resume or o.stop_after) and out_dir is None:
        raise ValueError("checkpoints, stop_after and resume need out_dir")


def _step(run: Run, at: Position, forward_backward: Callable[[], float]) -> None:
    """One optimizer step, each phase noted in `at` (where an interrupt would land)."""
    o, model = run.options, run.model
    at.phase, at.rng, at.step = "step", torch.get_rng_state(), run.step
    at.loss, at.grad_norm = forward_backward(), None
    if o.max_grad_norm is not None:
        at.grad_norm = float(nn.utils.clip_grad_norm_(model.parameters(), o.max_grad_norm))
    at.phase, at.adam_before = "update", _adam_steps(run.optimizer)
    run.optimizer.step()
    at.phase = "bookkeeping"
    _finish_step(run, at)


def _with_changes(options: TrainOptions | None, changes: dict[str, Any]) -> TrainOptions:
    """options with the keyword changes applied (a new TrainOptions from them when None)."""
    try:
        if options is None:
            return TrainOptions(**changes)
        return dataclasses.replace(options, **changes) if changes else options
    except TypeError as exc:  # a misspelt option: name the ones there are
        known = ", ".join(f.name for f in dataclasses.fields(options or TrainOptions))
        raise TypeError(f"train: {exc}; the options are {known}") from None


def _new_run(model: nn.Module, o: TrainOptions, device: torch.device) -> Run:
    """A run at step 0: the model (and what to call in training: DDP around it under torchrun),
    AdamW, the schedule, an empty history, the settings."""
    processes = distributed.start(device)
    if o.batch_size % processes:
        raise ValueError(
            f"batch_size {o.batch_size} must be a multiple of the {processes} processes"
        )
    optimizer = make_optimizer(model, o.lr, o.weight_decay, fused=device.type == "cuda")
    warmup = o.warmup
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: linear_schedule(s, warmup, o.steps)
    )
    forward = torch.compile(model) if o.compile else model  # the same weights, compiled calls
    return Run(model, distributed.wrap(forward), o, optimizer, schedule, _train_settings(o))


def _to_boundary(run: Run, at: Position) -> bool:
    """After Ctrl-C, bring the run to a step boundary; False if an update was cut in half."""
    phase = at.phase
    if phase == "update":
        after = _adam_steps(run.optimizer)
        if after == at.adam_before:
            phase = "step"  # the optimizer had not moved
        elif after == {max(at.adam_before, default=0) + 1}:
            phase = "bookkeeping"  # it had moved every parameter: the step is done
    if phase == "step":
        torch.set_rng_state(at.rng)  # the state where the step began
    elif phase == "bookkeeping":
        _finish_step(run, at)
    return phase != "update"


def _forward_backward(
    run: Run,
    train_data: Sequence,
    collate_fn: Callable | None,
    device: torch.device,
    forward_kwargs: dict[str, Any] | None,
    lengths: Sequence[int] | None,
) -> float:
    """Zero the gradients, then accumulate them over grad_accum_steps micro-batches; the loss.

    The step's gradient is that of one big batch: each loss is weighted by its micro-batch's share
    of the step's labels (sum over every label, divided by their count), not by 1/grad_accum_steps.
    The micro-batches stream: the labels are counted from the examples first, then each
    micro-batch is collated just before its forward, so only one is ever held in memory.
    """
    model, o, step = run.model, run.options, run.step
    model.zero_grad(set_to_none=True)
    processes, forward = distributed.world()[1], run.forward
    parts = o.grad_accum_steps * processes
    draw = _micro_batch_drawer(train_data, o, step, lengths)
    collate = collate_fn or (lambda items: items)
    losses = getattr(model, "label_losses", {})  # the model's: label tensor -> its loss
    local, prebuilt = step_label_counts(draw, o.grad_accum_steps, collate, parts, losses)
    totals = distributed.all_sum(local)  # the step's labels in every process
    loss_value, seen = 0.0, {}
    for micro in range(o.grad_accum_steps):
        batch = prebuilt[micro] if prebuilt else collate(draw(micro))
        count = label_counts(batch, losses)
        seen = add_counts(seen, count)
        if (device.type != "cpu" or o.compile) and hasattr(model, "check_batch"):
            model.check_batch(batch)  # what forward skips there, on the host before it moves
        batch = _to_device(_without_full_mask(batch), device)
        bf16 = torch.autocast(device.type, torch.bfloat16, enabled=o.precision == "bf16")
        with distributed.no_sync(forward, last=micro == o.grad_accum_steps - 1):
            with bf16:
                out = forward(**batch, **(forward_kwargs or {}))
            loss = out.loss if parts == 1 else loss_share(out, count, totals, parts, losses)
            if not torch.isfinite(loss):
                raise TrainingError(
                    f"the loss became {loss.item()} at step {step + 1}; lower the learning "
                    f"rate (now {run.scheduler.get_last_lr()[0]:.2e}) or check the data"
                )
            (loss * processes).backward()  # DDP averages the processes' gradients: undo the 1/N
        loss_value += loss.item()
    differ = [key for key in {*seen, *local} if seen.get(key, 0) != local.get(key, 0)]
    if parts > 1 and differ:  # raised before the update: the step is not taken
        raise TrainingError(
            f"step {step + 1}: its micro-batches hold {seen} labels once collated, {local} when "
            "counted from their examples; the loop weights each label by the second count, so "
            "train_data[i] must give the same example each time and collate_fn may only pad "
            "labels with IGNORE_INDEX"
        )
    return distributed.all_sum({"loss": loss_value})["loss"]  # the whole step's loss


def _without_full_mask(batch: Any) -> Any:
    """The batch without its attention_mask when the mask keeps every token (no padding): the
    same attention, and on a GPU it lets SDPA choose its fastest kernel, which takes no mask.
    Read on the host, before the batch moves (a device's tensor would stall the queue)."""
    mask = batch.get("attention_mask") if isinstance(batch, dict) else None
    if isinstance(mask, torch.Tensor) and mask.device.type == "cpu" and bool(mask.all()):
        return {k: v for k, v in batch.items() if k != "attention_mask"}
    return batch


def _finish_step(run: Run, at: Position) -> None:
    """After optimizer.step() of step at.step: advance the schedule, count the step, record it.

    Idempotent, so that an interrupt in the middle of it can finish it again.
    """
    step, o = at.step, run.options
    if run.scheduler.last_epoch == step:
        run.scheduler.step()
    run.step = step + 1
    if len(run.history) == step:  # one record per step
        record = {
            "step": step + 1,
            "train_loss": at.loss,
            "lr": run.scheduler.get_last_lr()[0],
            "examples": (step + 1) * o.batch_size * o.grad_accum_steps,
        }
        if at.grad_norm is not None:
            record["grad_norm"] = at.grad_norm
        run.history.append(record)
