"""wiki-search: find the paragraph that answers a question, among every paragraph of the course's
Wikipedia, and the measures and baselines a retriever is judged by.

    passages = wiki_passages()                    # every paragraph of the course's articles
    queries = wiki_queries("test")                # wiki-qa's questions, each with its paragraph
    bm25 = BM25([words(p.text) for p in passages])
    scores = bm25.score_matrix([words(q.text) for q in queries])   # (queries, passages)
    ranks = ranks_of(scores, [q.passage for q in queries])         # (queries,) 1 = found first
    retrieval_scores(ranks)                       # recall@1/5/20 and MRR@10

Each wiki-qa question (``corpora.questions``, split by article: test = the held-out articles)
is a query; its relevant passage is the one paragraph it was written about; the haystack is every
paragraph of every article, training and held-out alike. The measures are the field's: recall@k,
the share of queries whose paragraph is among the first k, and MS MARCO's MRR@10, the mean of
1 / rank over queries, 0 where the paragraph is not in the first 10. The dense side (vectors of
an encoder, the index) lives in ``retrieval_encoders`` and ``retrieval_index``.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from minibert import corpora
from minibert.corpora import questions

__all__ = [
    "BM25",
    "CUTOFFS",
    "Passage",
    "Query",
    "TfIdf",
    "corpus_version",
    "hybrid_scores",
    "in_batch_loss",
    "per_query",
    "ranks_of",
    "retrieval_scores",
    "wiki_passages",
    "wiki_queries",
    "words",
]

CUTOFFS = (1, 5, 20)  # recall@k reported; MRR is cut at 10, as MS MARCO's
MRR_CUTOFF = 10


@dataclass(frozen=True)
class Passage:
    """One paragraph of the haystack: its article, its place in the article, its text."""

    title: str
    paragraph: int  # 0 = the article's first paragraph
    text: str


@dataclass(frozen=True)
class Query:
    """One question and the index (in wiki_passages()) of the paragraph it was written about."""

    id: str
    text: str
    passage: int


def wiki_passages() -> list[Passage]:
    """Every paragraph of every article of the course's Wikipedia extract, in the dump's order."""
    return [
        Passage(article.title, i, text)
        for article in corpora.wikipedia_articles("all")
        for i, text in enumerate(article.paragraphs)
    ]


def corpus_version(passages: Sequence[Passage]) -> str:
    """A short hash of the passages' titles and texts: a saved index of other passages is stale."""
    digest = hashlib.sha256()
    for p in passages:
        digest.update(f"{p.title}\0{p.paragraph}\0{p.text}\0".encode())
    return digest.hexdigest()[:16]


def wiki_queries(split: str = "test", passages: Sequence[Passage] | None = None) -> list[Query]:
    """wiki-qa's questions of a split ('train', 'dev', 'test', 'all') as queries, each pointing at
    its paragraph's index in passages (wiki_passages() when not given)."""
    passages = wiki_passages() if passages is None else passages
    where = {}
    for i, p in enumerate(passages):
        where.setdefault((p.title, p.text), i)  # a paragraph repeated in one article: its first
    found = []
    for q in questions(split):
        if (q.title, q.context) not in where:
            raise ValueError(
                f"question {q.id}: its paragraph is not among the {len(passages)} passages "
                f"of {q.title!r}; pass the passages of the course's Wikipedia (wiki_passages())"
            )
        found.append(Query(q.id, q.question, where[q.title, q.context]))
    return found


# --- measures ----------------------------------------------------------------------------------


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


# --- lexical baselines -------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """The words BM25 and TF-IDF count: lower-cased runs of letters and digits (no stemming)."""
    return _WORD.findall(text.lower())


class _Vocabulary:
    """Term ids for the words of the documents, and each document's term counts."""

    def __init__(self, documents: Sequence[Sequence[str]]):
        if not documents:
            raise ValueError("no documents: give at least one list of words")
        self.ids: dict[str, int] = {}
        self.counts = [Counter(self.ids.setdefault(w, len(self.ids)) for w in d) for d in documents]
        self.lengths = torch.tensor([len(d) for d in documents], dtype=torch.float64)  # (docs,)
        self.df = torch.zeros(len(self.ids), dtype=torch.float64)  # (terms,) documents with t
        for counts in self.counts:
            self.df[list(counts)] += 1

    def matrix(self, weight) -> torch.Tensor:
        """(terms, docs) sparse: weight(term ids, doc ids, term frequencies) at each (t, d)."""
        terms = [t for c in self.counts for t in c]
        docs = [d for d, c in enumerate(self.counts) for _ in c]
        tf = torch.tensor([n for c in self.counts for n in c.values()], dtype=torch.float64)
        terms, docs = torch.tensor(terms, dtype=torch.long), torch.tensor(docs, dtype=torch.long)
        values = weight(terms, docs, tf)
        size = (len(self.ids), len(self.counts))
        return torch.sparse_coo_tensor(
            torch.stack([terms, docs]), values, size, check_invariants=True
        ).coalesce()

    def query_counts(self, queries: Sequence[Sequence[str]]) -> torch.Tensor:
        """(queries, terms) dense counts of each query's known words (unknown ones score 0)."""
        counts = torch.zeros(len(queries), len(self.ids), dtype=torch.float64)
        for i, query in enumerate(queries):
            for w in query:
                if w in self.ids:
                    counts[i, self.ids[w]] += 1
        return counts

    def scores(
        self, weights: torch.Tensor, queries: Sequence[Sequence[str]], vector
    ) -> torch.Tensor:
        """(queries, docs): vector(counts) (queries, terms) times the (terms, docs) weights, 256
        queries at a time (a dense row per query over the whole vocabulary)."""
        by_doc = weights.t().coalesce()  # (docs, terms)
        blocks = [
            torch.sparse.mm(
                by_doc, vector(self.query_counts(queries[i : i + 256])).T
            ).T  # (block, docs)
            for i in range(0, len(queries), 256)
        ]
        return torch.cat(blocks) if blocks else torch.zeros(0, len(self.counts))


def bm25_idf(df: torch.Tensor, n_docs: int) -> torch.Tensor:
    """BM25's inverse document frequency, as Lucene computes it: log(1 + (N - df + 0.5) /
    (df + 0.5)); never negative, unlike Robertson's log((N - df + 0.5) / (df + 0.5))."""
    return torch.log(1 + (n_docs - df + 0.5) / (df + 0.5))


class BM25:
    """Okapi BM25 (Robertson et al., 1994) as Lucene scores it: a document's score for a query is
    the sum over the query's words of idf(word) * tf / (tf + k1 * (1 - b + b * length / mean
    length)), tf the word's count in the document. k1 caps what repeating a word earns; b is how
    much a long document is discounted (0: not at all, 1: in proportion to its length)."""

    def __init__(self, documents: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75):
        if k1 < 0 or not 0 <= b <= 1:
            raise ValueError(f"k1 must be >= 0 and b in [0, 1], got k1={k1} and b={b}")
        self.k1, self.b = k1, b
        self.vocabulary = vocab = _Vocabulary(documents)
        idf = bm25_idf(vocab.df, len(documents))  # (terms,)
        norm = 1 - b + b * vocab.lengths / vocab.lengths.mean().clamp(min=1)  # (docs,)

        def weight(terms, docs, tf):
            return idf[terms] * tf / (tf + k1 * norm[docs])

        self.weights = vocab.matrix(weight)  # (terms, docs)

    def score_matrix(self, queries: Sequence[Sequence[str]]) -> torch.Tensor:
        """(queries, docs) BM25 scores of each query (a list of words; a repeated word counts
        each time it appears, as in Lucene and bm25s)."""
        return self.vocabulary.scores(self.weights, queries, lambda counts: counts)

    def scores(self, query: Sequence[str]) -> torch.Tensor:
        """(docs,) BM25 scores of one query, a list of words."""
        return self.score_matrix([query])[0]


class TfIdf:
    """TF-IDF cosine: each text a vector of tf * idf, idf = ln((1 + N) / (1 + df)) + 1 (the
    smoothed idf of scikit-learn's TfidfVectorizer), scaled to length 1; a score is the cosine
    of the query's vector and the document's."""

    def __init__(self, documents: Sequence[Sequence[str]]):
        self.vocabulary = vocab = _Vocabulary(documents)
        self.idf = torch.log((1 + len(documents)) / (1 + vocab.df)) + 1  # (terms,)
        weights = vocab.matrix(lambda terms, docs, tf: tf * self.idf[terms])  # (terms, docs)
        norms = torch.zeros(len(documents), dtype=torch.float64)
        norms.index_add_(0, weights.indices()[1], weights.values().square())
        scale = norms.sqrt().clamp(min=1e-12)[weights.indices()[1]]
        self.weights = torch.sparse_coo_tensor(
            weights.indices(), weights.values() / scale, weights.shape, check_invariants=True
        ).coalesce()

    def score_matrix(self, queries: Sequence[Sequence[str]]) -> torch.Tensor:
        """(queries, docs) cosines of each query's TF-IDF vector and each document's."""

        def vector(counts: torch.Tensor) -> torch.Tensor:  # (queries, terms), of length 1
            weighted = counts * self.idf  # a word the documents lack has no term: no weight
            return weighted / weighted.norm(dim=1, keepdim=True).clamp(min=1e-12)

        return self.vocabulary.scores(self.weights, queries, vector)


# --- combining and training --------------------------------------------------------------------


def _standardised(scores: torch.Tensor) -> torch.Tensor:
    """Each row of (queries, passages) scores minus its mean, over its standard deviation."""
    scores = scores.double()
    return (scores - scores.mean(1, keepdim=True)) / scores.std(1, keepdim=True).clamp(min=1e-12)


def hybrid_scores(lexical: torch.Tensor, dense: torch.Tensor, weight: float) -> torch.Tensor:
    """(queries, passages) scores of a hybrid: each retriever's scores standardised per query (so
    neither's scale decides), then (1 - weight) * lexical + weight * dense."""
    if lexical.shape != dense.shape or not 0 <= weight <= 1:
        raise ValueError(
            f"lexical and dense must be alike and weight in [0, 1], got {tuple(lexical.shape)}, "
            f"{tuple(dense.shape)} and {weight}"
        )
    return (1 - weight) * _standardised(lexical) + weight * _standardised(dense)


def in_batch_loss(
    queries: torch.Tensor, passages: torch.Tensor, temperature: float = 0.05
) -> torch.Tensor:
    """The contrastive loss with in-batch negatives (DPR, SimCSE): queries (batch, hidden) and
    their passages (batch, hidden), row i of each a pair; every other passage of the batch is a
    negative. Cross-entropy of the cosine similarities / temperature, the right passage the
    label; the mean over the batch (a scalar)."""
    if queries.dim() != 2 or queries.shape != passages.shape or queries.shape[0] < 2:
        raise ValueError(
            f"queries and passages must both be (batch, hidden) with batch >= 2, got "
            f"{tuple(queries.shape)} and {tuple(passages.shape)}"
        )
    if not temperature > 0 or math.isinf(temperature):
        raise ValueError(f"temperature must be a positive number, got {temperature}")
    q = torch.nn.functional.normalize(queries, dim=-1)
    p = torch.nn.functional.normalize(passages, dim=-1)
    logits = q @ p.T / temperature  # (batch, batch): query i against every passage
    return torch.nn.functional.cross_entropy(logits, torch.arange(len(q), device=q.device))
