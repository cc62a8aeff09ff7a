"""Hygiene of the stored notebooks (nbval, run by the test command, checks their outputs)."""

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
MACHINE_PATH = re.compile(r"(?<![:\w/.])/(?:home|root|tmp|usr|work|Users|var|opt)/|[A-Z]:\\\\Users")
MAX_BYTES = 3_000_000


def test_the_course_notebooks_are_there():
    names = [p.name for p in NOTEBOOKS]
    assert "00_start_here.ipynb" in names
    assert names == sorted(names)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_hygiene(path):
    assert path.stat().st_size < MAX_BYTES, f"{path.name} is over 3 MB"
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["nbformat"] == 4
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    assert code, "a notebook without code"
    counts = [c["execution_count"] for c in code]
    assert counts == list(range(1, len(code) + 1)), "run top to bottom in a fresh kernel"
    for i, cell in enumerate(code, start=1):
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", f"cell {i}: {out.get('ename')}"
            text = json.dumps(
                {k: v for k, v in out.items() if k != "data"}
                | {
                    "data": {
                        k: v for k, v in out.get("data", {}).items() if not k.startswith("image/")
                    }
                }
            )
            assert not MACHINE_PATH.search(text), f"cell {i} shows a machine-specific path"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_nbval_markers_are_alone_on_their_line(path):
    """nbval only obeys a marker comment that is exactly the marker ("# NBVAL_IGNORE_OUTPUT")."""
    known = {"NBVAL_IGNORE_OUTPUT", "NBVAL_CHECK_OUTPUT", "NBVAL_SKIP", "NBVAL_RAISES_EXCEPTION"}
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        for line in "".join(cell["source"]).splitlines():
            comment = line.strip().lstrip("#").strip()
            if line.strip().startswith("#") and comment.startswith("NBVAL"):
                assert comment in known, f"nbval ignores this marker: {line.strip()!r}"


def test_the_other_cpu_environment_changes_the_kernel_path():
    """make test KERNEL=other (CI) must really run the notebooks on another kernel path."""
    import os
    import subprocess
    import sys

    here = Path(__file__).resolve().parent
    probe = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS")
    }
    native = subprocess.run(
        [sys.executable, "-c", probe], env=clean, capture_output=True, text=True
    )
    settings = subprocess.run(
        [sys.executable, str(here / "other_cpu.py")], env=clean, capture_output=True, text=True
    ).stdout.split()
    other_env = clean | dict(s.split("=", 1) for s in settings)
    other = subprocess.run(
        [sys.executable, "-c", probe], env=other_env, capture_output=True, text=True
    )
    assert {"ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS"} <= set(other_env)
    assert other.stdout.strip() != native.stdout.strip(), (native.stdout, other.stdout)
