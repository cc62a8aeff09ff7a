"""The hybrid: two retrievers composed, each one's scores standardised per query (so neither's
scale decides), then (1 - weight) * first + weight * second (Pyserini's hybrid of a lexical and a
dense searcher; BM25 and MiniLM here, its weight chosen on the dev questions).

    hybrid = Hybrid(BM25.of(passages), Searcher("minilm", passages=passages), weight=0.55)
    hybrid.search(["who built the tower?"], k=5)   # Ranking(ids, scores): the same interface

Any two retrievers over the same passages compose: the hybrid reads them only through their
``search``, asking each for every passage (k = the passages) to standardise over all of them.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from minibert.retrieval.measures import Ranking, every_score, top_of
from minibert.utils import check_top_k

__all__ = ["HYBRID_WEIGHT", "Hybrid", "hybrid_scores", "standardised"]

# the dense weight chosen on the dev questions by benchmarks/retrieval.py (its "hybrid: BM25 +
# MiniLM mean" row; a test checks the two agree)
HYBRID_WEIGHT = 0.55


def standardised(scores: torch.Tensor) -> torch.Tensor:
    """Each row of (queries, passages) scores minus its mean, over its standard deviation."""
    scores = scores.double()
    return (scores - scores.mean(1, keepdim=True)) / scores.std(1, keepdim=True).clamp(min=1e-12)


def hybrid_scores(lexical: torch.Tensor, dense: torch.Tensor, weight: float) -> torch.Tensor:
    """(queries, passages) scores of a hybrid: each retriever's scores standardised per query (so
    neither's scale decides), then (1 - weight) * lexical + weight * dense."""
    if lexical.shape != dense.shape or not 0 <= weight <= 1:
        raise ValueError(
            f"lexical and dense must be alike and weight in [0, 1], got {tuple(lexical.shape)}, "
            f"{tuple(dense.shape)} and {weight}"
        )
    return (1 - weight) * standardised(lexical) + weight * standardised(dense)


class Hybrid:
    """Two retrievers over the same passages, composed: (1 - weight) * z(first) + weight *
    z(second), z standardising each query's scores over every passage."""

    measure = "hybrid score"

    def __init__(self, first, second, weight: float = HYBRID_WEIGHT):
        if not 0 <= weight <= 1:
            raise ValueError(f"the hybrid's weight must be in [0, 1], got {weight}")
        if len(first.passages) != len(second.passages):
            raise ValueError(
                f"the hybrid's retrievers search other passages: {len(first.passages):,} and "
                f"{len(second.passages):,}"
            )
        self.first, self.second, self.weight = first, second, weight
        self.passages = first.passages

    def search(self, queries: Sequence[str], k: int) -> Ranking:
        """Each query's k best passages by the combined score, best first."""
        n = len(self.passages)
        check_top_k(k, n, "passages searched")
        first = every_score(self.first.search(queries, n), n)  # (queries, passages)
        second = every_score(self.second.search(queries, n), n)
        return top_of(hybrid_scores(first, second, self.weight), k)
