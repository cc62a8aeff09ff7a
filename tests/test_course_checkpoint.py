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

PRETRAINED = ("course", "course-english")  # the checkpoints pretrained from scratch, each carded
# the subset is re-measured in eval mode with a fixed mask, so only float summation order can
# differ between machines; 0.002 is a few answers out of the subset's ~3,700 [MASK] positions
TOLERANCE = 0.002


@pytest.mark.parametrize("name", PRETRAINED)
def test_files_and_size(name):
    folder = assets.course_checkpoint(name)
    for file in (
        "config.json",
        "model.safetensors",
        "vocab.txt",
        "tokenizer_config.json",
        "history.json",
        "curves.png",
        "README.md",
        "card.json",
    ):
        assert (folder / file).is_file(), file
    committed = sum(p.stat().st_size for p in folder.iterdir() if p.name != "training_state.pt")
    assert committed < 25_000_000


@pytest.mark.parametrize("name", PRETRAINED)
def test_weights_match_the_card(name):
    folder = assets.course_checkpoint(name)
    card = json.loads((folder / "card.json").read_text())
    digest = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
    assert digest == card["sha256"]["model.safetensors"]
    assert card["sha256"]["model.safetensors"] in (folder / "README.md").read_text()


@pytest.mark.parametrize("name", PRETRAINED)
def test_heldout_mask_accuracy_is_what_the_card_says(name):
    folder = assets.course_checkpoint(name)
    card = json.loads((folder / "card.json").read_text())
    tok = BertTokenizer.from_pretrained(folder)
    model = BertForPreTraining.from_pretrained(folder)
    heldout = pretraining.heldout_dataset(
        corpora.wikipedia_articles("heldout"), tok, card["recipe"]["max_len"], seed=1
    )
    subset = torch.utils.data.Subset(heldout, range(card["subset"]["examples"]))
    metrics = evaluate(
        model,
        subset,
        64,
        lambda b: pretraining.collate(b, tok.pad_token_id),
        metrics_fn=pretraining.metrics_for(tok),
    )
    assert metrics["mask_accuracy"] == pytest.approx(card["subset"]["mask_accuracy"], abs=TOLERANCE)
    assert len(heldout) == card["heldout_examples"]


@pytest.mark.parametrize("name", PRETRAINED)
def test_card_beats_its_baselines_at_the_same_positions(name):
    card = json.loads((assets.course_checkpoint(name) / "card.json").read_text())
    trained, untrained, baselines = card["trained"], card["untrained"], card["baselines"]
    assert trained["mask_accuracy"] > baselines["ngram"]["mask_accuracy"]
    assert baselines["ngram"]["mask_accuracy"] > baselines["most_frequent"]["mask_accuracy"]
    assert baselines["most_frequent"]["mask_accuracy"] > untrained["mask_accuracy"]
    assert trained["mask_top5"] > trained["mask_accuracy"]
    assert trained["mlm_loss"] < untrained["mlm_loss"]
    for pairs in card["nsp"].values():
        assert pairs["model"] > pairs["majority"]


@pytest.mark.parametrize("name", sorted(assets.COURSE_CHECKPOINTS))
def test_transformers_loads_it_without_missing_keys(name):
    folder = assets.course_checkpoint(name)  # every committed checkpoint is a standard BERT
    model, info = transformers.BertForPreTraining.from_pretrained(folder, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    ours = BertForPreTraining.from_pretrained(folder).eval()
    ids = torch.tensor([[2, 100, 200, 4, 300, 3]])
    with torch.no_grad():
        theirs = model.eval()(ids).prediction_logits
        torch.testing.assert_close(ours(ids).mlm_logits, theirs, atol=1e-4, rtol=1e-4)
