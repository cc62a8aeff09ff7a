"""Distilling a sentence encoder: a small student regresses a teacher's sentence vectors
(Reimers & Gurevych, 2020, "Making monolingual sentence embeddings multilingual").

    texts = training_texts()                               # the training articles' sentences
    targets = teacher_vectors(load_encoder("minilm"), texts, cache="runs/cache")  # (texts, 384)
    student = load_encoder("course")                       # 128 wide: a projection to 384
    history = distill_encoder(student, texts, targets, steps=2000, lr=1e-3)
    encode(student, ["who built the tower?"])              # (1, 128): search as MiniLM would

The loss is the mean squared error between the projected student vector and the teacher's, as
the paper uses: it asks for the teacher's vector itself, length included, which a cosine loss
would leave free. The projection (student width -> teacher width) is *semi-orthogonal*: its
columns are orthonormal, so it keeps lengths and angles, and the cosine of two student vectors
is the cosine of their projections. That is why the saved folder is the student's BertModel
alone, mean-pooled, and ``minibert search`` searches its own vectors exactly as the trained
(projected) ones; a free linear map would make the folder's cosines other than those trained.

The texts are the sentences and paragraphs of the articles whose questions are wiki-search's
training questions (``corpora.split_of`` == 'train'): no dev or test article's text is read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from minibert import corpora
from minibert.config import BertConfig
from minibert.model import BertModel, BertPreTrainedModel, check_inputs, mean_pool
from minibert.retrieval.encoders import Encoder, encode
from minibert.training import TrainOptions, train
from minibert.utils import atomic_write, folder_problem, read_kept, vectors_problem

__all__ = [
    "UNITS",
    "DistillOutput",
    "Student",
    "collate_distill",
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


def _texts_key(encoder: Encoder, texts: Sequence[str]) -> str:
    """A hash of the teacher's fingerprint and the texts: cached vectors of others are stale."""
    digest = hashlib.sha256(encoder.fingerprint().encode())
    for text in texts:
        digest.update(text.encode() + b"\0")
    return digest.hexdigest()[:16]


def teacher_vectors(
    teacher: Encoder, texts: Sequence[str], cache: str | Path | None = None
) -> torch.Tensor:
    """(texts, teacher hidden) the teacher's mean-pooled vectors of the texts; with cache (a
    folder), kept in cache/teacher-KEY.safetensors (KEY: the teacher's fingerprint and the texts)
    and read back, checked on load as every cache is (utils.read_kept): a damaged file is said in
    one line and computed again. A cache that cannot be a folder is a ValueError before the
    teacher runs."""
    file = None
    if cache is not None:
        file = Path(cache) / f"teacher-{_texts_key(teacher, texts)}.safetensors"
        shape = (len(texts), teacher.model.config.hidden_size)
        kept = read_kept(
            file,
            lambda f: _read_vectors(f, shape),
            "file of teacher vectors",
            "computing them again",
        )
        if kept is not None:
            return kept
        if problem := folder_problem(cache):  # before the teacher runs, not after
            raise ValueError(f"cache must be a folder for the teacher's vectors: {problem}")
    vectors = encode(teacher, texts, "mean")
    if file is not None:
        from safetensors.torch import save_file

        atomic_write(file, lambda path: save_file({"vectors": vectors.contiguous()}, path))
    return vectors


def _read_vectors(file: Path, shape: tuple[int, int]) -> torch.Tensor:
    """The (texts, teacher hidden) vectors kept in file; a ValueError saying why when the file is
    damaged (not safetensors, no vectors, or vectors utils.vectors_problem refuses)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(file), framework="pt") as f:
            vectors = f.get_tensor("vectors")
    except SafetensorError as exc:
        raise ValueError(f"not a file of vectors: {exc}") from None
    if problem := vectors_problem(vectors, *shape, of="texts"):
        raise ValueError(problem)
    return vectors


def distillation_loss(projected: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The mean squared error of (batch, width) projected student vectors against the teacher's
    (batch, width), averaged over texts and dimensions (torch's MSELoss, as the paper's)."""
    if projected.dim() != 2 or projected.shape != targets.shape:
        raise ValueError(
            f"projected and targets must both be (batch, teacher width), got "
            f"{tuple(projected.shape)} and {tuple(targets.shape)}"
        )
    return (projected - targets.to(projected.dtype)).square().mean()


@dataclass
class DistillOutput:
    """The loss (a scalar; None without targets), the student's mean-pooled vectors (batch,
    hidden) and their projections (batch, teacher width)."""

    loss: torch.Tensor | None
    vectors: torch.Tensor
    projected: torch.Tensor


class Student(BertPreTrainedModel):
    """A BERT whose mean-pooled vector, through a semi-orthogonal projection to the teacher's
    width (none where the widths agree), regresses the teacher's vector of the same text."""

    def __init__(self, config: BertConfig, teacher_width: int = 384):
        super().__init__(config)
        if teacher_width < config.hidden_size:
            raise ValueError(
                f"the teacher's width ({teacher_width}) must be at least the student's "
                f"({config.hidden_size}): a projection that keeps cosines cannot narrow"
            )
        self.bert = BertModel(config, init_weights=False)
        self.teacher_width = teacher_width
        self.init_weights()
        self.projection = None  # a free (teacher width, hidden) matrix; its Q is used
        if teacher_width != config.hidden_size:
            free = torch.empty(teacher_width, config.hidden_size)
            self.projection = nn.Parameter(nn.init.orthogonal_(free))
        self.bert.pooler.requires_grad_(False)  # in no vector; kept as loaded, saved whole

    @classmethod
    def around(cls, bert: BertModel, teacher_width: int = 384) -> Student:
        """A student whose BERT is bert itself (trained in place, not copied)."""
        model = cls(bert.config, teacher_width)
        model.bert = bert
        return model

    def projection_matrix(self) -> torch.Tensor | None:
        """(teacher width, hidden) with orthonormal columns: the Q of the free matrix's QR."""
        return None if self.projection is None else torch.linalg.qr(self.projection).Q

    def project(self, vectors: torch.Tensor) -> torch.Tensor:
        """(batch, hidden) -> (batch, teacher width), lengths and angles kept."""
        return vectors if self.projection is None else vectors @ self.projection_matrix().T

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        teacher_vectors: torch.Tensor | None = None,
    ) -> DistillOutput:
        """(batch, seq) pieces, and the teacher's (batch, teacher width) vectors of the texts."""
        attention_mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask
        hidden = self.bert(input_ids, attention_mask=attention_mask).last_hidden_state
        vectors = mean_pool(hidden, attention_mask)  # (batch, hidden)
        projected = self.project(vectors)  # (batch, teacher width)
        loss = None if teacher_vectors is None else distillation_loss(projected, teacher_vectors)
        return DistillOutput(loss, vectors, projected)

    def check_batch(self, batch: dict[str, Any]) -> None:
        """The value checks forward skips on a device (ids in range)."""
        check_inputs(self.config, batch["input_ids"], None, batch.get("attention_mask"))


def distill_examples(
    student: Encoder, texts: Sequence[str], targets: torch.Tensor
) -> list[dict[str, Any]]:
    """Each text's pieces (cut to the student's max_length) with its teacher vector."""
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


def collate_distill(items: Sequence[dict[str, Any]], pad_id: int = 0) -> dict[str, torch.Tensor]:
    """Distill examples -> input_ids, attention_mask (batch, longest), teacher_vectors (batch,
    teacher width)."""
    width = max(len(item["input_ids"]) for item in items)
    ids = torch.full((len(items), width), pad_id)
    mask = torch.zeros(len(items), width, dtype=torch.long)  # (batch, seq)
    for row, item in enumerate(items):
        ids[row, : len(item["input_ids"])] = torch.tensor(item["input_ids"])
        mask[row, : len(item["input_ids"])] = 1
    targets = torch.stack([item["teacher_vectors"] for item in items])
    return {"input_ids": ids, "attention_mask": mask, "teacher_vectors": targets}


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
    model = Student.around(student.model, targets.shape[-1])
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
        collate_fn=lambda items: collate_distill(items, pad),
        **changes,
    )
    student.model.eval()
    return history
