"""Training an encoder for search: (query, passage) pairs, every other passage of the batch a
negative (DPR, Karpukhin et al., 2020; SimCSE's supervised loss), through the package's one loop.

    pairs = [(q.text, passages[q.passage].text) for q in wiki_queries("train")]
    encoder = load_encoder("course")
    history = train_encoder(encoder, pairs, steps=200, lr=1e-3)   # TrainOptions' fields
    encode(encoder, texts)                                        # the trained vectors

One BertModel encodes both sides (shared weights, as sentence-transformers trains MiniLM); the
loss is ``retrieval.in_batch_loss`` of the pooled vectors. Two questions about the same paragraph
in one batch make one of them a false negative; batches are drawn at random, and with the
course's 592 training questions that is rare.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from minibert.config import BertConfig
from minibert.model import BertModel, BertPreTrainedModel, check_inputs, mean_pool
from minibert.retrieval import in_batch_loss
from minibert.retrieval_encoders import POOLINGS, Encoder
from minibert.training import TrainOptions, train

__all__ = ["BiEncoder", "PairOutput", "collate_pairs", "pair_examples", "train_encoder"]


@dataclass
class PairOutput:
    """The in-batch loss (a scalar; None for one pair in evaluation) and the pooled vectors of
    each side, (batch, hidden) each."""

    loss: torch.Tensor | None
    query_vectors: torch.Tensor
    passage_vectors: torch.Tensor


class BiEncoder(BertPreTrainedModel):
    """One BERT for queries and passages; pooled by [CLS] or the mean; trained by in_batch_loss.

    The vector shape's model (``minibert finetune --task wiki-search``): built from a config or
    loaded by from_pretrained like every task model, saved as a BERT folder whose encoder
    ``load_encoder`` and ``minibert search`` read. ``BiEncoder.around(bert)`` trains a BertModel
    already loaded, in place."""

    def __init__(self, config: BertConfig, pooling: str = "mean", temperature: float = 0.05):
        super().__init__(config)
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        self.bert = BertModel(config, init_weights=False)
        self.pooling, self.temperature = pooling, temperature
        self.init_weights()
        # the pooler (dense + tanh on [CLS]) is in no vector: kept as loaded, so that the saved
        # folder is a whole BertModel, and frozen, so that DDP waits for no gradient of it
        self.bert.pooler.requires_grad_(False)

    @classmethod
    def around(cls, bert: BertModel, pooling: str = "mean", temperature: float = 0.05) -> BiEncoder:
        """A bi-encoder whose BERT is bert itself (trained in place, not copied)."""
        model = cls(bert.config, pooling, temperature)
        model.bert = bert
        return model

    def pool(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """(batch, seq) pieces -> (batch, hidden) vectors."""
        hidden = self.bert(input_ids, attention_mask=attention_mask).last_hidden_state
        return hidden[:, 0] if self.pooling == "cls" else mean_pool(hidden, attention_mask)

    def forward(
        self,
        query_ids: torch.Tensor,
        passage_ids: torch.Tensor,
        query_mask: torch.Tensor | None = None,
        passage_mask: torch.Tensor | None = None,
    ) -> PairOutput:
        """(batch, q_seq) queries and (batch, p_seq) passages, row i of each a pair. A batch of
        one pair has no negative: its loss is None in evaluation (a held-out set's last batch),
        an error in training."""
        if self.training and not any(p.requires_grad for p in self.bert.parameters()):
            raise ValueError(
                "every weight of the bi-encoder is frozen (freeze_encoder?): its model is the "
                "encoder alone, with no head to train; train the encoder, or nothing learns"
            )
        query_mask = torch.ones_like(query_ids) if query_mask is None else query_mask
        passage_mask = torch.ones_like(passage_ids) if passage_mask is None else passage_mask
        q, p = self.pool(query_ids, query_mask), self.pool(passage_ids, passage_mask)
        if len(q) < 2 and not self.training:
            return PairOutput(None, q, p)
        return PairOutput(in_batch_loss(q, p, self.temperature), q, p)

    def check_batch(self, batch: dict[str, Any]) -> None:
        """The value checks forward skips on a device (ids in range), for both sides."""
        for side in ("query", "passage"):
            check_inputs(self.config, batch[f"{side}_ids"], None, batch.get(f"{side}_mask"))


def pair_examples(encoder: Encoder, pairs: Sequence[tuple[str, str]]) -> list[dict[str, list]]:
    """Each (query, passage) as the pieces' ids of both, cut to the encoder's max_length;
    "input_ids" is the passage's (the loop groups by its length when asked)."""
    if not pairs:
        raise ValueError("no pairs: give at least two (query, passage) pairs")
    cut = {"max_length": encoder.max_length, "truncation": True, "padding": False}
    queries = encoder.tokenizer.encode_batch([q for q, _ in pairs], **cut, return_tensors=None)
    passages = encoder.tokenizer.encode_batch([p for _, p in pairs], **cut, return_tensors=None)
    return [{"query_ids": q.input_ids, "input_ids": p.input_ids} for q, p in zip(queries, passages)]


def collate_pairs(items: Sequence[dict[str, list]], pad_id: int = 0) -> dict[str, torch.Tensor]:
    """Pair examples -> query_ids, query_mask (batch, longest query), passage_ids, passage_mask
    (batch, longest passage), padded with pad_id."""
    batch = {}
    for side, key in (("query", "query_ids"), ("passage", "input_ids")):
        width = max(len(item[key]) for item in items)
        ids = torch.full((len(items), width), pad_id)
        mask = torch.zeros(len(items), width, dtype=torch.long)  # (batch, seq)
        for row, item in enumerate(items):
            ids[row, : len(item[key])] = torch.tensor(item[key])
            mask[row, : len(item[key])] = 1
        batch[f"{side}_ids"], batch[f"{side}_mask"] = ids, mask
    return batch


def train_encoder(
    encoder: Encoder,
    pairs: Sequence[tuple[str, str]],
    options: TrainOptions | None = None,
    pooling: str = "mean",
    temperature: float = 0.05,
    **changes: Any,
) -> list[dict[str, float]]:
    """Train the encoder's model in place on (query, passage) pairs with in-batch negatives, by
    the package's loop (options, or TrainOptions' fields as keywords: steps, lr, batch_size,
    seed, ...); the loop's history. The model is left in evaluation mode."""
    model = BiEncoder.around(encoder.model, pooling, temperature)
    examples = pair_examples(encoder, pairs)
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
