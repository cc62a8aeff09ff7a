"""The cross-encoder re-ranker (Nogueira & Cho, 2019, monoBERT): BERT reads a question and a
passage together, [CLS] question [SEP] passage [SEP], and a classifier on it says whether the
passage is the one the question is about. A first stage (BM25 by default) finds a few candidates
fast; the cross-encoder, which sees both texts at once, orders them.

    reranker = Reranker(BM25.of(passages), "runs/rerank", depth=20)   # a wiki-rerank folder
    reranker.search(["who built the tower?"], k=5)   # Ranking(ids, scores): the one interface
    retriever_of("bm25+rerank", reranker="runs/rerank")   # the same by its registered name
    retriever_of("hybrid+rerank", reranker="runs/rerank")  # the hybrid's top 20, re-ranked

The folder is one ``minibert finetune --task wiki-rerank`` wrote (``tasks.wiki_rerank``): a
BertForSequenceClassification with the labels LABELS, trained on each training question's
paragraph against BM25's best-ranked wrong paragraphs. A passage's score is the classifier's
log-odds of 'relevant' (its two logits' difference; a probability near 1 would tie in float32);
a tie keeps the first stage's order. Unlike a bi-encoder, nothing is indexed: every (question,
passage) pair is read anew, which is why it re-ranks a few. ``search(queries, k)`` reads the first
stage's max(k, depth) best, so that every score it returns is the cross-encoder's (k = every
passage, as the hybrid or ``ask`` asks, reads them all: slow).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from minibert import assets
from minibert.model import BertForSequenceClassification
from minibert.retrieval.encoders import by_length, pad
from minibert.retrieval.measures import Ranking
from minibert.tokenization import BertTokenizer
from minibert.utils import check_top_k, evaluating

__all__ = [
    "LABELS",
    "PAIR_LENGTH",
    "RERANK_DEPTH",
    "CrossEncoder",
    "Reranker",
    "default_reranker",
    "reranker_command",
]

LABELS = ("irrelevant", "relevant")  # wiki-rerank's labels, index = label id
RELEVANT = LABELS[1]
RERANK_DEPTH = 20  # the first stage's passages re-ranked (as open_qa's re-ranker reads)
PAIR_LENGTH = 256  # pieces of [CLS] question [SEP] passage [SEP] (wiki-rerank's default length)


def default_reranker() -> Path:
    """Where the registered re-rankers look for their folder: wiki-rerank in the asset cache."""
    return assets.cache_dir() / "wiki-rerank"


def reranker_command(folder: str | Path | None = None) -> str:
    """The command that fine-tunes MiniLM as a re-ranker into folder (the default one's)."""
    return (
        f"minibert finetune --model minilm --task wiki-rerank --out {folder or default_reranker()}"
    )


def _trained_length(folder: Path, positions: int) -> int:
    """The pair length a folder was fine-tuned with (its results.json), else PAIR_LENGTH; at most
    the model's positions."""
    try:
        results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        return min(int(results["options"]["max_length"]), positions)
    except (OSError, ValueError, KeyError, TypeError):
        return min(PAIR_LENGTH, positions)


@dataclass
class CrossEncoder:
    """A pair classifier with LABELS and its tokenizer; max_length: the pieces a pair is cut to
    (its training length), the passage cut first (the longer side)."""

    model: BertForSequenceClassification
    tokenizer: BertTokenizer
    max_length: int

    @classmethod
    def load(cls, folder: str | Path) -> CrossEncoder:
        """The cross-encoder of a wiki-rerank folder, in evaluation mode; a missing folder is a
        FileNotFoundError naming the command that makes one, another model's a ValueError."""
        folder = Path(folder)
        if not (folder / "config.json").is_file():
            raise FileNotFoundError(
                f"no re-ranker in {folder} (a folder written by `minibert finetune --task "
                f"wiki-rerank`): make one with `{reranker_command(folder)}`"
            )
        try:
            model = BertForSequenceClassification.from_pretrained(folder).eval()
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot re-rank with {folder}: {exc}") from None
        names = model.config.names()
        if names != LABELS or model.loading_info["newly_initialized"]:
            raise ValueError(
                f"{folder} is not a trained re-ranker (labels {names}, expected {LABELS}, and a "
                f"trained head): make one with `{reranker_command()}`"
            )
        length = _trained_length(folder, model.config.max_position_embeddings)
        return cls(model, BertTokenizer.from_pretrained(folder), length)

    def scores(
        self, pairs: Sequence[tuple[str, str]], batch_size: int = 64, progress: bool = False
    ) -> torch.Tensor:
        """(pairs,) float32: each (question, passage) pair's log-odds of 'relevant', read as
        [CLS] question [SEP] passage [SEP], in batches of similar length, in inference mode."""
        from tqdm.auto import tqdm

        cut = {"max_length": self.max_length, "truncation": True, "padding": False}
        encodings = self.tokenizer.encode_batch(list(pairs), **cut, return_tensors=None)
        ids = [e.input_ids for e in encodings]
        device = next(self.model.parameters()).device
        scores = torch.empty(len(ids))
        batches = list(by_length(ids, batch_size))
        with torch.inference_mode(), evaluating(self.model):
            for rows in tqdm(batches, desc="re-ranking", unit="batch", disable=not progress):
                input_ids, attention_mask = pad([ids[i] for i in rows], self.tokenizer.pad_token_id)
                token_type_ids, _ = pad([encodings[i].token_type_ids for i in rows], 0)
                logits = self.model(
                    input_ids.to(device), token_type_ids.to(device), attention_mask.to(device)
                ).logits.float()  # (batch, 2)
                scores[rows] = (logits[:, 1] - logits[:, 0]).cpu()  # log p(relevant)/p(irrelevant)
        return scores


class Reranker:
    """A first-stage retriever's max(k, depth) best passages for each query, ordered again by a
    cross-encoder (a wiki-rerank folder, or a CrossEncoder): search(queries, k) -> Ranking."""

    measure = "cross-encoder log-odds"

    def __init__(
        self,
        first,
        cross_encoder: CrossEncoder | str | Path,
        depth: int = RERANK_DEPTH,
        batch_size: int = 64,
        progress: bool = False,
    ):
        for name, value in (("depth", depth), ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not isinstance(cross_encoder, CrossEncoder):
            cross_encoder = CrossEncoder.load(cross_encoder)
        self.first, self.cross_encoder, self.depth = first, cross_encoder, depth
        self.batch_size, self.progress = batch_size, progress
        self.passages = first.passages

    def search(self, queries: Sequence[str], k: int) -> Ranking:
        """Each query's k best passages by the cross-encoder, best first, among the first stage's
        max(k, depth) best (a tie keeps the first stage's order): Ranking (queries, k)."""
        n = len(self.passages)
        check_top_k(k, n, "passages searched")
        queries = list(queries)
        depth = min(max(k, self.depth), n)
        first = self.first.search(queries, depth)  # (queries, depth)
        pairs = [(q, self.passages[int(i)].text) for q, row in zip(queries, first.ids) for i in row]
        scores = self.cross_encoder.scores(pairs, self.batch_size, self.progress)
        scores = scores.view(len(queries), depth)  # (queries, depth)
        order = torch.sort(scores, dim=1, descending=True, stable=True).indices[:, :k]
        return Ranking(first.ids.long().gather(1, order), scores.gather(1, order))
