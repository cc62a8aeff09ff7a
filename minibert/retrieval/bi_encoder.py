"""The bi-encoder: one BERT encodes queries and passages into vectors (pooled as ``encoders.pool``),
and a pluggable loss says what those vectors should do (sentence-transformers' shape: a
transformer, a pooling, a loss module). Trained through the package's one loop.

    pairs = [(q.text, passages[q.passage].text) for q in wiki_queries("train")]
    encoder = load_encoder("course")
    history = train_encoder(encoder, pairs, steps=200, lr=1e-3)   # TrainOptions' fields
    train_encoder(encoder, pairs, negatives=hard, steps=200)      # one hard negative a pair
    encode(encoder, texts)                                        # the trained vectors

One BertModel encodes both sides (shared weights, as sentence-transformers trains MiniLM); the
default loss is ``in_batch.InBatchLoss``: every other passage of the batch a negative (DPR,
Karpukhin et al., 2020; SimCSE's supervised loss). Any module taking (query_vectors,
passage_vectors, and the batch's other tensors as keywords) and returning a scalar plugs in. Two questions about the same paragraph
in one batch make one of them a false negative; batches are drawn at random, and with the
course's 592 training questions that is rare. With ``negatives`` (one passage text per pair, e.g.
``negatives.mine_hard_negatives``' BM25 negative of each question, as DPR trains), each batch
also holds those passages: pooled after the pairs' passages (so that a run without them draws its
dropout masks as before) and handed to the loss as ``negative_vectors``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from minibert.config import BertConfig
from minibert.model import BertModel, BertPreTrainedModel, check_inputs
from minibert.retrieval.encoders import Encoder, check_pooling, pad, pool
from minibert.retrieval.in_batch import InBatchLoss
from minibert.training import TrainOptions, train

__all__ = ["BiEncoder", "PairOutput", "collate_pairs", "pair_examples", "train_encoder"]


@dataclass
class PairOutput:
    """The loss (a scalar; None for one pair in evaluation) and the pooled vectors of each side,
    (batch, hidden) each (query_vectors None for a batch of texts alone; negative_vectors the
    hard negatives', None for a batch without them)."""

    loss: torch.Tensor | None
    query_vectors: torch.Tensor | None
    passage_vectors: torch.Tensor
    negative_vectors: torch.Tensor | None = None


class BiEncoder(BertPreTrainedModel):
    """One BERT for queries and passages, pooled (``encoders.POOLINGS``), trained by its loss
    (default: ``InBatchLoss(temperature)``).

    The vector shape's model (``minibert finetune --task wiki-search``): built from a config or
    loaded by from_pretrained like every task model, saved as a BERT folder whose encoder
    ``load_encoder`` and ``minibert search`` read. ``BiEncoder.around(bert)`` trains a BertModel
    already loaded, in place."""

    def __init__(
        self,
        config: BertConfig,
        pooling: str = "mean",
        temperature: float = 0.05,
        loss: nn.Module | None = None,
    ):
        super().__init__(config)
        self.pooling = check_pooling(pooling)
        self.bert = BertModel(config, init_weights=False)
        self.init_weights()
        self.loss = InBatchLoss(temperature) if loss is None else loss
        self.temperature = getattr(self.loss, "temperature", temperature)
        if pooling != "pooler":
            # the pooler (dense + tanh on [CLS]) is in no vector: kept as loaded, so that the
            # saved folder is a whole BertModel, and frozen, so that DDP waits for no gradient
            self.bert.pooler.requires_grad_(False)

    @classmethod
    def around(
        cls,
        bert: BertModel,
        pooling: str = "mean",
        temperature: float = 0.05,
        loss: nn.Module | None = None,
    ) -> BiEncoder:
        """A bi-encoder whose BERT is bert itself (trained in place, not copied)."""
        model = cls(bert.config, pooling, temperature, loss)
        model.bert = bert
        return model

    def pool(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """(batch, seq) pieces -> (batch, hidden) vectors."""
        return pool(
            self.bert(input_ids, attention_mask=attention_mask), attention_mask, self.pooling
        )

    def forward(
        self,
        query_ids: torch.Tensor | None = None,
        passage_ids: torch.Tensor | None = None,
        query_mask: torch.Tensor | None = None,
        passage_mask: torch.Tensor | None = None,
        negative_ids: torch.Tensor | None = None,
        negative_mask: torch.Tensor | None = None,
        **targets: torch.Tensor,
    ) -> PairOutput:
        """(batch, q_seq) queries and (batch, p_seq) passages, row i of each a pair (queries may
        be absent: a batch of texts alone, for a loss that needs no pair); (negatives, n_seq)
        hard negatives (any number: one or several per pair), passed to the loss as
        negative_vectors; targets: the batch's other tensors, passed to the loss (a teacher's
        vectors, say)."""
        if passage_ids is None:
            raise ValueError("the bi-encoder needs passage_ids: (batch, seq) pieces")
        if self.training and not any(p.requires_grad for p in self.bert.parameters()):
            raise ValueError(
                "every weight of the bi-encoder is frozen (freeze_encoder?): its model is the "
                "encoder alone, with no head to train; train the encoder, or nothing learns"
            )
        q = None
        if query_ids is not None:  # queries first: dropout draws its masks in this order
            query_mask = torch.ones_like(query_ids) if query_mask is None else query_mask
            q = self.pool(query_ids, query_mask)
        passage_mask = torch.ones_like(passage_ids) if passage_mask is None else passage_mask
        p = self.pool(passage_ids, passage_mask)
        n = None
        if negative_ids is not None:  # after the passages: a run without them is as before
            negative_mask = (
                torch.ones_like(negative_ids) if negative_mask is None else negative_mask
            )
            n = self.pool(negative_ids, negative_mask)
            targets = {**targets, "negative_vectors": n}
        return PairOutput(self.loss(q, p, **targets), q, p, n)

    def check_batch(self, batch: dict[str, Any]) -> None:
        """The value checks forward skips on a device (ids in range), for each side given."""
        for side in ("query", "passage", "negative"):
            if f"{side}_ids" in batch:
                check_inputs(self.config, batch[f"{side}_ids"], None, batch.get(f"{side}_mask"))


def pair_examples(
    encoder: Encoder, pairs: Sequence[tuple[str, str]], negatives: Sequence[str] | None = None
) -> list[dict[str, list]]:
    """Each (query, passage) as the pieces' ids of both, cut to the encoder's max_length;
    "input_ids" is the passage's (the loop groups by its length when asked); with negatives (one
    passage text per pair), "negative_ids" too."""
    if not pairs:
        raise ValueError("no pairs: give at least two (query, passage) pairs")
    if negatives is not None and (isinstance(negatives, str) or len(negatives) != len(pairs)):
        raise ValueError(
            f"give one negative passage per pair: {len(pairs)} pairs, negatives {negatives!r:.60}"
        )
    cut = {"max_length": encoder.max_length, "truncation": True, "padding": False}
    queries = encoder.tokenizer.encode_batch([q for q, _ in pairs], **cut, return_tensors=None)
    passages = encoder.tokenizer.encode_batch([p for _, p in pairs], **cut, return_tensors=None)
    examples = [
        {"query_ids": q.input_ids, "input_ids": p.input_ids} for q, p in zip(queries, passages)
    ]
    if negatives is not None:
        hard = encoder.tokenizer.encode_batch(list(negatives), **cut, return_tensors=None)
        for example, n in zip(examples, hard):
            example["negative_ids"] = n.input_ids
    return examples


def _rows(ids: Sequence) -> list:
    """An example's hard negatives: one list of piece ids, or a list of such lists."""
    return list(ids) if len(ids) and isinstance(ids[0], list | tuple) else [ids]


def collate_pairs(items: Sequence[dict[str, Any]], pad_id: int = 0) -> dict[str, torch.Tensor]:
    """Examples -> passage_ids, passage_mask (batch, longest passage) from "input_ids", and
    query_ids, query_mask (batch, longest query) where the examples have "query_ids" (and
    negative_ids, negative_mask (negatives, longest) where they have "negative_ids": one list
    of piece ids per example, or several, the first example's first), padded with pad_id
    (``encoders.pad``); any other key's tensors are stacked (a teacher's vectors)."""
    batch = {}
    sides = (("query", "query_ids"), ("passage", "input_ids"), ("negative", "negative_ids"))
    for side, key in sides:
        if key in items[0]:
            rows = [item[key] for item in items]
            if side == "negative":  # one text per example, or several
                rows = [row for ids in rows for row in _rows(ids)]
            ids, mask = pad(rows, pad_id)
            batch[f"{side}_ids"], batch[f"{side}_mask"] = ids, mask
    for key in items[0].keys() - {"query_ids", "input_ids", "negative_ids"}:
        batch[key] = torch.stack([torch.as_tensor(item[key]) for item in items])
    return batch


def train_encoder(
    encoder: Encoder,
    pairs: Sequence[tuple[str, str]],
    options: TrainOptions | None = None,
    pooling: str = "mean",
    temperature: float = 0.05,
    loss: nn.Module | None = None,
    negatives: Sequence[str] | None = None,
    **changes: Any,
) -> list[dict[str, float]]:
    """Train the encoder's model in place on (query, passage) pairs with its loss (in-batch
    negatives by default; negatives: one hard negative passage per pair beside them, as DPR), by
    the package's loop (options, or TrainOptions' fields as keywords: steps, lr, batch_size,
    seed, ...); the loop's history. Left in evaluation mode."""
    model = BiEncoder.around(encoder.model, pooling, temperature, loss)
    examples = pair_examples(encoder, pairs, negatives)
    pad = encoder.tokenizer.pad_token_id
    history = train(
        model,
        examples,
        options=options,
        collate_fn=lambda items: collate_pairs(items, pad),
        **changes,
    )
    encoder.model.eval()
    return history
