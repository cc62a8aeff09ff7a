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
into the guide's table, its cores counted from a class at once when benchmarks/class_at_once.py
has measured one (tests/test_package.py keeps the guide and the table equal).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import psutil
import torch
from common.notebook_runs import measure

from minibert.teaching import lessons

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "notebook_resources.json"
TOGETHER = ROOT / "benchmarks" / "results" / "class_at_once.json"  # benchmarks/class_at_once.py


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="notebook numbers to measure (default: all)")
    parser.add_argument("--table", action="store_true", help="print the guide's sizing table")
    args = parser.parse_args()
    result = json.loads(RESULT.read_text()) if RESULT.exists() else {"notebooks": {}}
    together = json.loads(TOGETHER.read_text()) if TOGETHER.exists() else None
    if args.table:
        print(lessons.sizing_table(result, together=together))
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
    print(lessons.sizing_table(result, together=together))


if __name__ == "__main__":
    main()
