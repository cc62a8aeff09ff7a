"""wiki-search as a fine-tuning task: train an encoder so that a question's vector is closest to its
paragraph's, every other paragraph of the batch a negative (DPR, Karpukhin et al., 2020), and
measure it by ranking every paragraph of the course's Wikipedia for each held-out question.

The shape is "vector": one vector per text, the mean of the last layer's tokens (as MiniLM pools
and ``minibert search`` searches), no head. Its model is ``retrieval.bi_encoder.BiEncoder`` (one
BERT for both sides, ``retrieval.in_batch.InBatchLoss`` at temperature 0.05); its folder is a BERT that
``minibert search FOLDER "QUERY"`` reads. The data are ``retrieval``'s: each wiki-qa question with
the paragraph it was written about, split by article (test = the held-out articles' questions);
the haystack is every paragraph of all the articles.

What the loop measures on dev while training is in-batch: the share of dev questions whose own
paragraph is the closest of the batch's paragraphs (a tie counts for it). The dev evaluation kept
is the best by that; dev and test are then measured as the field does, over the whole corpus:
recall@1/5/20 and MRR@10 (``retrieval.retrieval_scores``), each question's 20 best paragraphs its
prediction. Baselines at the same questions: BM25 and TF-IDF cosine.

With hard negatives (``minibert finetune --task wiki-search --hard-negatives N``, DPR's: N=1),
each training question also carries the N paragraphs BM25 ranks highest that are not its own
(``retrieval.negatives.mine_hard_negatives``; its paragraph and that paragraph's copies set aside),
and every question of a batch is scored against those too. Dev and test are unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from minibert.retrieval import corpus
from minibert.retrieval.bi_encoder import BiEncoder, collate_pairs
from minibert.retrieval.corpus import Passage, Query
from minibert.retrieval.encoders import encode_pieces, fingerprint
from minibert.retrieval.lexical import BM25, TfIdf
from minibert.retrieval.measures import CUTOFFS, retrieval_scores
from minibert.retrieval.negatives import mine_hard_negatives, positives_of
from minibert.tasks.registry import Baseline, Selection, Task, register, subset
from minibert.tasks.shapes import Shape, register_shape
from minibert.utils import evaluating

__all__ = ["RANKED", "Corpus", "SearchDataset", "in_batch_metrics", "with_hard_negatives"]

RANKED = max(CUTOFFS)  # paragraphs kept per question: enough for recall@20 and MRR@10
ENCODE_BATCH = 64


@dataclass
class Corpus:
    """The haystack: every passage, its pieces (cut to the task's length), the pad id; and the
    passages' vectors by the weights that made them (dev and test share one encoding)."""

    passages: list[Passage]
    pieces: list[list[int]]
    pad_token_id: int
    kept: dict[str, torch.Tensor] = field(default_factory=dict, repr=False)


class SearchDataset(torch.utils.data.Dataset):
    """A split's questions as (question, its paragraph) pair examples: "query_ids" and the
    paragraph's pieces as "input_ids"; ``queries`` and ``corpus`` are what ranking reads."""

    def __init__(self, queries: Sequence[Query], corpus: Corpus, tokenizer, max_length: int):
        if not queries:
            raise ValueError("no questions: give at least one")
        self.queries, self.corpus = list(queries), corpus
        asked = _pieces(tokenizer, [q.text for q in self.queries], max_length)
        self.items = [
            {"query_ids": ids, "input_ids": corpus.pieces[q.passage]}
            for q, ids in zip(self.queries, asked)
        ]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.items[index]


def _pieces(tokenizer, texts: Sequence[str], max_length: int) -> list[list[int]]:
    """Each text's piece ids, [CLS] and [SEP] included, cut to max_length."""
    cut = {"max_length": max_length, "truncation": True, "padding": False, "return_tensors": None}
    return [e.input_ids for e in tokenizer.encode_batch(list(texts), **cut)]


def _vectors(net: BiEncoder, pieces: Sequence[list[int]], pad_token_id: int) -> torch.Tensor:
    """(texts, hidden) unit vectors of the pooled texts (``encoders.encode_pieces``)."""
    with evaluating(net):
        out = encode_pieces(net.bert, pieces, pad_token_id, net.pooling, ENCODE_BATCH)
    return torch.nn.functional.normalize(out, dim=-1)


def _predict_rankings(net: BiEncoder, data: SearchDataset, collate) -> list[list[int]]:
    """Each question's RANKED best passages of the whole corpus (indices), best first."""
    corpus, key = data.corpus, fingerprint(net)
    if key not in corpus.kept:
        corpus.kept.clear()  # one set of weights at a time
        corpus.kept[key] = _vectors(net, corpus.pieces, corpus.pad_token_id)
    queries = _vectors(net, [item["query_ids"] for item in data.items], corpus.pad_token_id)
    scores = queries @ corpus.kept[key].T  # (queries, passages): cosines
    return scores.topk(min(RANKED, scores.shape[1]), dim=1).indices.tolist()


def _gold_passages(data: SearchDataset) -> list[int]:
    """Each question's paragraph (its index in the corpus)."""
    return [q.passage for q in data.queries]


def _score(task: Task, gold: Sequence[int], predictions: Sequence[Sequence[int]]) -> dict:
    """recall@1/5/20 and MRR@10 of the gold passages' ranks in the predicted lists (a passage
    not among the RANKED listed ranks past them: recall@20 and MRR@10 need no more)."""
    if len(gold) != len(predictions) or not gold:
        raise ValueError(f"{len(gold)} questions but {len(predictions)} rankings")
    ranks = [
        list(found).index(g) + 1 if g in found else RANKED + 1
        for g, found in zip(gold, predictions)
    ]
    return {**retrieval_scores(torch.tensor(ranks)), "examples": len(gold), "unit": task.unit}


def _search_line(t: dict[str, Any]) -> str:
    """The test line of a retriever: MRR@10 and recall@k, the paragraph among all of them."""
    recalls = ", ".join(f"recall@{k} {t[f'recall@{k}']:.4f}" for k in CUTOFFS)
    return f"MRR@10 {t['mrr@10']:.4f}, {recalls} (each question's paragraph ranked among every paragraph)"


def in_batch_metrics(batch: dict[str, torch.Tensor], out: Any) -> dict[str, tuple[int, int]]:
    """Training's measure: how often a question's own paragraph is the closest of the batch's
    (cosine; a tie counts for it)."""
    q = torch.nn.functional.normalize(out.query_vectors, dim=-1)
    p = torch.nn.functional.normalize(out.passage_vectors, dim=-1)
    cosines = q @ p.T  # (batch, batch)
    right = cosines.diagonal() >= cosines.max(1).values
    return {"in_batch_accuracy": (int(right.sum()), int(right.numel()))}


VECTOR = register_shape(
    Shape(
        "vector",
        BiEncoder,
        _predict_rankings,
        _gold_passages,
        collate=collate_pairs,
        head_size=lambda task: 1,  # no head: config.json's num_labels is unused
        result_line=_search_line,
        command=None,  # its folders are searched by `minibert search`, which takes any encoder
    )
)


def _load(tok, max_length: int, train_examples: int | None, seed: int):
    """The training (a random subset), dev and held-out questions as pair examples, over one
    corpus of every paragraph."""
    passages = corpus.wiki_passages()
    haystack = Corpus(
        passages, _pieces(tok, [p.text for p in passages], max_length), tok.pad_token_id
    )
    train = subset(corpus.wiki_queries("train", passages), train_examples, seed, "questions")
    splits = (
        train,
        corpus.wiki_queries("dev", passages),
        corpus.wiki_queries("test", passages),
    )
    return tuple(SearchDataset(q, haystack, tok, max_length) for q in splits)


def with_hard_negatives(train: SearchDataset, n: int) -> SearchDataset:
    """train's examples, each with "negative_ids": the pieces of the n paragraphs BM25 ranks
    highest for its question that are not its paragraph or a copy of it, best first (a tie to
    the lower index); n past the paragraphs left is refused (ValueError)."""
    passages = train.corpus.passages
    positives = positives_of(train.queries, passages)
    if n > (fewest := len(passages) - max(len(own) for own in positives)):
        raise ValueError(
            f"hard_negatives must be at most {fewest:,} (the paragraphs that are not a "
            f"question's own), got {n:,}"
        )
    texts = [q.text for q in train.queries]
    mined = mine_hard_negatives(BM25.of(passages), texts, positives, k=n)
    for item, found in zip(train.items, mined):
        item["negative_ids"] = [train.corpus.pieces[i] for i in found]  # n lists of pieces
    return train


def _lexical(kind: type, test: SearchDataset) -> list[list[int]]:
    """Each test question's RANKED best passages by a lexical retriever (BM25 or TfIdf)."""
    retriever = kind.of(test.corpus.passages)
    ranked = min(RANKED, len(test.corpus.passages))
    return retriever.search([q.text for q in test.queries], ranked).ids.tolist()


WIKI_SEARCH = register(
    Task(
        name="wiki-search",
        labels=("relevant",),
        shape="vector",
        unit="question",
        load=_load,
        metrics=in_batch_metrics,
        selection=Selection("in-batch accuracy", lambda record: record["eval_in_batch_accuracy"]),
        description="find the paragraph a question was written about among every paragraph of "
        "the course's Wikipedia: an encoder trained with in-batch negatives (test: the held-out "
        "articles' questions)",
        baselines=(
            Baseline("BM25", lambda train, dev, test, tok: _lexical(BM25, test)),
            Baseline("TF-IDF cosine", lambda train, dev, test, tok: _lexical(TfIdf, test)),
        ),
        score=_score,
        max_length=256,  # all-MiniLM-L6-v2's max_seq_length, as retrieval.encoders cuts texts
        hard_negatives=with_hard_negatives,
    )
)
