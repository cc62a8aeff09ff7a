"""minibert.teaching.word_senses: per-layer cosines of one word across sentences (lessons 0, 3)."""

from __future__ import annotations

import re

import pytest
import torch
from conftest import make_tiny_config

from minibert.assets import path
from minibert.model import BertModel
from minibert.teaching.word_senses import word_in_context
from minibert.tokenization import BertTokenizer

SENSES = {
    "river": ["we sat on the bank of the river .", "the muddy bank of the stream ."],
    "money": ["the bank raised its rates .", "she paid money into the bank ."],
}


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer.from_pretrained(path("minilm"))


def test_word_in_context_matches_a_direct_computation(tokenizer):
    torch.manual_seed(0)
    model = BertModel(make_tiny_config(vocab_size=30522, max_position_embeddings=64)).train()
    curves = word_in_context(model, tokenizer, SENSES, "bank")
    assert model.training  # measured in eval mode, mode restored
    layers = model.config.num_layers + 1
    assert [len(c) for c in curves.values()] == [layers, layers]

    def vector(sentence, layer):
        enc = tokenizer(sentence)
        with torch.no_grad():
            states = model.eval()(torch.tensor([enc.input_ids]), output_hidden_states=True)
        return states.hidden_states[layer][0, enc.tokens.index("bank")]

    for layer in range(layers):
        (r1, r2), (m1, m2) = SENSES.values()
        same = [(r1, r2), (m1, m2)]
        different = [(r1, m1), (r1, m2), (r2, m1), (r2, m2)]
        for name, pairs in (("same sense", same), ("different senses", different)):
            cos = [
                torch.cosine_similarity(vector(a, layer), vector(b, layer), dim=0) for a, b in pairs
            ]
            assert curves[name][layer] == pytest.approx(float(torch.stack(cos).mean()), abs=1e-6)


def test_word_in_context_refuses_bad_input(tokenizer):
    model = BertModel(make_tiny_config(vocab_size=30522, max_position_embeddings=64))
    with pytest.raises(ValueError, match="not one token"):
        word_in_context(model, tokenizer, SENSES, "banks")
    with pytest.raises(ValueError, match="at least two senses"):
        word_in_context(model, tokenizer, {"river": SENSES["river"]}, "bank")


def test_fill_mask_on_a_text_longer_than_the_model_says_what_to_do(capsys):
    from minibert import assets, cli
    from minibert.inference import fill_mask
    from minibert.model import BertForMaskedLM

    folder = assets.course_checkpoint("course")
    text = "the [MASK] of france is paris . " + "a " * 50_000  # 100,000 characters and more
    model = BertForMaskedLM.from_pretrained(folder)
    limit = model.config.max_position_embeddings
    with pytest.raises(ValueError, match=rf"longer than the model's {limit:,} positions"):
        fill_mask(model, BertTokenizer.from_pretrained(folder), text)
    assert cli.main(["fill-mask", str(folder), text]) == 2  # a bad argument
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "truncation=True" not in err
    assert re.search(
        r"the text is 50,00\d tokens .*shorten it to the sentences around the \[MASK\]", err
    )
