"""Open-domain question answering, DrQA's way (Chen et al., 2017): a retriever finds the paragraphs
of the course's Wikipedia that may hold the answer, a reader finds the span in them.

    found = ask("who designed the eiffel tower?", reader="runs/qa")   # mb.ask: an OpenAnswer
    found.text, found.hit.title, found.hit.rank, found.score
    asker = Asker(retriever="bm25", reader="runs/qa")   # load once, then ask many questions
    asker("when was it built?", top_k=5)

The retriever ranks every paragraph, read only through the retrievers' one interface
(``retrieval.retriever``: ``search(queries, k)``): any registered name or an encoder. 'hybrid' by
default, BM25 and an encoder's cosine (MiniLM mean-pooled) each standardised per question and
weighted (``retrieval.hybrid``, the dense weight HYBRID_WEIGHT): the best row of
benchmarks/results/retrieval.json, its weight chosen there on the dev questions; 'bm25' alone
(no model); or an encoder alone ('minilm', 'course', a folder). The reader is a folder fine-tuned
on wiki-qa (``minibert finetune --task wiki-qa``); none is shipped, so ``default_reader()`` names
where ``reader_command()`` writes one.

The reader reads each of the top_k paragraphs (``inference.answer``: every window, the best start
+ end). The answer is the span with the highest score over all of them: its start logit + end
logit (DrQA compares spans across paragraphs by the unnormalised exp(start + end), whose order is
the logit sum's; a probability would not compare, each paragraph's softmax has its own
normaliser), plus RETRIEVAL_WEIGHT times its paragraph's retrieval score standardised over the
corpus for the question (BERTserini's linear combination, Yang et al., 2019): a reader alone
finds a confident span in a wrong paragraph more often than the retriever ranks that paragraph
first.

Between the two, a re-ranker may reorder the retriever's RERANK_DEPTH best: the retrieval family's
one (``retrieval.rerank.Reranker``), reading the folder it is given (``rerank.load_scorer``):
lesson 7's pair classifier fine-tuned on wiki-qnli scores each paragraph by its sentence most
likely to hold the answer; a cross-encoder fine-tuned on wiki-rerank reads the whole paragraph.
The answer's retrieval score stays the first stage's, standardised over the corpus.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from minibert import assets, inference, tasks
from minibert.model import BertForQuestionAnswering
from minibert.options import NON_NEGATIVE
from minibert.retrieval.measures import Ranking, hits_of
from minibert.retrieval.rerank import RERANK_DEPTH, Reranker, load_scorer
from minibert.retrieval.retriever import (
    HYBRID,
    HYBRID_WEIGHT,
    Hit,
    Passage,
    Retriever,
    hits,
    retriever_of,
)
from minibert.tasks.qa import trained_length
from minibert.tokenization import BertTokenizer
from minibert.utils import check_text, check_top_k

__all__ = [
    "DEFAULT_TOP_K",
    "HYBRID_WEIGHT",
    "RERANK_DEPTH",
    "RETRIEVAL_WEIGHT",
    "Asker",
    "OpenAnswer",
    "Read",
    "ask",
    "default_reader",
    "load_reader",
    "reader_command",
]

DEFAULT_TOP_K = 5  # paragraphs the reader reads
# the answer's score: span score + RETRIEVAL_WEIGHT x its paragraph's standardised retrieval score,
# the weight chosen on the dev questions among 0, 0.25, 0.5, 1, 2, 4, 8 (the hybrid retriever, five
# paragraphs, a MiniLM reader); 0, the span score alone, was the worst of them
RETRIEVAL_WEIGHT = 1.0
# RERANK_DEPTH (retrieval.rerank's): the first stage's paragraphs a re-ranker reads


def ranked(retriever: Retriever, question: str, top_k: int) -> tuple[list[Hit], torch.Tensor]:
    """The top_k passages for a question, best first, and (passages,) every passage's score
    standardised over the corpus for this question (minus the mean, over the deviation): one
    search of every passage through the retrievers' interface."""
    n = len(retriever.passages)
    check_top_k(top_k, n, "paragraphs in the corpus")
    every = hits(retriever, question, n, what="question")  # the question's scores, all of them
    scores = torch.empty(n, dtype=torch.float64)
    scores[[h.index for h in every]] = torch.tensor([h.score for h in every], dtype=torch.float64)
    return every[:top_k], (scores - scores.mean()) / scores.std().clamp(min=1e-12)


def _check_question(question: str) -> None:
    check_text(question, "the question")


# --- the reader ---------------------------------------------------------------------------------


def default_reader() -> Path:
    """Where ``minibert ask`` looks for its reader: wiki-qa-reader in the asset cache."""
    return assets.cache_dir() / "wiki-qa-reader"


def reader_command(folder: str | Path | None = None) -> str:
    """The command that fine-tunes MiniLM on wiki-qa into folder (the default reader's)."""
    return f"minibert finetune --model minilm --task wiki-qa --out {folder or default_reader()}"


def load_reader(folder: str | Path | None = None) -> tuple[BertForQuestionAnswering, BertTokenizer]:
    """(model, tokenizer) of a folder fine-tuned for spans (wiki-qa); a missing folder is a
    FileNotFoundError naming the command that makes one, another task's folder a ValueError."""
    folder = Path(folder) if folder is not None else default_reader()
    if not (folder / "config.json").is_file():
        where = "no reader yet at" if folder == default_reader() else "no reader in"
        raise FileNotFoundError(
            f"{where} {folder} (a folder written by `minibert finetune --task wiki-qa`): make "
            f"one with `{reader_command(folder)}`, or give another folder (--reader FOLDER; reader= in Python)"
        )
    task = tasks.of_folder(folder)
    architectures = _architectures(folder / "config.json")
    fitted = f"fine-tuned for {task.name}" if task is not None else f"a {', '.join(architectures)}"
    if (task is not None and task.shape != "span") or (
        task is None and architectures and BertForQuestionAnswering.__name__ not in architectures
    ):
        raise ValueError(
            f"{folder} is not a span reader ({fitted}); give a folder "
            f"fine-tuned on wiki-qa, e.g. `{reader_command()}`"
        )
    model = BertForQuestionAnswering.from_pretrained(folder).eval()
    if missing := model.loading_info["newly_initialized"]:
        raise ValueError(
            f"{folder} has no trained span head (its weights lack {', '.join(missing)}): it is "
            f"not a reader; fine-tune one: `{reader_command()}`"
        )
    return model, BertTokenizer.from_pretrained(folder)


def _architectures(config: Path) -> list[str]:
    """The model classes a config.json names (none when it names none or is unreadable: loading
    it says what is wrong)."""
    try:
        found = json.loads(config.read_text(encoding="utf-8")).get("architectures")
    except (OSError, ValueError, AttributeError):
        return []
    return [name for name in found if isinstance(name, str)] if isinstance(found, list) else []


@dataclass(frozen=True)
class Read:
    """One retrieved paragraph, the reader's best span in it (``inference.Answer``), the
    paragraph's retrieval score standardised over the corpus (z) and the answer's score: the
    span's start + end logit + retrieval_weight x z."""

    hit: Hit
    answer: inference.Answer
    retrieval_z: float
    score: float


@dataclass(frozen=True)
class OpenAnswer:
    """The answer: its text, its score (span score + retrieval_weight x retrieval z), its span
    score (start + end logit), its characters in its paragraph, the paragraph's hit (rank,
    retrieval score, passage) and every paragraph read, in rank order."""

    text: str
    score: float
    span_score: float
    start: int
    end: int
    hit: Hit
    read: tuple[Read, ...]


# --- re-ranking --------------------------------------------------------------------------------


def reranked(reranker: Reranker, question: str, found: Sequence[Hit], top_k: int) -> list[Hit]:
    """The top_k of the first stage's hits ordered again by the re-ranker (a tie keeps the first
    stage's order), each hit's score the re-ranker's."""
    first = Ranking(
        torch.tensor([[hit.index for hit in found]]),
        torch.tensor([[hit.score for hit in found]]),
    )  # (1, hits)
    return hits_of(reranker.rerank([question], first, top_k), reranker.passages)[0]


class Asker:
    """A retriever and a reader, loaded once: call it with a question for an OpenAnswer.
    retriever: a retriever's name ('hybrid', the default; 'bm25'; any registered name), an encoder,
    or a retriever itself; encoder and weight: the hybrid's other side and weight; reader: a
    wiki-qa folder (default_reader() when None); rerank: a folder that re-ranks the retriever's
    RERANK_DEPTH best before the reader reads top_k (``retrieval.rerank.load_scorer``: wiki-qnli,
    sentence by sentence, or wiki-rerank, the whole paragraph)."""

    def __init__(
        self,
        retriever: str | Path | Retriever = HYBRID,
        reader: str | Path | None = None,
        encoder: str | Path = "minilm",
        weight: float = HYBRID_WEIGHT,
        passages: Sequence[Passage] | None = None,
        quiet: bool = True,
        rerank: str | Path | None = None,
        retrieval_weight: float = RETRIEVAL_WEIGHT,
    ):
        if problem := NON_NEGATIVE(retrieval_weight):  # as --retrieval-weight: inf refused
            raise ValueError(f"retrieval_weight {problem}, got {retrieval_weight!r}")
        self.retrieval_weight = retrieval_weight
        self.reader, self.tokenizer = load_reader(reader)  # first: a missing reader fails fast
        self.reader_length = trained_length(Path(reader) if reader else default_reader())
        scorer = load_scorer(rerank) if rerank is not None else None  # before the retriever
        if not 0 <= weight <= 1:
            raise ValueError(f"the hybrid's weight must be in [0, 1], got {weight}")
        if isinstance(retriever, str | Path):
            settings = {"encoder": encoder, "weight": weight, "quiet": quiet}
            retriever = retriever_of(retriever, passages, **settings)
        self.retriever = retriever
        self.reranker = Reranker(retriever, scorer, RERANK_DEPTH) if scorer is not None else None

    @property
    def measure(self) -> str:
        """What a hit's score is: the retriever's, or the re-ranker's."""
        if self.reranker is None:
            return self.retriever.measure
        return f"re-ranked from the top {RERANK_DEPTH}: {self.reranker.measure}"

    def __call__(
        self, question: str, top_k: int = DEFAULT_TOP_K, max_length: int | None = None
    ) -> OpenAnswer:
        """The best span over the top_k paragraphs by its score: start + end logit, plus
        retrieval_weight x its paragraph's standardised retrieval score; max_length: the reader's
        window (default: its training length), windows overlapping by a quarter."""
        depth = min(RERANK_DEPTH, len(self.retriever.passages))  # a small corpus: all of it
        found, z = ranked(self.retriever, question, top_k if self.reranker is None else depth)
        if self.reranker is not None:
            found = reranked(self.reranker, question, found, top_k)
        length = max_length or self.reader_length
        tok, reader, weight = self.tokenizer, self.reader, self.retrieval_weight
        read = []
        for hit in found:
            span = inference.answer(reader, tok, question, hit.text, length, length // 4)
            evidence = float(z[hit.index])
            read.append(Read(hit, span, evidence, span.score + weight * evidence))
        best = max(read, key=lambda r: r.score)  # a tie: the better-ranked paragraph
        found = best.answer
        return OpenAnswer(
            found.text, best.score, found.score, found.start, found.end, best.hit, tuple(read)
        )


def ask(
    question: str,
    retriever: str | Path | Retriever = HYBRID,
    reader: str | Path | None = None,
    top_k: int = DEFAULT_TOP_K,
    encoder: str | Path = "minilm",
    weight: float = HYBRID_WEIGHT,
    rerank: str | Path | None = None,
    retrieval_weight: float = RETRIEVAL_WEIGHT,
) -> OpenAnswer:
    """Answer a question from the course's Wikipedia: the retriever's top_k paragraphs (or the
    top_k of its RERANK_DEPTH re-ranked by a wiki-qnli or wiki-rerank folder), the reader's best
    span over them (mb.ask; for many questions, build an Asker once)."""
    _check_question(question)
    check_top_k(top_k)  # its bound, the corpus, once it is loaded
    asker = Asker(
        retriever, reader, encoder, weight, rerank=rerank, retrieval_weight=retrieval_weight
    )
    return asker(question, top_k)
