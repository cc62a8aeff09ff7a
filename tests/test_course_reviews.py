"""The committed review-adapted checkpoint: its files, checksum, card, and what it was trained on.

(test_course_checkpoint.py checks that transformers loads every committed checkpoint.)
"""

import hashlib
import json

import pytest
import torch

from minibert import assets, corpora, pretraining
from minibert.model import BertForPreTraining
from minibert.recipes import load_corpus
from minibert.tokenization import BertTokenizer
from minibert.training import evaluate

FOLDER = assets.course_checkpoint("course-reviews")
CARD = json.loads((FOLDER / "card.json").read_text())
TOLERANCE = 0.003  # a few of the subset's ~800 [MASK] positions: float summation order only


def test_files_size_and_checksum():
    for name in ("config.json", "model.safetensors", "vocab.txt", "recipe.json", "history.json",
                 "curves.png", "README.md", "card.json"):  # fmt: skip
        assert (FOLDER / name).is_file(), name
    assert sum(p.stat().st_size for p in FOLDER.iterdir()) < 25_000_000
    digest = hashlib.sha256((FOLDER / "model.safetensors").read_bytes()).hexdigest()
    assert digest == CARD["sha256"]["model.safetensors"]
    assert digest in (FOLDER / "README.md").read_text()


def test_it_continued_the_course_checkpoint_on_review_text_only():
    recipe = json.loads((FOLDER / "recipe.json").read_text())
    assert (recipe["init"], recipe["corpus"], recipe["objective"]) == ("course", "reviews", "none")
    assert (FOLDER / "vocab.txt").read_text() == (
        assets.course_checkpoint("course") / "vocab.txt"
    ).read_text()
    train, heldout = load_corpus("reviews")
    dev_and_test = {r.text for split in ("dev", "test") for r in corpora.rotten_tomatoes(split)}
    sentences = [s for doc in train + heldout for s in doc.sentences]
    assert sentences and not dev_and_test & set(sentences)


def test_heldout_review_mask_accuracy_is_what_the_card_says():
    tok = BertTokenizer.from_pretrained(FOLDER)
    model = BertForPreTraining.from_pretrained(FOLDER)
    _, heldout = load_corpus("reviews")
    data = pretraining.heldout_dataset(heldout, tok, 128, objective="none", seed=1)
    subset = torch.utils.data.Subset(data, range(CARD["subset"]["examples"]))
    collate = lambda batch: pretraining.collate(batch, tok.pad_token_id)  # noqa: E731
    measured = evaluate(model, subset, 64, collate, metrics_fn=pretraining.metrics_for(tok))
    assert measured["mask_accuracy"] == pytest.approx(
        CARD["subset"]["mask_accuracy"], abs=TOLERANCE
    )
    assert len(data) == CARD["heldout_review_examples"]


def test_card_beats_the_ngram_table_and_the_checkpoint_it_started_from():
    reviews = CARD["reviews"]
    assert reviews["model"]["top1"] > reviews["ngram_table"] > reviews["most_frequent"]
    assert reviews["model"]["top1"] > reviews["course"]["top1"]
