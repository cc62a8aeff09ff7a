"""What each lesson asks of a shared server: a student's peak memory and CPU seconds.

    python benchmarks/notebook_resources.py            # every notebook: results/notebook_resources.json
    python benchmarks/notebook_resources.py 06 07      # only these (the others keep their last row)
    python benchmarks/notebook_resources.py --table    # the teacher's guide's sizing table

Each notebook runs top to bottom in a fresh kernel (nbclient, as "Restart and Run All"), one
after the other on an otherwise idle machine, while a thread reads the kernel's process tree from
/proc every 0.1 s (psutil): the resident memory (RSS) of the kernel and its children together,
whose peak is the memory a student's session needs (children that share pages with the kernel
are counted in full: an upper bound), and the CPU seconds (user + system) of the kernel and of
every child seen. Each cell's wall time is kept too, so that the guide can name the cells worth
running ahead on a shared machine (by their number in the stored notebook, [n]). `minibert.teaching.lessons.sizing_table` turns the results
into the guide's table (tests/test_notebooks.py keeps the two equal).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import threading
import time
from pathlib import Path

import nbformat
import psutil
import torch
from nbclient import NotebookClient

from minibert.teaching import lessons

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "notebook_resources.json"


class TreeSampler(threading.Thread):
    """Samples a process and its descendants: peak summed RSS, CPU seconds of every pid seen."""

    def __init__(self, pid: int, every: float = 0.1):
        super().__init__(daemon=True)
        self.root, self.every, self.done = psutil.Process(pid), every, threading.Event()
        self.peak_rss = 0
        self.cpu: dict[int, float] = {}  # pid -> its user + system seconds, last seen

    def run(self) -> None:
        while not self.done.is_set():
            self.sample()
            self.done.wait(self.every)
        self.sample()

    def sample(self) -> None:
        try:
            tree = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:  # the kernel has gone
            return
        rss = 0
        for process in tree:
            try:
                with process.oneshot():
                    rss += process.memory_info().rss
                    times = process.cpu_times()
                    self.cpu[process.pid] = times.user + times.system
            except psutil.Error:  # a child that ended between the listing and the read
                continue
        self.peak_rss = max(self.peak_rss, rss)


def measure(path: Path, env: dict[str, str] | None = None) -> dict:
    """Run the notebook at path in a fresh kernel: wall and CPU seconds, peak RSS, cell times.

    env: the kernel's environment (default: this process's), e.g. with OMP_NUM_THREADS set."""
    notebook = nbformat.read(path, as_version=4)
    cells: dict[int, float] = {}  # by the cell's number in the stored notebook ([n], code cells)
    number = {}
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            number[index] = len(number) + 1
    started: dict[int, float] = {}
    client = NotebookClient(
        notebook,
        timeout=1800,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        on_cell_start=lambda cell, cell_index: started.__setitem__(cell_index, time.perf_counter()),
        on_cell_executed=lambda cell, cell_index, execute_reply: cells.__setitem__(
            number[cell_index], time.perf_counter() - started[cell_index]
        ),
    )
    sampler = None
    start = time.perf_counter()
    with client.setup_kernel(**({"env": env} if env is not None else {})):
        sampler = TreeSampler(client.km.provisioner.process.pid)
        sampler.start()
        for index, cell in enumerate(client.nb.cells):
            client.execute_cell(cell, index)
        sampler.done.set()
        sampler.join()
    wall = time.perf_counter() - start
    return {
        "wall_s": round(wall, 1),
        "cpu_s": round(sum(sampler.cpu.values()), 1),
        "peak_rss_mb": round(sampler.peak_rss / 2**20),
        "cells_s": {str(i): round(s, 1) for i, s in sorted(cells.items()) if s >= 1.0},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="notebook numbers to measure (default: all)")
    parser.add_argument("--table", action="store_true", help="print the guide's sizing table")
    args = parser.parse_args()
    result = json.loads(RESULT.read_text()) if RESULT.exists() else {"notebooks": {}}
    if args.table:
        print(lessons.sizing_table(result))
        return
    paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if args.only:
        paths = [p for p in paths if p.name[:2] in args.only]
        if not paths:
            parser.error(f"no notebook numbered {' '.join(args.only)}")
    for path in paths:
        row = measure(path)
        result["notebooks"][path.name] = row
        print(f"{path.name}: {row['wall_s']:.0f} s wall, {row['cpu_s']:.0f} CPU s, "
              f"peak {row['peak_rss_mb']:,} MB", flush=True)  # fmt: skip
    result["machine"] = {
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30),
        "python": platform.python_version(),
        "torch": torch.__version__,
    }
    result["date"] = time.strftime("%Y-%m-%d")
    RESULT.write_text(json.dumps(result, indent=1) + "\n")
    print(lessons.sizing_table(result))


if __name__ == "__main__":
    main()
