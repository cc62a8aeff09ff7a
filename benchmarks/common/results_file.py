"""A results JSON with many runs, written so that a diff shows one line per run that changed."""

from __future__ import annotations

import json
from pathlib import Path

from minibert.utils import atomic_write


def save(done: dict, out: Path) -> None:
    """Write done to out: its summary keys indented, then "runs" one per line. Test predictions
    are kept only for the runs the table reports (the paired statistics need them; the run cache
    keeps the others')."""
    kept = {
        key
        for rows in done.get("table", {}).values()
        for row in rows.values()
        for cell in row.values()
        if isinstance(cell, dict)
        for key in cell.get("runs", ())
    }
    runs = {
        key: run if key in kept else {k: v for k, v in run.items() if k != "test_predictions"}
        for key, run in sorted(done["runs"].items())
    }
    head = json.dumps({k: v for k, v in done.items() if k != "runs"}, indent=1)
    lines = ",\n".join(
        f"  {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in runs.items()
    )
    atomic_write(out, head[:-1].rstrip() + ',\n "runs": {\n' + lines + "\n }\n}\n")
