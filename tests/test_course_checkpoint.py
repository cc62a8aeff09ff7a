"""The committed course checkpoint: the files its card names, their checksum, and its accuracy."""

import hashlib
import json

import pytest
import torch
import transformers

from minibert import assets, corpora, pretraining
from minibert.model import BertForPreTraining
from minibert.tokenization import BertTokenizer
from minibert.training import evaluate

FOLDER = assets.course_checkpoint()
CARD = json.loads((FOLDER / "card.json").read_text())
# the subset is re-measured in eval mode with a fixed mask, so only float summation order can
# differ between machines; 0.002 is a few answers out of the subset's ~2,900 masked tokens
TOLERANCE = 0.002


def test_files_and_size():
    for name in (
        "config.json",
        "model.safetensors",
        "vocab.txt",
        "tokenizer_config.json",
        "history.json",
        "curves.png",
        "README.md",
        "card.json",
    ):
        assert (FOLDER / name).is_file(), name
    committed = sum(p.stat().st_size for p in FOLDER.iterdir() if p.name != "training_state.pt")
    assert committed < 25_000_000


def test_weights_match_the_card():
    digest = hashlib.sha256((FOLDER / "model.safetensors").read_bytes()).hexdigest()
    assert digest == CARD["sha256"]["model.safetensors"]
    assert CARD["sha256"]["model.safetensors"] in (FOLDER / "README.md").read_text()


def test_heldout_accuracy_is_what_the_card_says():
    tok = BertTokenizer.from_pretrained(FOLDER)
    model = BertForPreTraining.from_pretrained(FOLDER)
    heldout = pretraining.heldout_dataset(
        corpora.wikipedia_articles("heldout"), tok, CARD["recipe"]["max_len"], seed=1
    )
    subset = torch.utils.data.Subset(heldout, range(CARD["subset"]["examples"]))
    metrics = evaluate(
        model,
        subset,
        64,
        lambda b: pretraining.collate(b, tok.pad_token_id),
        metrics_fn=pretraining.pretraining_metrics,
    )
    assert metrics["mlm_accuracy"] == pytest.approx(CARD["subset"]["mlm_accuracy"], abs=TOLERANCE)
    assert len(heldout) == CARD["heldout_examples"]


def test_card_beats_its_baselines():
    trained, untrained, frequent = CARD["trained"], CARD["untrained"], CARD["most_frequent_token"]
    assert trained["mlm_accuracy"] > frequent["mlm_accuracy"] > untrained["mlm_accuracy"]
    assert trained["nsp_accuracy"] > frequent["nsp_accuracy"]
    assert trained["mlm_loss"] < untrained["mlm_loss"]


def test_transformers_loads_it_without_missing_keys():
    model, info = transformers.BertForPreTraining.from_pretrained(FOLDER, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    ours = BertForPreTraining.from_pretrained(FOLDER).eval()
    ids = torch.tensor([[2, 100, 200, 4, 300, 3]])
    with torch.no_grad():
        theirs = model.eval()(ids).prediction_logits
        torch.testing.assert_close(ours(ids).mlm_logits, theirs, atol=1e-4, rtol=1e-4)
