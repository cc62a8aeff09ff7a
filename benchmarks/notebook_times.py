"""How long each notebook takes to run top to bottom: the course map's "minutes" column.

    python benchmarks/notebook_times.py            # every notebook; writes results/notebook_times.json
    python benchmarks/notebook_times.py 03 05      # only these (the others keep their last time)

Each notebook runs in a fresh kernel from notebooks/, as "Restart and Run All" does, one after
the other on an otherwise idle machine. The course map (`minibert.teaching.lessons.LESSONS`)
gives each time rounded up to the next half minute; tests/test_package.py checks that it does
and that no lesson takes more than 5 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import nbformat
import torch
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "notebook_times.json"


def run(path: Path) -> float:
    """Seconds to execute the notebook at path top to bottom in a fresh kernel."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=1800,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="notebook numbers to time (default: all)")
    args = parser.parse_args()
    paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if args.only:
        paths = [p for p in paths if p.name[:2] in args.only]
        if not paths:
            parser.error(f"no notebook numbered {' '.join(args.only)}")
    result = json.loads(RESULT.read_text()) if RESULT.exists() else {"seconds": {}}
    for path in paths:
        seconds = run(path)
        result["seconds"][path.name] = round(seconds, 1)
        print(f"{path.name}: {seconds:.0f} s", flush=True)
    result["machine"] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpus": os.cpu_count(),
    }
    result["date"] = time.strftime("%Y-%m-%d")
    RESULT.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
