"""How a retriever is judged, and what it answers: a Ranking (each query's best passages and their
scores), the rank of each query's relevant passage, recall@k and MRR@10.

    ranking = retriever.search(["who built it?"], k=20)   # Ranking(ids, scores), (queries, k)
    ranks = ranks_of(scores, [q.passage for q in queries])  # (queries,) 1 = found first
    retrieval_scores(ranks)                                 # recall@1/5/20 and MRR@10

The measures are the field's: recall@k, the share of queries whose paragraph is among the first
k, and MS MARCO's MRR@10, the mean of 1 / rank over queries, 0 where the paragraph is not in the
first 10.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch

from minibert.retrieval.corpus import Passage

__all__ = [
    "CUTOFFS",
    "MRR_CUTOFF",
    "Hit",
    "Ranking",
    "every_score",
    "hits_of",
    "per_query",
    "ranks_of",
    "retrieval_scores",
    "top_of",
]

CUTOFFS = (1, 5, 20)  # recall@k reported; MRR is cut at 10, as MS MARCO's
MRR_CUTOFF = 10


class Ranking(NamedTuple):
    """What every retriever's search answers: ids (queries, k) long, the passages' indices best
    first, and scores (queries, k), each passage's score for its query (higher is better)."""

    ids: torch.Tensor
    scores: torch.Tensor


@dataclass(frozen=True)
class Hit:
    """One passage found: its rank (1 best), score, index in the passages, and the passage."""

    rank: int
    score: float
    index: int
    passage: Passage

    @property
    def title(self) -> str:
        return self.passage.title

    @property
    def text(self) -> str:
        return self.passage.text


def hits_of(ranking: Ranking, passages: Sequence[Passage]) -> list[list[Hit]]:
    """Each query's ranked passages as Hits, best first."""
    return [
        [
            Hit(rank, float(s), int(i), passages[int(i)])
            for rank, (s, i) in enumerate(zip(row_s, row_i), 1)
        ]
        for row_s, row_i in zip(ranking.scores, ranking.ids)
    ]


def top_of(scores: torch.Tensor, k: int) -> Ranking:
    """(queries, passages) scores -> the Ranking of each query's k best (k cut to the passages)."""
    best = scores.topk(min(k, scores.shape[1]), dim=1)
    return Ranking(best.indices, best.values)


def every_score(ranking: Ranking, passages: int) -> torch.Tensor:
    """(queries, passages) float64: a Ranking of every passage (k = passages) back in the
    passages' order; a Ranking of fewer is refused (a passage it left out has no score)."""
    if ranking.ids.shape[1] != passages:
        raise ValueError(
            f"a ranking of {ranking.ids.shape[1]} passages cannot score all {passages}: "
            f"search with k={passages}"
        )
    scores = torch.empty(ranking.ids.shape, dtype=torch.float64)
    return scores.scatter_(1, ranking.ids.long(), ranking.scores.double())


def ranks_of(scores: torch.Tensor, relevant: Sequence[int]) -> torch.Tensor:
    """(queries, passages) scores, the relevant passage of each query -> (queries,) its rank, 1
    best. A tie counts against the relevant passage: its rank is the number of passages that
    score at least as high, itself included (a retriever that scores everything 0 ranks last)."""
    relevant = torch.as_tensor(relevant, dtype=torch.long)
    if scores.dim() != 2 or relevant.shape != (scores.shape[0],):
        raise ValueError(
            f"scores must be (queries, passages) and relevant (queries,), got "
            f"{tuple(scores.shape)} and {tuple(relevant.shape)}"
        )
    if len(relevant) and (relevant.min() < 0 or relevant.max() >= scores.shape[1]):
        raise ValueError(f"relevant passages must be in [0, {scores.shape[1]}), got {relevant}")
    own = scores.gather(1, relevant[:, None])  # (queries, 1)
    return (scores >= own).sum(1)  # (queries,)


def per_query(ranks: torch.Tensor) -> dict[str, torch.Tensor]:
    """Each query's score under each measure: 'recall@k' 1/0 for k in CUTOFFS, and 'mrr@10'
    1 / rank (0 past rank 10); each (queries,) float64, ready for a paired bootstrap."""
    ranks = torch.as_tensor(ranks, dtype=torch.float64)
    scores = {f"recall@{k}": (ranks <= k).double() for k in CUTOFFS}
    scores[f"mrr@{MRR_CUTOFF}"] = torch.where(ranks <= MRR_CUTOFF, 1 / ranks, 0.0)
    return scores


def retrieval_scores(ranks: torch.Tensor) -> dict[str, float]:
    """recall@1, @5, @20 and MRR@10 (shares in [0, 1]) of the relevant passages' ranks (queries,)."""
    if len(ranks) == 0:
        raise ValueError("no queries: give the rank of at least one relevant passage")
    return {name: float(values.mean()) for name, values in per_query(ranks).items()}
