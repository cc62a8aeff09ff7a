"""Running one lesson in a fresh kernel while its process tree is watched: the wall and CPU
seconds, the peak memory and each cell's time (``measure``), for the resource and class-at-once
benchmarks."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import nbformat
import psutil
from nbclient import NotebookClient


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
