"""One training loop for pretraining and fine-tuning.

    history = train(model, train_data, eval_data, steps=2000, batch_size=32, lr=5e-4,
                    collate_fn=collate, out_dir="runs/mini", checkpoint_every=500)

What it does, in order, each step: draw a batch (a fixed shuffle per epoch, from the seed), run the
model on it (the model returns ``.loss``), back-propagate (optionally accumulating gradients over
several micro-batches), clip the gradient norm, take an AdamW step (weight decay on weight
matrices, not on biases or LayerNorm), and move the learning rate along a linear warm-up then a
linear decay to zero. Every ``eval_every`` steps it measures held-out loss and accuracies. The
history is a list of dicts that ``minibert.viz.training_curves`` plots, live in a notebook with
``live=True``. A checkpoint (model, optimizer, schedule, random state, history) is written
atomically every ``checkpoint_every`` steps and on Ctrl-C; ``resume=True`` continues from it
exactly as the uninterrupted run would have on the CPU.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

__all__ = ["TrainingError", "evaluate", "linear_schedule", "make_optimizer", "train"]

STATE_FILE = "training_state.pt"


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


def _to_device(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    return {k: v.to(device) for k, v in batch.items()}


@torch.no_grad()
def evaluate(
    model: nn.Module,
    data: Sequence,
    batch_size: int = 64,
    collate_fn: Callable | None = None,
    max_batches: int | None = None,
    device: torch.device | str | None = None,
) -> dict[str, float]:
    """Held-out metrics: mean loss, and the accuracy of each head whose labels the batches carry."""
    device = torch.device(device) if device is not None else next(model.parameters()).device
    was_training = model.training
    model.eval()
    loss_sum, batches = 0.0, 0
    part_sums: dict[str, float] = {}
    hits: dict[str, int] = {}
    counts: dict[str, int] = {}
    heads = (
        ("mlm", "mlm_logits", "mlm_labels"),
        ("nsp", "nsp_logits", "next_sentence_label"),
        ("", "logits", "labels"),
    )
    for start in range(0, len(data), batch_size):
        if max_batches is not None and batches >= max_batches:
            break
        items = [data[i] for i in range(start, min(start + batch_size, len(data)))]
        batch = _to_device(collate_fn(items) if collate_fn else items, device)
        out = model(**batch)
        if out.loss is not None:
            loss_sum += float(out.loss)
        for part in ("mlm_loss", "nsp_loss"):  # the two pretraining losses, when there are two
            if getattr(out, part, None) is not None:
                part_sums[part] = part_sums.get(part, 0.0) + float(getattr(out, part))
        batches += 1
        for prefix, logits_name, labels_name in heads:
            logits = getattr(out, logits_name, None)
            if logits is None or labels_name not in batch:
                continue
            labels = batch[labels_name]
            keep = labels != -100
            name = f"{prefix}_accuracy" if prefix else "accuracy"
            hits[name] = hits.get(name, 0) + int((logits.argmax(-1)[keep] == labels[keep]).sum())
            counts[name] = counts.get(name, 0) + int(keep.sum())
    model.train(was_training)
    metrics = {"loss": loss_sum / max(1, batches)}
    metrics.update({part: total / max(1, batches) for part, total in part_sums.items()})
    metrics.update({name: hits[name] / counts[name] for name in hits if counts[name]})
    return metrics


def _atomic_torch_save(obj: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    os.close(fd)
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def _batch_order(n: int, epoch: int, seed: int) -> list[int]:
    """The shuffle of epoch `epoch`: a permutation that depends only on (seed, epoch)."""
    generator = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    return torch.randperm(n, generator=generator).tolist()


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
    out_dir: str | Path | None = None,
    checkpoint_every: int | None = None,
    resume: bool = False,
    seed: int = 0,
    device: torch.device | str | None = None,
    progress: bool = True,
    live: bool = False,
    on_eval: Callable[[list[dict]], None] | None = None,
    forward_kwargs: dict[str, Any] | None = None,
) -> list[dict[str, float]]:
    """Train `model` for `steps` optimizer steps; return the history (one dict per logged step).

    forward_kwargs are extra arguments for the model in training steps (not in evaluation),
    e.g. {"sparse_mlm": True} for BertForPreTraining.
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    if batch_size < 1 or grad_accum_steps < 1:
        raise ValueError(
            f"batch_size and grad_accum_steps must be >= 1, got {batch_size}, {grad_accum_steps}"
        )
    if len(train_data) < batch_size:
        raise ValueError(
            f"train_data has {len(train_data)} examples, fewer than one batch of {batch_size}"
        )
    if (checkpoint_every or resume) and out_dir is None:
        raise ValueError("checkpoints and resume need out_dir")
    device = torch.device(device) if device is not None else next(model.parameters()).device
    model.to(device)
    warmup = warmup_steps if warmup_steps is not None else max(1, steps // 10)
    optimizer = make_optimizer(model, lr, weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: linear_schedule(s, warmup, steps)
    )
    history: list[dict[str, float]] = []
    step = 0
    out_dir = Path(out_dir) if out_dir is not None else None
    state_path = out_dir / STATE_FILE if out_dir is not None else None

    if resume and state_path is not None and state_path.exists():
        state = torch.load(state_path, map_location=device, weights_only=True)
        if state["steps"] != steps or state["batch_size"] != batch_size:
            raise TrainingError(
                f"the checkpoint in {out_dir} was made for steps={state['steps']}, "
                f"batch_size={state['batch_size']}; resume with the same settings"
            )
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["torch_rng"].cpu())  # dropout draws from torch's generator
        step, history = state["step"], list(state["history"])

    def save_state() -> None:
        if state_path is None:
            return
        _atomic_torch_save(
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "torch_rng": torch.get_rng_state(),
                "step": step,
                "steps": steps,
                "batch_size": batch_size,
                "history": history,
            },
            state_path,
        )

    from tqdm.auto import tqdm

    live_view = None
    if live:
        from minibert.viz import LiveCurves

        live_view = LiveCurves()
    per_step = batch_size * grad_accum_steps
    bar = tqdm(total=steps, initial=step, desc="training", disable=not progress, unit="step")
    model.train()
    started = time.perf_counter()
    try:
        while step < steps:
            optimizer.zero_grad(set_to_none=True)
            loss_value = 0.0
            for micro in range(grad_accum_steps):
                first = (step * grad_accum_steps + micro) * batch_size
                epoch, offset = divmod(first, len(train_data) - len(train_data) % batch_size)
                if hasattr(train_data, "set_epoch"):
                    train_data.set_epoch(epoch)
                order = _batch_order(len(train_data), epoch, seed)
                items = [train_data[i] for i in order[offset : offset + batch_size]]
                batch = _to_device(collate_fn(items) if collate_fn else items, device)
                loss = model(**batch, **(forward_kwargs or {})).loss / grad_accum_steps
                if not torch.isfinite(loss):
                    raise TrainingError(
                        f"the loss became {loss.item()} at step {step + 1}; lower the learning "
                        f"rate (now {scheduler.get_last_lr()[0]:.2e}) or check the data"
                    )
                loss.backward()
                loss_value += loss.item()
            grad_norm = None
            if max_grad_norm is not None:
                grad_norm = float(nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm))
            optimizer.step()
            scheduler.step()
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{loss_value:.3f}")
            record = {
                "step": step,
                "train_loss": loss_value,
                "lr": scheduler.get_last_lr()[0],
                "examples": step * per_step,
            }
            if grad_norm is not None:
                record["grad_norm"] = grad_norm
            history.append(record)  # the step is done; held-out metrics are added to its record
            if eval_data is not None and (step % eval_every == 0 or step == steps):
                metrics = evaluate(model, eval_data, batch_size, collate_fn, eval_batches, device)
                record.update({f"eval_{k}": v for k, v in metrics.items()})
                record["seconds"] = time.perf_counter() - started
                if live_view is not None:
                    live_view.update(history)
                if on_eval is not None:
                    on_eval(history)
            if checkpoint_every and step % checkpoint_every == 0:
                save_state()
    except KeyboardInterrupt:
        save_state()
        bar.close()
        where = (
            f"; a checkpoint of step {step} is in {out_dir} (resume=True continues)"
            if out_dir
            else ""
        )
        print(f"training interrupted at step {step}{where}")
        raise
    bar.close()
    if state_path is not None:
        save_state()
    if live_view is not None:
        live_view.close()
    return history


def perplexity(loss: float) -> float:
    """exp(loss), capped to stay finite for the plots."""
    return math.exp(min(loss, 50.0))
