"""Several processes, one run: torchrun with gloo on this CPU gives the run of one process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import cli as in_process

HERE = Path(__file__).parent


def run(tmp_path: Path, processes: int, *runs: tuple[str, ...]) -> list[dict]:
    """tests/ddp_run.py's runs, each (name, *options), one after another in one start of that many
    processes (torchrun for several, as a user starts it, with a free port); what each saved."""
    command = [sys.executable, str(HERE / "ddp_run.py")]
    for i, (name, *args) in enumerate(runs):
        command += [*(["--then"] if i else []), str(tmp_path / f"{name}.pt"), *args]
    if processes > 1:
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node",
                   str(processes), "--standalone", *command[1:]]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return [torch.load(tmp_path / f"{name}.pt") for name, *_ in runs]


def same_run(a: dict, b: dict) -> None:
    """The same training losses, held-out accuracies and weights, to float32 round-off (the
    held-out losses are means per evaluation batch, whose size is the run's micro-batch)."""
    assert len(a["history"]) == len(b["history"])
    for x, y in zip(a["history"], b["history"]):
        for key in x:
            if key == "train_loss" or key.endswith(("accuracy", "top5")):
                assert y[key] == pytest.approx(x[key], rel=1e-5, abs=1e-6), (key, x, y)
    torch.testing.assert_close(a["weights"], b["weights"], atol=3e-6, rtol=1e-5)


@pytest.mark.slow
def test_two_processes_train_as_one_and_resume_anywhere(tmp_path):
    folder = str(tmp_path / "run")
    two, accumulated, _ = run(
        tmp_path,
        2,
        ("two",),
        ("accumulated", "--batch-size", "8", "--grad-accum-steps", "2"),
        ("first_half", "--run-dir", folder, "--stop-after", "2"),  # stopped after 2 of 4 steps
    )
    one, resumed = run(tmp_path, 1, ("one",), ("resumed", "--run-dir", folder, "--resume"))
    assert [r["world"] for r in (one, two, accumulated, resumed)] == [1, 2, 2, 1]
    same_run(one, two)  # 2 processes x 8 = one batch of 16
    same_run(one, accumulated)  # 2 processes x 2 micro-batches x 4
    same_run(one, resumed)  # stopped after 2 steps on 2 processes, resumed on 1: the same run


@pytest.mark.slow
def test_the_batch_must_split_evenly(tmp_path):
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
               "--standalone", str(HERE / "ddp_run.py"), str(tmp_path / "x.pt"),
               "--batch-size", "15"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "batch_size 15 must be a multiple of the 2 processes" in done.stderr


def torchrun(processes: int, *args: str) -> list[str]:
    """`torchrun --standalone --nproc_per_node N -m minibert ARGS`, as a user starts it."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
            str(processes), "-m", "minibert", *args]  # fmt: skip


def same_folders(a: Path, b: Path, atol: float) -> None:
    from safetensors.torch import load_file

    for x, y in zip(json.loads((a / "history.json").read_text()),
                    json.loads((b / "history.json").read_text()), strict=True):  # fmt: skip
        assert y["train_loss"] == pytest.approx(x["train_loss"], rel=1e-5)
    wa, wb = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    assert wa.keys() == wb.keys()
    for name in wa:
        torch.testing.assert_close(wb[name], wa[name], atol=atol, rtol=1e-4)


@pytest.mark.parametrize(
    "recipe, atol",
    [(["pretrain", "--preset", "tiny", "--steps", "3", "--dropout", "0", "--vocab-size", "500",
       "--max-len", "64", "--eval-every", "3", "--eval-batches", "2", "--text-fraction", "0.25"],
      3e-6),
     (["finetune", "--model", "course", "--train-examples", "64", "--steps", "4",
       "--dropout", "0", "--evaluations", "2", "--eval-batches", "2"], 5e-5)],
    ids=["pretrain", "finetune"],
)  # fmt: skip
@pytest.mark.slow
def test_torchrun_runs_the_command_as_one_process_does(tmp_path, recipe, atol):
    """The command under torchrun (2 processes) against the command's main() in this process
    (one process: the same code as `python -m minibert`, without starting another Python)."""
    args = [*recipe, "--batch-size", "8", "--threads", "1"]
    one = in_process(*args, "--out", str(tmp_path / "p1"))
    assert one.returncode == 0, one.stderr[-3000:]
    done = subprocess.run(
        torchrun(2, *args, "--out", str(tmp_path / "p2")), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    saved = [line for line in done.stdout.splitlines() if "saved" in line]
    assert len(saved) == 1  # one process reports and writes
    same_folders(tmp_path / "p1", tmp_path / "p2", atol)
