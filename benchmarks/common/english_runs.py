"""The runs of benchmarks/english_recipes.py, read by it and by benchmarks/minimal_pairs.py: where
they live, their shared vocabulary, and a run's model as its last saved state left it."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from minibert.config import BertConfig
from minibert.guidance import NeighbourGuidance
from minibert.model import BertForPreTraining
from minibert.recipes import RUN_FOLDER
from minibert.tokenization import BertTokenizer

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "runs" / "english"  # one folder per candidate (git-ignored)
VOCAB = RUNS / "vocab"  # the candidates' one vocabulary


def load_state(name: str, tok: BertTokenizer) -> torch.nn.Module:
    """A candidate's model as its run left it (guided heads and all, as its own evaluations ran)."""
    state = torch.load(RUNS / name / RUN_FOLDER / "training_state.pt", weights_only=False)
    recipe = json.loads((RUNS / name / RUN_FOLDER / "recipe.json").read_text())
    config = BertConfig.preset(
        recipe["preset"], vocab_size=len(tok.vocab), max_position_embeddings=recipe["max_len"]
    )
    model = BertForPreTraining(config.replace(hidden_dropout=0.0, attention_dropout=0.0))
    if any(key.startswith("model.") for key in state["model"]):
        model = NeighbourGuidance(
            model, recipe["neighbour_bias"], recipe["neighbour_aux"], recipe["neighbour_steps"]
        )
    model.load_state_dict(state["model"])
    return model.eval()
