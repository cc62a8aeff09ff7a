"""Training an encoder for search from the articles alone, no question: the inverse cloze task
(ICT; Lee et al., 2019, ORQA) and SimCSE's dropout pairs (Gao et al., 2021), each a list of
(query, passage) pairs for ``retrieval_training``'s in-batch loss.

    paragraphs = training_paragraphs()          # the training articles' paragraphs, as sentences
    pairs = ict_pairs(paragraphs, seed=0)       # (a sentence, its paragraph without it)
    pairs = simcse_pairs(paragraphs)            # (a sentence, the same sentence)
    train_encoder(load_encoder("course"), pairs, steps=1000, lr=3e-4)

ICT: each sentence of a paragraph of two or more sentences is a query; its passage is the
paragraph with that sentence removed, so that the encoder must match a sentence to its context
rather than to its own words (ORQA keeps the sentence in 10% of the passages, ``keep``, so that
word overlap still counts for something). Queries and passages differ in length and kind, as
questions and paragraphs do: the asymmetry wiki-search measures.

SimCSE (unsupervised): the same sentence on both sides; the two forward passes draw different
dropout masks, and that noise is the only thing that makes the two vectors differ. With dropout
0 the two vectors are identical and the loss only pushes sentences apart.

Only the training articles' text is read (``corpora.split_of(title) == "train"``): neither the
held-out articles, whose questions are wiki-search's test queries, nor the dev articles, whose
questions choose the kept evaluation. Every other paragraph of the batch is a negative; two
sentences of one paragraph in one batch make a near-duplicate negative, rare among the thousands
of pairs.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from minibert import corpora

__all__ = ["ICT_KEEP", "OBJECTIVES", "ict_pairs", "simcse_pairs", "training_paragraphs"]

ICT_KEEP = 0.1  # ORQA: the query sentence is left in its passage this often
OBJECTIVES = ("ict", "simcse")


def training_paragraphs() -> list[tuple[str, ...]]:
    """Each paragraph, as its sentences, of the articles whose questions are wiki-search's training
    ones (no dev or held-out article's text)."""
    return [
        sentences
        for article in corpora.wikipedia_articles("train")  # not the held-out articles
        if corpora.split_of(article.title) == "train"  # nor the dev ones
        for sentences in article.paragraph_sentences
    ]


def ict_pairs(
    paragraphs: Sequence[Sequence[str]], keep: float = ICT_KEEP, seed: int = 0
) -> list[tuple[str, str]]:
    """(sentence, passage) for every sentence of every paragraph of two or more sentences: the
    passage is the paragraph's other sentences, or (with probability keep, by seed) all of them."""
    if not 0 <= keep <= 1:
        raise ValueError(f"keep must be a probability in [0, 1], got {keep}")
    rng = random.Random(seed)
    pairs = []
    for sentences in paragraphs:
        if len(sentences) < 2:  # removing its one sentence would leave no passage
            continue
        for i, sentence in enumerate(sentences):
            kept = rng.random() < keep
            context = sentences if kept else [*sentences[:i], *sentences[i + 1 :]]
            pairs.append((sentence, " ".join(context)))
    if not pairs:
        raise ValueError(
            "no paragraph has two sentences: ICT needs a passage left without the query"
        )
    return pairs


def simcse_pairs(paragraphs: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
    """(sentence, the same sentence) for every distinct sentence of the paragraphs, first seen first:
    dropout makes the two views."""
    seen = dict.fromkeys(s for sentences in paragraphs for s in sentences)
    if not seen:
        raise ValueError("no sentences: give at least one paragraph with a sentence")
    return [(s, s) for s in seen]


def pairs_of(objective: str, paragraphs: Sequence[Sequence[str]], seed: int = 0) -> list:
    """The (query, passage) pairs of an objective, 'ict' or 'simcse'."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    return ict_pairs(paragraphs, seed=seed) if objective == "ict" else simcse_pairs(paragraphs)
