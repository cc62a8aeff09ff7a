"""The contrastive loss with in-batch negatives (DPR, Karpukhin et al., 2020; SimCSE, Gao et al.,
2021; sentence-transformers' MultipleNegativesRankingLoss): query i's positive is passage i, and
every other passage of the batch is a negative.

    loss = in_batch_loss(query_vectors, passage_vectors, temperature=0.05)   # a scalar
    model = BiEncoder(config, loss=InBatchLoss(temperature=0.05))           # the bi-encoder's
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["InBatchLoss", "in_batch_loss"]


def in_batch_loss(
    queries: torch.Tensor, passages: torch.Tensor, temperature: float = 0.05
) -> torch.Tensor:
    """Queries (batch, hidden) and their passages (batch, hidden), row i of each a pair; every
    other passage of the batch is a negative. Cross-entropy of the cosine similarities /
    temperature, the right passage the label; the mean over the batch (a scalar)."""
    if queries.dim() != 2 or queries.shape != passages.shape or queries.shape[0] < 2:
        raise ValueError(
            f"queries and passages must both be (batch, hidden) with batch >= 2, got "
            f"{tuple(queries.shape)} and {tuple(passages.shape)}"
        )
    check_temperature(temperature)
    q = nn.functional.normalize(queries, dim=-1)
    p = nn.functional.normalize(passages, dim=-1)
    logits = q @ p.T / temperature  # (batch, batch): query i against every passage
    return nn.functional.cross_entropy(logits, torch.arange(len(q), device=q.device))


def check_temperature(temperature: float) -> float:
    """temperature, when it is a positive finite number; else a ValueError saying so."""
    if not temperature > 0 or math.isinf(temperature):
        raise ValueError(f"temperature must be a positive number, got {temperature}")
    return temperature


class InBatchLoss(nn.Module):
    """in_batch_loss as the bi-encoder's pluggable loss: (query vectors, passage vectors) -> the
    mean cross-entropy; a batch of one pair has no negative (None: nothing to learn from)."""

    def __init__(self, temperature: float = 0.05):
        super().__init__()
        self.temperature = check_temperature(temperature)

    def forward(
        self, query_vectors: torch.Tensor | None, passage_vectors: torch.Tensor, **_: torch.Tensor
    ) -> torch.Tensor | None:
        if query_vectors is None:
            raise ValueError("the in-batch loss needs (query, passage) pairs: give query_ids")
        if len(query_vectors) < 2 and not self.training:
            return None  # a held-out set's last batch of one pair
        return in_batch_loss(query_vectors, passage_vectors, self.temperature)
