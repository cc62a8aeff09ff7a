"""What `minibert finetune` gives with its defaults: every task, at 64, 256 and 1,024 labelled
items (wiki-qnli and wiki-qa: 64, 256 and all), from the course checkpoint and, at 256, from random
weights of its size (--scratch), beside the level of a model that learned nothing and the benchmark
protocol's number at the same size (seed 0 chooses the rate on dev, seeds 1 and 2 reported; from
finetuning_shapes.json).

    python benchmarks/finetune_defaults.py            # about 20 minutes on 2 CPU cores
    python benchmarks/finetune_defaults.py --report   # the table from the results file

Each run is what a student types: `minibert finetune --model course --task TASK
--train-examples N` with nothing else (the default seed, rate and steps). Writes
benchmarks/results/finetune_defaults.json: per run the test headline, the kept dev measure,
whether it is at the trivial level (tasks.Selection.near_trivial), the steps and the seconds.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import tempfile
import time
from pathlib import Path

import torch
from common.grid import Measure

from minibert import recipes, tasks

RESULTS = Path(__file__).resolve().parent / "results"
OUT = RESULTS / "finetune_defaults.json"
SIZES = {  # training questions (592 in all) for the question tasks; others: 64, 256, 1,024
    "wiki-qnli": (64, 256, None),
    "wiki-qa": (64, 256, None),
    "wiki-search": (64, 256, None),
}
SCRATCH_AT = 256  # random weights of the checkpoint's size too, at this size


def protocol(task: str, model: str, size: int | None) -> float | None:
    """The benchmark protocol's test headline at this size (its mean over seeds), if measured."""
    key = str(size or "all")
    shapes = json.loads((RESULTS / "finetuning_shapes.json").read_text(encoding="utf-8"))
    row = shapes["table"].get(task, {}).get(model, {}).get(key)
    return row["mean"] if isinstance(row, dict) and "mean" in row else None


def run(task: str, size: int | None, scratch: bool, work: Path) -> dict:
    """One `minibert finetune` with its defaults; what it kept and measured, and how long."""
    started = time.perf_counter()
    result = recipes.finetune(
        work / f"{task}-{size}-{scratch}",
        model="course",
        task=task,
        train_examples=size,
        scratch=scratch,
        progress=False,
    )
    selection, spec = result.selection, tasks.get(task)
    headline = Measure.of(task).headline  # the protocol's test number (finetuning_shapes.py)
    return {
        "task": task,
        "size": size,
        "model": "scratch" if scratch else "course",
        "test": result.test[headline],
        "headline": headline,
        "scores": {k: v for k, v in result.test.items() if isinstance(v, (int, float))},
        "dev": selection["value"],
        "dev_measure": selection["measure"],
        "trivial_level": spec.selection.trivial,
        "trivial": selection["trivial"],
        "steps": result.history[-1]["step"],
        "seconds": round(time.perf_counter() - started, 1),
        "protocol": protocol(task, "scratch" if scratch else "course", size),
    }


def report(rows: list[dict]) -> str:
    lines = [
        "task                   size  model    test headline     dev (trivial)     protocol"
        "  share  steps  seconds"
    ]
    for r in rows:
        share = f"{r['test'] / r['protocol']:.0%}" if r["protocol"] else "-"
        protocol_ = f"{r['protocol']:.3f}" if r["protocol"] else "-"
        flag = " TRIVIAL" if r["trivial"] else ""
        lines.append(
            f"{r['task']:<22} {str(r['size'] or 'all'):>5}  {r['model']:<7} {r['headline']:<8} "
            f"{r['test']:.3f}  {r['dev']:.3f} ({r['trivial_level']:g})  {protocol_:>9}  "
            f"{share:>5}  {r['steps']:>5}  {r['seconds']:>7.1f}{flag}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--report", action="store_true", help="print the table from the file")
    parser.add_argument(
        "--tasks",
        nargs="*",
        default=list(tasks.TASKS),
        help="run these tasks again (the others' rows are kept from the file)",
    )
    args = parser.parse_args()
    if args.report:
        print(report(json.loads(OUT.read_text(encoding="utf-8"))["runs"]))
        return
    torch.set_num_threads(2)
    work = Path(tempfile.mkdtemp(prefix="minibert-defaults-"))
    rows = []
    try:
        for task in args.tasks:
            for size in SIZES.get(task, (64, 256, 1024)):
                for scratch in (False, True) if size == SCRATCH_AT else (False,):
                    rows.append(run(task, size, scratch, work))
                    print(report(rows[-1:]).splitlines()[-1], flush=True)
                    shutil.rmtree(work / f"{task}-{size}-{scratch}", ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if OUT.is_file():  # the other tasks' rows, kept
        kept = json.loads(OUT.read_text(encoding="utf-8"))["runs"]
        rows = [r for r in kept if r["task"] not in args.tasks] + rows
        rows.sort(key=lambda r: list(tasks.TASKS).index(r["task"]))
    machine = f"{platform.machine()} CPU, {torch.get_num_threads()} threads"
    record = {
        "what": __doc__.split("\n\n")[0],
        "machine": machine,
        "min_steps": recipes.finetune_recipe.MIN_STEPS,
        "runs": rows,
    }
    OUT.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(report(rows))


if __name__ == "__main__":
    main()
