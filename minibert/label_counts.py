"""Counting an optimizer step's labels, so that every label weighs the same in its loss.

A loss over labels (MLM, a token task) is a sum divided by the count of labels in the whole
optimizer step: across micro-batches and across processes. A mean per micro-batch divided by the
number of micro-batches would weigh a label of a short batch more than one of a long batch (the
bug Hugging Face's Trainer fixed in 2024). The loop counts the labels before the first backward
(step_label_counts), sums them over processes, and weighs each micro-batch's loss by its share
(loss_share). ``losses`` is the model's ``label_losses``: each label tensor's name -> the output
field of the loss that averages over it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from minibert.config import IGNORE_INDEX

__all__ = ["add_counts", "example_label_counts", "label_counts", "loss_share", "step_label_counts"]


def step_label_counts(
    draw: Callable[[int], list],
    micro_batches: int,
    collate: Callable,
    parts: int,
    losses: dict[str, str],
) -> tuple[dict[str, int], list | None]:
    """The labels of the step's micro-batches (needed before the first backward), counted from
    their examples; and the collated micro-batches where they had to be built to count them
    (examples that are not dicts of labels). One micro-batch in one process needs no count."""
    local: dict[str, int] = {}
    for micro in range(micro_batches if parts > 1 and losses else 0):
        count = example_label_counts(draw(micro), losses)
        if count is None:
            prebuilt = [collate(draw(m)) for m in range(micro_batches)]
            return add_counts({}, *(label_counts(b, losses) for b in prebuilt)), prebuilt
        local = add_counts(local, count)
    return local, None


def add_counts(*counts: dict[str, int]) -> dict[str, int]:
    """Label counts added up, key by key (the keys that count labels)."""
    total: dict[str, int] = {}
    for count in counts:
        for key, n in count.items():
            total[key] = total.get(key, 0) + n
    return total


def label_counts(batch: Any, losses: dict[str, str]) -> dict[str, int]:
    """How many predictions each loss of a batch averages over: its labels that are not ignored.
    losses is the model's ``label_losses``: each label tensor's name -> the loss it averages."""
    if not isinstance(batch, dict):
        return {}
    return {
        key: int((batch[key] != IGNORE_INDEX).sum())
        for key in losses
        if isinstance(batch.get(key), torch.Tensor)
    }


def example_label_counts(items: Sequence, losses: dict[str, str]) -> dict[str, int] | None:
    """label_counts of the batch these examples collate to, without collating them (padding only
    adds ignored labels); None when they are not dicts that hold labels."""
    if not items or not all(isinstance(item, dict) for item in items):
        return None
    counts = {}
    for key in (key for key in losses if key in items[0]):
        try:  # an int per example, or one per token (a list or a tensor)
            labels = [torch.as_tensor(item[key]) for item in items]
        except (KeyError, TypeError, ValueError, RuntimeError):
            return None
        counts[key] = sum(int((t != IGNORE_INDEX).sum()) for t in labels)
    return counts or None


def loss_share(
    out: Any, count: dict[str, int], totals: dict[str, int], parts: int, losses: dict[str, str]
) -> torch.Tensor:
    """A micro-batch's part of the step's loss (parts: micro-batches x processes): each labelled
    loss (a mean over this micro-batch's labels) weighted by count / total, so the step sums every
    label once; what no label count covers (an auxiliary loss) is averaged over the parts."""
    loss = out.loss / parts
    for key, n in count.items():
        labelled = getattr(out, losses[key], None)
        if labelled is not None and totals.get(key):
            loss = loss + labelled * (n / totals[key] - 1 / parts)
    return loss
