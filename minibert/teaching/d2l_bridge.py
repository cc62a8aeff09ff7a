"""d2l beside minibert: load the d2l book's PyTorch code offline, and copy weights between the two.

d2l ("Dive into Deep Learning") ships its chapters' code as one module, ``d2l.torch``. Its BERT
chapter (15.8-15.10) builds BERTEncoder, MaskLM, NextSentencePred and BERTModel on its own
TransformerEncoderBlock. Notebook 11 runs that code beside minibert's; this module makes that
possible and exact:

- ``load_d2l()`` imports ``d2l.torch`` in the course's environment. d2l 1.0.3 pins old numpy,
  pandas and matplotlib, so it is installed with ``pip install --no-deps d2l==1.0.3`` beside the
  course extra, which brings pandas (what ``make lab``/``make test`` run); and it imports torchvision at the top, for its image
  helpers only, while no PyPI torchvision imports beside the CPU torch this course uses. When the
  real torchvision does not import, a stand-in module takes its place, whose every use raises an
  error naming the image helper that needed it.
- ``layer_to_d2l`` and ``encoder_to_d2l`` copy a minibert encoder layer (or a whole BertModel's
  embeddings and layers) into d2l's classes, so the two can be run on the same weights and their
  differences measured: d2l's feed-forward uses ReLU where BERT uses GELU, and d2l's BERTEncoder
  has no LayerNorm on the embeddings.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

import torch
from torch import nn

INSTALL = 'pip install pandas && pip install --no-deps "d2l==1.0.3"'


def _torchvision_stand_in() -> types.ModuleType:
    """A ``torchvision`` that imports, for d2l's top-level import, and refuses every real use."""

    def refuse(name: str) -> Any:
        if name.startswith("__"):  # the import system's own probes (__path__, __spec__, ...)
            raise AttributeError(name)
        raise ImportError(
            f"torchvision.{name} is not available: minibert registered a stand-in because "
            "torchvision does not import beside this torch; only d2l's image helpers need it"
        )

    module = types.ModuleType("torchvision")
    transforms = types.ModuleType("torchvision.transforms")
    module.__getattr__ = refuse  # type: ignore[method-assign]
    transforms.__getattr__ = refuse  # type: ignore[method-assign]
    module.transforms = transforms
    module.__minibert_stand_in__ = True
    return module


def load_d2l() -> types.ModuleType:
    """The ``d2l.torch`` module, with a torchvision stand-in only when the real one fails."""
    if "d2l.torch" in sys.modules:
        return sys.modules["d2l.torch"]
    try:
        importlib.import_module("torchvision")
    except Exception:  # missing, or a build for another torch ("operator ... does not exist")
        sys.modules.pop("torchvision", None)
        stand_in = _torchvision_stand_in()
        sys.modules["torchvision"] = stand_in
        sys.modules["torchvision.transforms"] = stand_in.transforms
    try:
        return importlib.import_module("d2l.torch")
    except ModuleNotFoundError as exc:
        if exc.name not in ("d2l", "d2l.torch", "pandas"):
            raise
        raise ModuleNotFoundError(
            f"d2l needs {exc.name!r}, which is not installed; install d2l beside the course "
            f"with: {INSTALL} (without --no-deps, pip would downgrade numpy and matplotlib)",
            name=exc.name,
        ) from exc


@torch.no_grad()
def layer_to_d2l(layer: nn.Module, d2l: types.ModuleType | None = None) -> nn.Module:
    """A d2l ``TransformerEncoderBlock`` (eval mode) holding a minibert ``EncoderLayer``'s weights.

    d2l's block has the same parts (multi-head attention with biases, add & norm, a two-layer
    feed-forward, add & norm, post-LN), so every weight has a place; only its activation differs.
    """
    d2l = d2l or load_d2l()
    attention = layer.attention
    hidden, heads = attention.hidden_size, attention.num_heads
    block = d2l.TransformerEncoderBlock(
        hidden, layer.ffn_in.out_features, heads, dropout=0.0, use_bias=True
    )
    block(torch.zeros(1, 1, hidden), None)  # d2l's LazyLinear layers take their shapes here
    pairs = (
        (block.attention.W_q, attention.query),
        (block.attention.W_k, attention.key),
        (block.attention.W_v, attention.value),
        (block.attention.W_o, attention.output),
        (block.ffn.dense1, layer.ffn_in),
        (block.ffn.dense2, layer.ffn_out),
        (block.addnorm1.ln, layer.attention_norm),
        (block.addnorm2.ln, layer.ffn_norm),
    )
    for theirs, ours in pairs:
        theirs.load_state_dict(ours.state_dict())
    block.addnorm1.ln.eps = layer.attention_norm.eps
    block.addnorm2.ln.eps = layer.ffn_norm.eps
    return block.eval()


@torch.no_grad()
def encoder_to_d2l(model: nn.Module, d2l: types.ModuleType | None = None) -> nn.Module:
    """A d2l ``BERTEncoder`` (eval mode) with a minibert ``BertModel``'s embeddings and layers.

    d2l's encoder has no LayerNorm after the embedding sum, so the minibert model's
    ``embeddings.layer_norm`` has no place in it: compare with it switched off (see notebook 11).
    """
    d2l = d2l or load_d2l()
    config = model.config
    encoder = d2l.BERTEncoder(
        config.vocab_size,
        config.hidden_size,
        config.intermediate_size,
        config.num_heads,
        config.num_layers,
        dropout=0.0,
        max_len=config.max_position_embeddings,
    )
    encoder.token_embedding.load_state_dict(model.embeddings.word_embeddings.state_dict())
    encoder.segment_embedding.load_state_dict(model.embeddings.token_type_embeddings.state_dict())
    encoder.pos_embedding.copy_(model.embeddings.position_embeddings.weight[None])
    for i, layer in enumerate(model.encoder.layers):
        encoder.blks[i] = layer_to_d2l(layer, d2l)
    return encoder.eval()
