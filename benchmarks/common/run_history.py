"""A pretraining run's history so far, paused or finished: read by the recipe benchmarks."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from minibert.recipes import RUN_FOLDER


def run_history(folder: Path) -> list[dict]:
    """The run's history: from its paused state (RUN_FOLDER), its finished folder, or empty."""
    state = folder / RUN_FOLDER / "training_state.pt"
    if state.is_file():
        return torch.load(state, weights_only=False)["history"]
    finished = folder / "history.json"
    return json.loads(finished.read_text()) if finished.is_file() else []
