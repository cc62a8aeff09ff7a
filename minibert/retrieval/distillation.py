"""Distilling a sentence encoder (Reimers & Gurevych, 2020, "Making monolingual sentence
embeddings multilingual"): a loss and a data source, not a model. The student is the bi-encoder
(``bi_encoder.BiEncoder``, mean-pooled) with ``DistillationLoss`` plugged in; its data are texts,
each with the teacher's vector of it.

    texts = training_texts()                               # the training articles' sentences
    targets = teacher_vectors(load_encoder("minilm"), texts, cache="runs/cache")  # (texts, 384)
    student = load_encoder("course")                       # 128 wide: a projection to 384
    history = distill_encoder(student, texts, targets, steps=2000, lr=1e-3)
    encode(student, ["who built the tower?"])              # (1, 128): search as MiniLM would

The loss is the mean squared error between the projected student vector and the teacher's, as
the paper uses: it asks for the teacher's vector itself, length included, which a cosine loss
would leave free. The projection (student width -> teacher width) belongs to the loss and is
*semi-orthogonal*: its columns are orthonormal, so it keeps lengths and angles, and the cosine of
two student vectors is the cosine of their projections. That is why the saved folder is the
student's BertModel alone, mean-pooled, and ``minibert search`` searches its own vectors exactly
as the trained (projected) ones; a free linear map would make the folder's cosines other than
those trained.

The texts are the sentences and paragraphs of the articles whose questions are wiki-search's
training questions (``corpora.split_of`` == 'train'): no dev or test article's text is read. The
teacher's vectors are ``encoders.encode``'s, kept in its one vector cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from minibert import corpora
from minibert.retrieval.bi_encoder import BiEncoder, collate_pairs
from minibert.retrieval.encoders import Encoder, encode
from minibert.training import TrainOptions, train

__all__ = [
    "UNITS",
    "DistillationLoss",
    "distill_encoder",
    "distill_examples",
    "distillation_loss",
    "teacher_vectors",
    "training_texts",
]

UNITS = ("sentences", "paragraphs", "both")  # which texts of the training articles


def training_texts(units: str = "both") -> list[str]:
    """The sentences and/or paragraphs of the training articles (wiki-search's split: no dev or
    test article), in the dump's order, each text once."""
    if units not in UNITS:
        raise ValueError(f"units must be one of {UNITS}, got {units!r}")
    articles = [
        a for a in corpora.wikipedia_articles("all") if corpora.split_of(a.title) == "train"
    ]
    texts = []
    if units in ("sentences", "both"):
        texts += [s for a in articles for s in a.sentences]
    if units in ("paragraphs", "both"):
        texts += [p for a in articles for p in a.paragraphs]
    return list(dict.fromkeys(texts))  # a sentence that is its paragraph counts once


def teacher_vectors(
    teacher: Encoder, texts: Sequence[str], cache: str | Path | None = None
) -> torch.Tensor:
    """(texts, teacher hidden) the teacher's mean-pooled vectors of the texts; with cache (a
    folder), kept in cache/teacher-KEY.safetensors by ``encoders.encode``'s one vector cache
    (checked on load; a damaged file said in one line and computed again; a cache that cannot be
    a folder is a ValueError before the teacher runs)."""
    return encode(teacher, texts, "mean", cache=cache, cache_name="teacher")


def distillation_loss(projected: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The mean squared error of (batch, width) projected student vectors against the teacher's
    (batch, width), averaged over texts and dimensions (torch's MSELoss, as the paper's)."""
    if projected.dim() != 2 or projected.shape != targets.shape:
        raise ValueError(
            f"projected and targets must both be (batch, teacher width), got "
            f"{tuple(projected.shape)} and {tuple(targets.shape)}"
        )
    return (projected - targets.to(projected.dtype)).square().mean()


class DistillationLoss(nn.Module):
    """The bi-encoder's loss for distillation: each text's vector, through a semi-orthogonal
    projection to the teacher's width (none where the widths agree), regresses the teacher's
    vector of the same text (``distillation_loss``). None for a batch without teacher vectors."""

    def __init__(self, student_width: int, teacher_width: int = 384):
        super().__init__()
        if teacher_width < student_width:
            raise ValueError(
                f"the teacher's width ({teacher_width}) must be at least the student's "
                f"({student_width}): a projection that keeps cosines cannot narrow"
            )
        self.teacher_width = teacher_width
        self.projection = None  # a free (teacher width, hidden) matrix; its Q is used
        if teacher_width != student_width:
            free = torch.empty(teacher_width, student_width)
            self.projection = nn.Parameter(nn.init.orthogonal_(free))

    def projection_matrix(self) -> torch.Tensor | None:
        """(teacher width, hidden) with orthonormal columns: the Q of the free matrix's QR."""
        return None if self.projection is None else torch.linalg.qr(self.projection).Q

    def project(self, vectors: torch.Tensor) -> torch.Tensor:
        """(batch, hidden) -> (batch, teacher width), lengths and angles kept."""
        return vectors if self.projection is None else vectors @ self.projection_matrix().T

    def forward(
        self,
        query_vectors: torch.Tensor | None,
        passage_vectors: torch.Tensor,
        teacher_vectors: torch.Tensor | None = None,
    ) -> torch.Tensor | None:
        """The texts' vectors are the passage side (a batch of texts has no query)."""
        if teacher_vectors is None:
            return None
        return distillation_loss(self.project(passage_vectors), teacher_vectors)


def distill_examples(
    student: Encoder, texts: Sequence[str], targets: torch.Tensor
) -> list[dict[str, Any]]:
    """Each text's pieces (cut to the student's max_length) with its teacher vector: the data
    source ``bi_encoder.collate_pairs`` batches (passage_ids, passage_mask, teacher_vectors)."""
    if not texts or len(texts) != len(targets) or targets.dim() != 2:
        raise ValueError(
            f"give one teacher vector per text: {len(texts)} texts, targets "
            f"{tuple(targets.shape)} (expected ({len(texts)}, teacher width))"
        )
    cut = {"max_length": student.max_length, "truncation": True, "padding": False}
    pieces = student.tokenizer.encode_batch(list(texts), **cut, return_tensors=None)
    return [
        {"input_ids": p.input_ids, "teacher_vectors": t} for p, t in zip(pieces, targets.float())
    ]


def student_of(student: Encoder, teacher_width: int) -> BiEncoder:
    """The bi-encoder around the student's BERT (trained in place), mean-pooled, with the
    distillation loss (the projection drawn after the bi-encoder's own weights)."""
    model = BiEncoder.around(student.model, "mean")
    model.loss = DistillationLoss(student.model.config.hidden_size, teacher_width)
    return model


def distill_encoder(
    student: Encoder,
    texts: Sequence[str],
    targets: torch.Tensor,
    options: TrainOptions | None = None,
    eval_texts: Sequence[str] = (),
    eval_targets: torch.Tensor | None = None,
    **changes: Any,
) -> list[dict[str, float]]:
    """Train the student's model in place to regress the teacher's (texts, teacher width)
    targets, by the package's loop (options, or TrainOptions' fields as keywords); the history.
    eval_texts with their eval_targets give the loop a held-out loss. Left in evaluation mode."""
    model = student_of(student, targets.shape[-1])
    examples = distill_examples(student, texts, targets)
    held = None
    if eval_texts:
        held = distill_examples(student, eval_texts, eval_targets)
    pad = student.tokenizer.pad_token_id
    history = train(
        model,
        examples,
        held,
        options=options,
        collate_fn=lambda items: collate_pairs(items, pad),
        **changes,
    )
    student.model.eval()
    return history
