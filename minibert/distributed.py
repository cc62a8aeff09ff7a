"""Several processes, one run: PyTorch's DistributedDataParallel, started by torchrun.

    torchrun --nproc_per_node 2 -m minibert pretrain --preset tiny --steps 300 --out runs/tiny

Each process holds a full copy of the model and computes the gradient of its shard of every
batch; DDP sums the shards' gradients across processes (all-reduce) before each optimizer step,
so every copy takes the same step. ``--batch-size`` stays the global batch: each of N processes
reads batch_size / N examples of it. The loss is weighted so that the step's gradient is that of
the whole batch in one process (training.py: every label counts once, whichever process and
micro-batch holds it). Only process 0 evaluates, shows progress and writes files.

Backends: gloo on CPU, NCCL on CUDA GPUs. Outside torchrun (no WORLD_SIZE in the environment)
everything here is a no-op: one process, rank 0 of 1.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

import torch
from torch import nn


def world() -> tuple[int, int]:
    """(rank, world size) of this process: (0, 1) outside torchrun."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def is_main() -> bool:
    """True in the process that evaluates, prints and writes (rank 0)."""
    return world()[0] == 0


def start(device: torch.device) -> int:
    """Join torchrun's process group if there is one (gloo on CPU, NCCL on CUDA); the world size."""
    size = int(os.environ.get("WORLD_SIZE", 1))
    if size > 1 and not torch.distributed.is_initialized():
        backend = "nccl" if device.type == "cuda" else "gloo"
        if device.type == "cuda":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
        torch.distributed.init_process_group(backend)
    return world()[1]


def check_split(batch_size: int) -> None:
    """Refuse, before any work, a global batch that the processes cannot share equally."""
    size = int(os.environ.get("WORLD_SIZE", 1))
    if batch_size % size:
        raise ValueError(
            f"batch_size {batch_size} must be a multiple of the {size} processes (torchrun "
            f"--nproc_per_node): e.g. {max(size, batch_size // size * size)}"
        )


def shard(items: Sequence, batch_size: int) -> list:
    """This process's part of a global batch: a contiguous slice of batch_size / world size."""
    rank, size = world()
    if batch_size % size:
        raise ValueError(f"batch_size {batch_size} must be a multiple of the {size} processes")
    per = batch_size // size
    return list(items[rank * per : (rank + 1) * per])


def wrap(model: nn.Module) -> nn.Module:
    """The module to call in training: DDP around the model when several processes run."""
    if world()[1] == 1:
        return model
    device = next(model.parameters()).device
    ids = [device.index] if device.type == "cuda" else None
    return nn.parallel.DistributedDataParallel(model, device_ids=ids)


def no_sync(module: nn.Module, last: bool) -> Any:
    """Skip DDP's all-reduce in a backward that is not the step's last micro-batch."""
    if isinstance(module, nn.parallel.DistributedDataParallel) and not last:
        return module.no_sync()
    return nullcontext()


def all_sum(values: dict[str, float]) -> dict[str, float]:
    """The values summed over every process (the values themselves with one process)."""
    if world()[1] == 1 or not values:
        return values
    keys = sorted(values)
    total = torch.tensor([float(values[k]) for k in keys], dtype=torch.float64)
    if torch.distributed.get_backend() == "nccl":  # NCCL reduces GPU tensors only
        total = total.cuda()
    torch.distributed.all_reduce(total)
    return dict(zip(keys, total.tolist()))


def any_process(flag: bool) -> bool:
    """True if the flag is set in any process (all agree on it, e.g. to stop at the same step)."""
    if world()[1] == 1:
        return flag
    return all_sum({"flag": float(flag)})["flag"] > 0


def barrier() -> None:
    """Wait until every process gets here."""
    if world()[1] > 1:
        torch.distributed.barrier()
