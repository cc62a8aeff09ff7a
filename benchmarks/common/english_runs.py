"""The runs of benchmarks/english_recipes.py, read by it and by benchmarks/minimal_pairs.py: where
they live, their shared vocabulary, and a run's model as its last saved state left it; and the
[MASK] measures on each source's held-out slice that english_recipes.py and the course
checkpoint's card share."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from minibert import english_corpus, pretraining
from minibert.config import BertConfig
from minibert.guidance import NeighbourGuidance
from minibert.model import BertForPreTraining
from minibert.paired_statistics import paired_bootstrap
from minibert.pretraining import IGNORE_INDEX
from minibert.recipes import RUN_FOLDER
from minibert.teaching.baselines import NgramTable
from minibert.tokenization import BertTokenizer

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "runs" / "english"  # one folder per candidate (git-ignored)
VOCAB = RUNS / "vocab"  # the candidates' one vocabulary


def load_state(name: str, tok: BertTokenizer) -> torch.nn.Module:
    """A candidate's model as its run left it (guided heads and all, as its own evaluations ran)."""
    return load_paused(RUNS / name, tok)


def load_paused(folder: Path, tok: BertTokenizer) -> torch.nn.Module:
    """The model of a `minibert pretrain` run in folder as its last saved state left it."""
    state = torch.load(folder / RUN_FOLDER / "training_state.pt", weights_only=False)
    recipe = json.loads((folder / RUN_FOLDER / "recipe.json").read_text())
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


SLICE_EXAMPLES = 400  # examples of each source's held-out slice (the first, in the slice's order)


def heldout_sets(tok: BertTokenizer) -> dict[str, list]:
    """Held-out masked examples (one fixed 15% mask, single segments) per held-out text."""
    sets = {}
    for name, docs in english_corpus.heldout_slices().items():
        data = pretraining.heldout_dataset(docs, tok, 128, objective="none", seed=1)
        sets[name] = [data[i] for i in range(min(len(data), SLICE_EXAMPLES))]
    return sets


@torch.no_grad()
def mask_hits(model: torch.nn.Module, data: list, tok: BertTokenizer) -> list[tuple[int, int]]:
    """(right, [MASK] positions) per example: top-1 at the positions that show [MASK]."""
    out = []
    for start in range(0, len(data), 64):
        batch = pretraining.collate(data[start : start + 64], tok.pad_token_id)
        logits = model(
            input_ids=batch["input_ids"],
            token_type_ids=batch["token_type_ids"],
            attention_mask=batch["attention_mask"],
        ).mlm_logits  # (batch, seq, vocab)
        at_mask = (batch["input_ids"] == tok.mask_token_id) & (batch["mlm_labels"] != IGNORE_INDEX)
        right = (logits.argmax(-1) == batch["mlm_labels"]) & at_mask
        out += list(zip(right.sum(1).tolist(), at_mask.sum(1).tolist()))
    return out


def ngram_hits(table: NgramTable, data: list, tok: BertTokenizer) -> list[tuple[int, int]]:
    """The n-gram table's (right, [MASK] positions) per example, at the same positions."""
    out = []
    for item in data:
        ids, labels, right, count = item["input_ids"], item["mlm_labels"], 0, 0
        for i, label in enumerate(labels):
            if label == IGNORE_INDEX or ids[i] != tok.mask_token_id:
                continue
            edge = ids[i - 1] in (tok.cls_token_id, tok.sep_token_id)  # a segment's start
            before = NgramTable.START if edge else ids[i - 1]
            after = NgramTable.END if ids[i + 1] == tok.sep_token_id else ids[i + 1]
            right += table.predict(before, after, unknown=tok.mask_token_id) == label
            count += 1
        out.append((right, count))
    return out


def accuracy(hits: list[tuple[int, int]]) -> float:
    return sum(r for r, _ in hits) / max(1, sum(c for _, c in hits))


def difference(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[float]:
    """b's accuracy minus a's with its 95% interval, the examples resampled (each example's hits
    scaled by its share of the positions, so the mean over examples is the accuracy)."""
    total = sum(c for _, c in a)
    n = len(a)
    per_a = [r * n / total for r, _ in a]
    per_b = [r * n / total for r, _ in b]
    return [round(x, 4) for x in paired_bootstrap(per_a, per_b)]
