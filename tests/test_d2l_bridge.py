"""Tests for minibert.teaching.d2l_bridge: d2l's book code loads offline beside minibert, and on the same
weights it computes minibert's encoder once its two differences (ReLU, no embedding LayerNorm)
are changed; its chapter loss counts padding."""

from __future__ import annotations

import random
import re
import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from minibert.config import BertConfig
from minibert.model import BertModel
from minibert.teaching import d2l_bridge

pytest.importorskip("d2l", reason='notebook 11\'s extra: pip install --no-deps "d2l==1.0.3"')


@pytest.fixture(scope="module")
def d2l():
    return d2l_bridge.load_d2l()


def test_load_d2l_gives_the_chapters_classes(d2l):
    for name in ("BERTEncoder", "BERTModel", "MaskLM", "NextSentencePred", "TransformerEncoderBlock",
                 "get_tokens_and_segments", "show_heatmaps", "Animator", "_WikiTextDataset"):  # fmt: skip
        assert hasattr(d2l, name), name
    assert d2l_bridge.load_d2l() is d2l  # imported once


def test_the_torchvision_stand_in_refuses_real_use_by_name():
    stand_in = d2l_bridge._torchvision_stand_in()
    assert not hasattr(stand_in, "__path__")  # the import system's probes get AttributeError
    with pytest.raises(ImportError, match="only d2l's image helpers need it"):
        stand_in.datasets  # noqa: B018
    with pytest.raises(ImportError, match="torchvision.ToTensor"):
        stand_in.transforms.ToTensor  # noqa: B018


def test_a_missing_d2l_names_the_install_command(monkeypatch):
    import importlib

    real = importlib.import_module

    def fake(name, *args):
        if name == "d2l.torch":
            raise ModuleNotFoundError("No module named 'd2l'", name="d2l")
        return real(name, *args)

    monkeypatch.delitem(sys.modules, "d2l.torch", raising=False)
    monkeypatch.setattr(importlib, "import_module", fake)
    with pytest.raises(ModuleNotFoundError, match=re.escape(d2l_bridge.INSTALL)):
        d2l_bridge.load_d2l()


def tiny_model(seed=0):
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=50, hidden_size=16, num_layers=2, num_heads=4,
                        intermediate_size=32, max_position_embeddings=12)  # fmt: skip
    model = BertModel(config).eval()
    for norm in (m for m in model.modules() if isinstance(m, nn.LayerNorm)):
        norm.weight.data.uniform_(0.5, 1.5)  # not the identity, so that a missing one shows
        norm.bias.data.uniform_(-0.5, 0.5)
    return model


def test_one_layer_differs_only_by_its_activation(d2l):
    model = tiny_model()
    layer = model.encoder.layers[0]
    block = d2l_bridge.layer_to_d2l(layer, d2l)
    x = torch.randn(3, 7, 16)
    valid = torch.tensor([7, 5, 2])  # d2l takes lengths
    mask = (torch.arange(7)[None, :] < valid[:, None]).long()
    from minibert.attention import padding_mask

    with torch.no_grad():
        ours = layer(x, padding_mask(mask, dtype=x.dtype))[0]
        relu = block(x, valid)
        block.ffn.relu = nn.GELU()
        gelu = block(x, valid)
    real = mask.bool()
    assert (relu - ours)[real].abs().max() > 1e-2  # d2l's ReLU
    torch.testing.assert_close(gelu[real], ours[real], atol=1e-5, rtol=0)


def test_the_whole_encoder_agrees_with_gelu_and_the_embedding_layer_norm(d2l):
    model = tiny_model(1)
    encoder = d2l_bridge.encoder_to_d2l(model, d2l)
    ids = torch.randint(0, 50, (2, 9))
    types = torch.zeros_like(ids)
    types[:, 5:] = 1
    valid = torch.tensor([9, 6])
    mask = (torch.arange(9)[None, :] < valid[:, None]).long()
    with torch.no_grad():
        ours = model(ids, types, mask).last_hidden_state
        for block in encoder.blks:
            block.ffn.relu = nn.GELU()
        without_norm = encoder(ids, types, valid)
        x = encoder.token_embedding(ids) + encoder.segment_embedding(types)
        x = model.embeddings.layer_norm(x + encoder.pos_embedding[:, :9])
        for block in encoder.blks:
            x = block(x, valid)
    real = mask.bool()
    assert (without_norm - ours)[real].abs().max() > 1e-2  # no LayerNorm on the embeddings
    torch.testing.assert_close(x[real], ours[real], atol=1e-5, rtol=0)


def test_the_chapters_mlm_loss_counts_padding_slots(d2l):
    random.seed(0)
    torch.manual_seed(0)
    words = [f"w{i}" for i in range(30)]
    paragraphs = [
        [" ".join(random.choices(words, k=random.randint(3, 12))) for _ in range(4)]
        for _ in range(40)
    ]
    wiki = d2l._WikiTextDataset(paragraphs, max_len=32)
    batch = [torch.stack(column[:16]) for column in (
        wiki.all_token_ids, wiki.all_segments, wiki.valid_lens, wiki.all_pred_positions,
        wiki.all_mlm_weights, wiki.all_mlm_labels, wiki.nsp_labels)]  # fmt: skip
    tokens, segments, valid, positions, weights, labels, nsp = batch
    assert (weights == 0).any()  # some prediction slots are padding
    vocab = len(wiki.vocab)
    net = d2l.BERTModel(vocab, 16, 32, 2, 1, 0.0, max_len=32).eval()
    with torch.no_grad():
        mlm_l, _, _ = d2l._get_batch_loss_bert(
            net, nn.CrossEntropyLoss(), vocab, tokens, segments, valid, positions, weights,
            labels, nsp,
        )  # fmt: skip
        _, logits, _ = net(tokens, segments, valid, positions)
    per_slot = F.cross_entropy(logits.reshape(-1, vocab), labels.reshape(-1), reduction="none")
    everywhere = per_slot.mean()
    masked_only = (per_slot * weights.reshape(-1)).sum() / weights.sum()
    torch.testing.assert_close(mlm_l, everywhere, atol=1e-5, rtol=0)  # padding slots counted
    assert abs(mlm_l - masked_only) > 1e-3
    assert (per_slot * weights.reshape(-1, 1)).shape == (per_slot.numel(), per_slot.numel())
