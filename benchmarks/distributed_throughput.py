"""Pretraining throughput on 1 process vs N processes (torchrun, gloo) on this machine's CPU.

    python benchmarks/distributed_throughput.py            # mini, 40 steps, batch 32
    python benchmarks/distributed_throughput.py --preset tiny --steps 60

Runs `minibert pretrain` three ways on the same global batch: one process with one thread, one
process with every core's thread, and torchrun with one process per core (one thread each), and
reports sequences per second of training (the run's own clock at its last evaluation, so the
corpus and vocabulary set-up are not counted). On a 2-core machine this shows that the
multi-process path is correct and what it costs, more than a speed-up: the processes share the
same two cores that one process with two threads already uses. Writes
benchmarks/results/distributed_throughput.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

RESULT = Path(__file__).parent / "results" / "distributed_throughput.json"


def run(processes: int, threads: int, args: argparse.Namespace, out: Path) -> dict:
    """One pretraining run; its sequences per second and final training loss."""
    recipe = ["pretrain", "--preset", args.preset, "--steps", str(args.steps), "--batch-size",
              str(args.batch_size), "--max-len", "128", "--dropout", "0", "--vocab-size", "8000",
              "--eval-every", str(args.steps), "--eval-batches", "1", "--threads", str(threads),
              "--out", str(out)]  # fmt: skip
    if processes == 1:
        command = [sys.executable, "-m", "minibert", *recipe]
    else:
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   "--nproc_per_node", str(processes), "-m", "minibert", *recipe]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    history = json.loads((out / "history.json").read_text())
    seconds = history[-1]["seconds"]
    return {
        "processes": processes,
        "threads_each": threads,
        "seconds": round(seconds, 1),
        "sequences_per_second": round(args.steps * args.batch_size / seconds, 1),
        "final_train_loss": round(history[-1]["train_loss"], 5),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="mini")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (processes, threads) in enumerate(((1, 1), (1, cores), (cores, 1))):
            row = run(processes, threads, args, Path(tmp) / str(i))
            rows.append(row)
            print(row, flush=True)
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": {
            "cpus": cores,
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(),
            "torch": torch.__version__,
        },  # fmt: skip
        "recipe": vars(args),
        "runs": rows,
    }
    RESULT.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
