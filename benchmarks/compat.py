"""Every Python a student may have: the README's set-up and test command, one environment each.

    python benchmarks/compat.py                      # every python3.10 .. python3.13 found
    python benchmarks/compat.py --pythons python3.12 # one
    make compat                                      # the same as the first
    python benchmarks/compat.py --table              # the README's table from the results
    python benchmarks/compat.py --pythons python3.12 --notebooks-again
                                                     # nbval only, in a recorded environment
    python benchmarks/compat.py --pythons python3.10 --failed-again
                                                     # only the unit tests that failed there
    python benchmarks/compat.py --pythons python3.11 --torch 2.2.2 --notebook notebooks/03_encoder.ipynb
                                                     # the lower bound: unit tests + one notebook
    nohup python benchmarks/compat.py > compat.log & # hours: about 30 minutes a Python on 2 cores

For each Python, in build/compat/pyX.Y (ignored by git; kept, so a second run reuses it), this
runs what the README tells a student to run, `make test PYTHON=... VENV=...`: a virtual
environment, torch as `make` installs it (the CPU build where a wheel for this Python is on the
machine, else what pip takes from PyPI: for Linux, the CUDA build), the project with its extras,
the assets, the unit tests and nbval over every notebook (natively). Each Python's row is written
to benchmarks/results/compat.json as soon as it ends: the Python, torch and numpy versions, the
unit tests' and the notebooks' counts, the set-up's and the tests' wall times and the
environment's size. A Python already in the file is not run again unless --again.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "compat.json"
PYTHONS = ("python3.10", "python3.11", "python3.12", "python3.13")
SUMMARY = re.compile(r"^=+ (.*) in ([\d.]+)s")


def runs(interpreter: str) -> bool:
    """Whether interpreter starts (a pyenv shim on PATH fails when its version is not active)."""
    try:
        done = subprocess.run([interpreter, "-c", "pass"], capture_output=True, timeout=60)
    except OSError:
        return False
    return done.returncode == 0


def find(python: str) -> str | None:
    """The interpreter named python that runs: on PATH, else pyenv's newest of that version."""
    version = python.removeprefix("python")
    pyenv = sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/{python}"))
    candidates = [shutil.which(python), *(str(p) for p in reversed(pyenv))]
    return next((c for c in candidates if c and runs(c)), None)


def counts(summary: str) -> dict[str, int]:
    """pytest's last line, '3 failed, 900 passed, 2 skipped', as {'failed': 3, 'passed': 900, ...}."""
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", summary)}


def size(folder: Path) -> int:
    """Bytes under folder (files only, links not followed)."""
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())


def venv_of(key: str) -> Path:
    """A row's environment: 'python3.12' -> build/compat/312, 'python3.11 + torch 2.6.0' ->
    build/compat/311-torch2.6.0."""
    python, _, torch = key.partition(" + torch ")
    name = python.removeprefix("python").replace(".", "") + (f"-torch{torch}" if torch else "")
    return ROOT / "build" / "compat" / name


def one(
    python: str, interpreter: str, torch: str | None = None, notebook: str | None = None
) -> dict:
    """Set up and test one Python as the README says; its row. With torch (a version), that torch
    (and numpy < 2 for a torch before 2.3, which was built against numpy 1) in its own environment,
    then the unit tests and nbval on one notebook: the lower bound the package claims."""
    venv = venv_of(python + (f" + torch {torch}" if torch else ""))
    make = ["make", f"PYTHON={interpreter}", f"VENV={venv}"]
    if torch:  # torch before 2.3 was built against numpy 1: numpy < 2 beside it
        old = tuple(int(n) for n in torch.split(".")[:2]) < (2, 3)
        make.append(f"TORCH=torch=={torch}" + (" 'numpy<2'" if old else ""))  # make's shell
    started = time.monotonic()
    setup = subprocess.run([*make, f"{venv}/.dev", "assets"], cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    setup_seconds = time.monotonic() - started
    row: dict = {"interpreter": interpreter, "setup_seconds": round(setup_seconds)}
    if setup.returncode != 0:
        return row | {"setup": "failed", "error": setup.stderr.strip().splitlines()[-5:]}
    probe = "import platform, numpy, torch; print(platform.python_version(), torch.__version__, numpy.__version__)"  # fmt: skip
    said = subprocess.run([f"{venv}/bin/python", "-c", probe], capture_output=True, text=True)
    row["python"], row["torch"], row["numpy"] = said.stdout.split()
    started = time.monotonic()
    if notebook is None:
        test = subprocess.run([*make, "test"], cwd=ROOT, capture_output=True, text=True)
    else:  # the unit tests, then nbval on one notebook
        unit = subprocess.run([*make, "unit"], cwd=ROOT, capture_output=True, text=True)
        nbval = subprocess.run([f"{venv}/bin/python", "-m", "pytest", notebook, "--nbval",
                                "--nbval-current-env", "--nbval-sanitize-with",
                                "tests/nbval_sanitize.cfg"], cwd=ROOT, capture_output=True, text=True)  # fmt: skip
        test = subprocess.CompletedProcess(
            [], unit.returncode or nbval.returncode, unit.stdout + nbval.stdout, ""
        )
        row["notebook"] = notebook
    row["test_seconds"] = round(time.monotonic() - started)
    summaries = [m for line in test.stdout.splitlines() if (m := SUMMARY.match(line))]
    if len(summaries) == 2:  # the unit tests, then nbval
        row["unit"], row["notebooks"] = (counts(m.group(1)) for m in summaries)
    failed = re.findall(r"^FAILED (\S+)", test.stdout, flags=re.MULTILINE)
    row |= {"failures": failed[:20], "passed": test.returncode == 0 and len(summaries) == 2}
    row["environment_bytes"] = size(venv)
    return row


def notebooks_again(python: str, row: dict) -> dict:
    """Rerun nbval only, in the environment a recorded row built (after a fix that touches only
    the notebooks or their checks); the row with its notebooks' counts, failures and verdict
    replaced and the rerun noted."""
    venv = venv_of(python)
    started = time.monotonic()
    make = ["make", f"PYTHON={row['interpreter']}", f"VENV={venv}", "nbval"]
    done = subprocess.run(make, cwd=ROOT, capture_output=True, text=True)
    summaries = [m for line in done.stdout.splitlines() if (m := SUMMARY.match(line))]
    notebooks = counts(summaries[-1].group(1)) if summaries else None
    unit_failures = [f for f in row.get("failures", []) if not f.startswith("notebooks/")]
    failed = re.findall(r"^FAILED (\S+)", done.stdout, flags=re.MULTILINE)
    return row | {
        "notebooks": notebooks,
        "failures": (unit_failures + failed)[:20],
        "passed": done.returncode == 0 and bool(notebooks) and not unit_failures
        and bool(row.get("unit")) and "failed" not in row["unit"],
        "notebooks_rerun": {"seconds": round(time.monotonic() - started),
                            "date": time.strftime("%Y-%m-%d")},
    }  # fmt: skip


def failed_again(python: str, row: dict) -> dict:
    """Rerun only the unit tests a recorded row failed, in its environment (after fixes to those
    tests or to what they test); the row with the rerun's counts noted and its verdict replaced.
    The first run's counts stay: the table shows both."""
    venv = venv_of(python)
    tests = row.get("failed_rerun", {}).get("tests") or [
        f for f in row.get("failures", []) if not f.startswith("notebooks/")
    ]  # a second rerun reruns the first one's tests
    if not tests:
        return row
    started = time.monotonic()
    done = subprocess.run([f"{venv}/bin/python", "-m", "pytest", *tests], cwd=ROOT,
                          capture_output=True, text=True)  # fmt: skip
    summaries = [m for line in done.stdout.splitlines() if (m := SUMMARY.match(line))]
    again = counts(summaries[-1].group(1)) if summaries else None
    notebook_failures = [f for f in row["failures"] if f.startswith("notebooks/")]
    failed = re.findall(r"^FAILED (\S+)", done.stdout, flags=re.MULTILINE)
    return row | {
        "failures": (failed + notebook_failures)[:20],
        "passed": done.returncode == 0 and bool(again) and not notebook_failures
        and bool(row.get("notebooks")) and "failed" not in row["notebooks"],
        "failed_rerun": {"tests": tests, "result": again, "seconds": round(time.monotonic() - started),
                         "date": time.strftime("%Y-%m-%d")},
    }  # fmt: skip


def _tally(c: dict | None) -> str:
    """{'passed': 912, 'skipped': 2} as '912 passed, 2 skipped'; '-' when the tests did not run."""
    return ", ".join(f"{n:,} {word}" for word, n in c.items()) if c else "-"


def table(results: dict) -> str:
    """compat.json's rows as the README's Markdown table, one row per Python."""
    lines = ["| Python | torch | numpy | unit tests | notebooks (nbval) | set-up | tests | environment |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for python, row in sorted(results["runs"].items(), key=lambda kv: kv[1].get("python", kv[0])):
        if row.get("setup") == "failed":
            lines.append(f"| {python} | set-up failed | | | | {row['setup_seconds']} s | | |")
            continue
        only = f" ({Path(row['notebook']).stem} only)" if row.get("notebook") else ""
        again = " (run again after a fix)" if row.get("notebooks_rerun") else ""
        unit = _tally(row.get("unit"))
        if row.get("failed_rerun"):  # the failed tests run again after their fixes
            unit += f"; those failed, again: {_tally(row['failed_rerun']['result'])}"
        lines.append(
            f"| {row['python']} | {row['torch']} | {row['numpy']} | {unit} | "
            f"{_tally(row.get('notebooks'))}{only}{again} | {row['setup_seconds'] / 60:.0f} min | "
            f"{row['test_seconds'] / 60:.0f} min | {row['environment_bytes'] / 1e9:.1f} GB |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pythons", nargs="+", default=list(PYTHONS), metavar="PYTHON")
    parser.add_argument("--again", action="store_true", help="run the Pythons already recorded")
    parser.add_argument("--table", action="store_true", help="print the README's table and stop")
    parser.add_argument(
        "--torch", help="a torch version to test instead of the set-up's (a lower bound)"
    )
    parser.add_argument("--notebook", help="nbval on this notebook only (with --torch)")
    parser.add_argument("--notebooks-again", action="store_true",
                        help="rerun nbval only for the Pythons recorded, in their environments")  # fmt: skip
    parser.add_argument("--failed-again", action="store_true",
                        help="rerun only the unit tests each recorded Python failed")  # fmt: skip
    args = parser.parse_args()
    done = json.loads(OUT.read_text()) if OUT.exists() else {"runs": {}}
    if args.table:
        print(table(done))
        return
    if args.notebooks_again or args.failed_again:
        again = notebooks_again if args.notebooks_again else failed_again
        for python in args.pythons:
            if python not in done["runs"]:
                continue
            row = again(python, done["runs"][python])
            done = json.loads(OUT.read_text())  # another run's rows kept
            done["runs"][python] = row
            OUT.write_text(json.dumps(done, indent=1) + "\n")
            print(f"{python}: again: {'passed' if row['passed'] else 'FAILED'} "
                  f"{row.get('failed_rerun', row.get('notebooks'))}", flush=True)  # fmt: skip
        return
    done["machine"] = f"{platform.machine()}, {platform.processor() or 'cpu'}, {sys.platform}"
    for python in args.pythons:
        interpreter = find(python)
        if interpreter is None:
            print(f"{python}: not found on this machine", flush=True)
            continue
        key = python + (f" + torch {args.torch}" if args.torch else "")
        if key in done["runs"] and not args.again:
            print(f"{key}: recorded already (--again runs it again)", flush=True)
            continue
        print(f"{key}: {interpreter} ...", flush=True)
        row = one(python, interpreter, args.torch, args.notebook)
        done = json.loads(OUT.read_text()) if OUT.exists() else done  # another run's rows kept
        done["runs"][key] = row
        OUT.write_text(json.dumps(done, indent=1) + "\n")
        print(f"{key}: {'passed' if row.get('passed') else 'FAILED'} {row}", flush=True)


if __name__ == "__main__":
    main()
