"""A word in context, measured: how the vector a BERT gives one word depends on its sentence.

    curves = word_in_context(encoder, tok, {"river": [...], "money": [...]}, "bank")
    curves["same sense"], curves["different senses"]   # mean cosine after each layer

Lessons 0 and 3 use it to show that a contextual model gives "bank" a vector per sentence (a
context-free one gives it one vector). It reads a model; the library does not use it.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from minibert.utils import evaluating

__all__ = ["word_in_context"]


@torch.no_grad()
def word_in_context(
    model: nn.Module, tokenizer: Any, senses: dict[str, list[str]], word: str
) -> dict[str, list[float]]:
    """How a word's vector depends on its sentence: mean cosine per layer, same vs other sense.

    senses maps a sense to sentences that use word (one WordPiece token) in that sense. Returns
    {"same sense": [...], "different senses": [...]}: the mean cosine similarity of word's vectors
    between two sentences, after the embeddings (index 0) and after each layer of the encoder.
    """
    if len(senses) < 2 or any(len(s) < 2 for s in senses.values()):
        raise ValueError("senses needs at least two senses with at least two sentences each")
    vectors = {}
    with evaluating(model):
        for sentence in (s for sentences in senses.values() for s in sentences):
            enc = tokenizer(sentence)
            if word not in enc.tokens:
                raise ValueError(f"{word!r} is not one token of {sentence!r}: {enc.tokens}")
            at = enc.tokens.index(word)
            states = model(torch.tensor([enc.input_ids]), output_hidden_states=True).hidden_states
            vectors[sentence] = torch.stack([h[0, at] for h in states])  # (layers + 1, hidden)

    def mean_cosine(pairs: list[tuple[str, str]]) -> list[float]:
        cos = [torch.cosine_similarity(vectors[a], vectors[b], dim=-1) for a, b in pairs]
        return torch.stack(cos).mean(0).tolist()  # (layers + 1,)

    groups = list(senses.values())
    same = [(a, b) for g in groups for i, a in enumerate(g) for b in g[i + 1 :]]
    different = [
        (a, b) for i, g in enumerate(groups) for h in groups[i + 1 :] for a in g for b in h
    ]
    return {"same sense": mean_cosine(same), "different senses": mean_cosine(different)}
