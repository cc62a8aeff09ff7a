"""wiki-ict and wiki-simcse: wiki-search's encoder trained from the training articles' own text,
no question (``retrieval.corpus``'s ICT and SimCSE pairs), and measured as wiki-search is.

    minibert finetune --task wiki-ict --out runs/ict         # a sentence -> its paragraph without it
    minibert finetune --task wiki-simcse --out runs/simcse   # a sentence -> itself, other dropout
    minibert search runs/ict "Who founded the city?"

Both are the vector shape: the model is ``retrieval.bi_encoder.BiEncoder`` (mean pooling, the
in-batch loss at temperature 0.05), the folder a BERT that ``minibert search`` reads. Only the
training pairs differ from wiki-search's: (sentence, passage) pairs from the paragraphs of the
articles whose questions are wiki-search's training ones. The dev questions keep the best
evaluation (in-batch accuracy, as wiki-search), and dev and test are wiki-search's questions
ranked over every paragraph, with BM25 and TF-IDF beside them. With --dropout 0, wiki-simcse's
two views are the same vector: SimCSE's ablation.
"""

from __future__ import annotations

from typing import Any

import torch

from minibert.retrieval.corpus import pairs_of, training_paragraphs
from minibert.tasks import wiki_search
from minibert.tasks.registry import Task, register, subset

__all__ = ["PairDataset", "WIKI_ICT", "WIKI_SIMCSE"]


class PairDataset(torch.utils.data.Dataset):
    """(query, passage) text pairs as pair examples: "query_ids" and the passage's "input_ids"."""

    def __init__(self, pairs: list[tuple[str, str]], tokenizer, max_length: int):
        if not pairs:
            raise ValueError("no pairs: give at least one (query, passage) pair")
        self.pairs = pairs
        queries = wiki_search._pieces(tokenizer, [q for q, _ in pairs], max_length)
        passages = wiki_search._pieces(tokenizer, [p for _, p in pairs], max_length)
        self.items = [{"query_ids": q, "input_ids": p} for q, p in zip(queries, passages)]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.items[index]


def _loader(objective: str):
    """A task's load: the objective's pairs from the training articles (a random subset by seed),
    and wiki-search's dev and test questions over every paragraph."""

    def load(tok, max_length: int, train_examples: int | None, seed: int):
        _, dev, test = wiki_search._load(tok, max_length, None, seed)
        pairs = subset(
            pairs_of(objective, training_paragraphs(), seed), train_examples, seed, "pairs"
        )
        return PairDataset(pairs, tok, max_length), dev, test

    return load


def _task(name: str, objective: str, what: str) -> Task:
    """wiki-search with the objective's pairs for training."""
    search = wiki_search.WIKI_SEARCH
    return Task(
        name=name,
        labels=search.labels,
        shape=search.shape,
        unit=search.unit,
        load=_loader(objective),
        metrics=search.metrics,
        selection=search.selection,
        description=f"wiki-search's encoder trained on the training articles' text alone, {what} "
        "(no question; dev keeps the best evaluation, test: the held-out articles' questions)",
        baselines=search.baselines,
        score=search.score,
        max_length=search.max_length,
    )


WIKI_ICT = register(
    _task(
        "wiki-ict",
        "ict",
        "by the inverse cloze task (a sentence the query, its paragraph without it the passage)",
    )
)
WIKI_SIMCSE = register(
    _task(
        "wiki-simcse",
        "simcse",
        "by SimCSE (a sentence twice, two dropout masks, the positive pair)",
    )
)
