"""The contrastive loss with in-batch negatives (DPR, Karpukhin et al., 2020; SimCSE, Gao et al.,
2021; sentence-transformers' MultipleNegativesRankingLoss): query i's positive is passage i, and
every other passage of the batch is a negative.

    loss = in_batch_loss(query_vectors, passage_vectors, temperature=0.05)   # a scalar
    loss = in_batch_loss(q, p, negatives=hard_vectors)   # DPR's: one mined negative per query too
    model = BiEncoder(config, loss=InBatchLoss(temperature=0.05))           # the bi-encoder's

With hard negatives (``negatives.mine_hard_negatives``: BM25's best wrong passage for each query),
every query is scored against the batch's passages and the batch's hard negatives, a (batch,
batch + negatives) matrix, as DPR trains: each hard negative is a negative for every query.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["InBatchLoss", "in_batch_loss"]


def in_batch_loss(
    queries: torch.Tensor,
    passages: torch.Tensor,
    temperature: float = 0.05,
    negatives: torch.Tensor | None = None,
) -> torch.Tensor:
    """Queries (batch, hidden) and their passages (batch, hidden), row i of each a pair; every
    other passage of the batch is a negative, and so is each of the (extra, hidden) negatives
    when given (hard negatives). Cross-entropy of the cosine similarities / temperature, the
    right passage the label; the mean over the batch (a scalar)."""
    if queries.dim() != 2 or queries.shape != passages.shape or queries.shape[0] < 2:
        raise ValueError(
            f"queries and passages must both be (batch, hidden) with batch >= 2, got "
            f"{tuple(queries.shape)} and {tuple(passages.shape)}"
        )
    if negatives is not None and (negatives.dim() != 2 or negatives.shape[1] != queries.shape[1]):
        raise ValueError(
            f"negatives must be (negatives, {queries.shape[1]}), got {tuple(negatives.shape)}"
        )
    check_temperature(temperature)
    q = nn.functional.normalize(queries, dim=-1)
    p = nn.functional.normalize(passages, dim=-1)
    if negatives is not None:
        p = torch.cat([p, nn.functional.normalize(negatives, dim=-1)])  # (batch + extra, hidden)
    logits = q @ p.T / temperature  # (batch, batch + extra): query i against every passage
    return nn.functional.cross_entropy(logits, torch.arange(len(q), device=q.device))


def check_temperature(temperature: float) -> float:
    """temperature, when it is a positive finite number; else a ValueError saying so."""
    if not temperature > 0 or math.isinf(temperature):
        raise ValueError(f"temperature must be a positive number, got {temperature}")
    return temperature


class InBatchLoss(nn.Module):
    """in_batch_loss as the bi-encoder's pluggable loss: (query vectors, passage vectors, and the
    hard negatives' vectors where the batch has them) -> the mean cross-entropy; a batch of one
    pair has no in-batch negative (None in evaluation: nothing to learn from)."""

    def __init__(self, temperature: float = 0.05):
        super().__init__()
        self.temperature = check_temperature(temperature)

    def forward(
        self,
        query_vectors: torch.Tensor | None,
        passage_vectors: torch.Tensor,
        negative_vectors: torch.Tensor | None = None,
        **_: torch.Tensor,
    ) -> torch.Tensor | None:
        if query_vectors is None:
            raise ValueError("the in-batch loss needs (query, passage) pairs: give query_ids")
        if len(query_vectors) < 2 and not self.training:
            return None  # a held-out set's last batch of one pair
        return in_batch_loss(query_vectors, passage_vectors, self.temperature, negative_vectors)
