"""A class at once: several students' kernels running a lesson together, by threads per kernel.

    python benchmarks/class_at_once.py                       # lesson 04; 1, 2 and 4 kernels
    python benchmarks/class_at_once.py --notebook 06 --kernels 1 3 --settings default one

One student alone is what `benchmarks/notebook_resources.py` measures. In a class, every kernel
runs the same live cells at about the same time, and each torch process takes as many threads as
the machine has cores: n kernels on c cores run n x c threads on c cores. Here n fresh kernels
start together (nbclient, as "Restart and Run All"), each running the whole notebook top to
bottom under one thread setting given by its environment:

    default   torch's own choice (one thread per core)
    one       OMP_NUM_THREADS=1 (what a server can set per kernel, e.g. JupyterHub's
              c.Spawner.environment)
    passive   torch's own thread count, OMP_WAIT_POLICY=PASSIVE (idle OpenMP threads sleep
              instead of spinning)

For each setting and number of kernels: every kernel's wall time for the notebook and for its
slowest cell (the live training), their median and worst, and the CPU share each kernel got
against the fair share (a kernel alone, divided by n / cores). Writes
benchmarks/results/class_at_once.json; the teacher's guide sizes a class from it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
from common.notebook_runs import measure

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "class_at_once.json"
SETTINGS = {
    "default": {},
    "one": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    "passive": {"OMP_WAIT_POLICY": "PASSIVE"},
}


def together(path: Path, kernels: int, setting: str) -> list[dict]:
    """Run the notebook in `kernels` fresh kernels started together; one row per kernel."""
    env = {**os.environ, **SETTINGS[setting]}
    with ThreadPoolExecutor(kernels) as pool:  # each thread waits on its own kernel process
        return list(pool.map(lambda _: measure(path, env), range(kernels)))


def summary(rows: list[dict], slow_cell: str, alone: dict | None, kernels: int) -> dict:
    """Median and worst wall times; the slowdown against one kernel alone, and against the fair
    share of the cores (alone x kernels / cores, at least alone)."""
    walls = [r["wall_s"] for r in rows]
    cells = [r["cells_s"].get(slow_cell, 0.0) for r in rows]
    out = {
        "notebook_s": [statistics.median(walls), max(walls)],
        "slowest_cell_s": [statistics.median(cells), max(cells)],
        "cpu_s": statistics.median(r["cpu_s"] for r in rows),
    }
    if alone:
        fair = alone["notebook_s"][0] * max(1.0, kernels / (os.cpu_count() or 1))
        out["over_alone"] = round(max(walls) / alone["notebook_s"][0], 2)
        out["over_fair_share"] = round(max(walls) / fair, 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", default="04", help="the lesson's number (default: 04)")
    parser.add_argument("--kernels", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    args = parser.parse_args()
    if any(n < 1 for n in args.kernels):
        parser.error("--kernels takes counts of at least 1")
    paths = sorted((ROOT / "notebooks").glob(f"{args.notebook}_*.ipynb"))
    if len(paths) != 1:
        parser.error(f"no single notebook numbered {args.notebook!r} in notebooks/")
    path = paths[0]
    results: dict = {"notebook": path.name, "runs": {}}
    for setting in args.settings:
        alone = None
        for kernels in sorted(args.kernels):
            started = time.perf_counter()
            rows = together(path, kernels, setting)
            if alone is None and kernels == 1:
                slow_cell = max(rows[0]["cells_s"], key=rows[0]["cells_s"].get)
                results.setdefault("slowest_cell", slow_cell)
            slow = results.get("slowest_cell") or max(
                rows[0]["cells_s"], key=rows[0]["cells_s"].get
            )
            row = summary(rows, slow, alone, kernels)
            if kernels == 1:
                alone = row
            row["kernels"], row["wall_s"] = kernels, round(time.perf_counter() - started, 1)
            results["runs"].setdefault(setting, []).append(row)
            print(
                f"{setting:8s} {kernels} kernel(s): notebook {row['notebook_s'][0]:.0f} s "
                f"(worst {row['notebook_s'][1]:.0f}), cell [{slow}] {row['slowest_cell_s'][0]:.0f} s "
                f"(worst {row['slowest_cell_s'][1]:.0f})"
                + (
                    f", {row['over_fair_share']:.2f} x the fair share"
                    if "over_fair_share" in row
                    else ""
                ),
                flush=True,
            )
    results["machine"] = {
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
    }
    results["date"] = time.strftime("%Y-%m-%d")
    RESULT.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
