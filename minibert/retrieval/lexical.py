"""The lexical retrievers: BM25 and TF-IDF cosine over the words of the passages, no model.

bm25 = BM25.of(passages)                      # or BM25([words(p.text) for p in passages])
bm25.search(["who built the tower?"], k=5)    # Ranking(ids, scores), (queries, 5)
bm25.score_matrix([words(q) for q in texts])  # (queries, passages) every score
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import torch

from minibert.retrieval.corpus import Passage
from minibert.retrieval.measures import Ranking, top_of
from minibert.utils import check_top_k

__all__ = ["BM25", "TfIdf", "bm25_idf", "words"]

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


class _Lexical:
    """What BM25 and TF-IDF share as retrievers: built from passages (``of``), searched by text."""

    measure = "score"
    passages: list[Passage] | None = None  # None: built from lists of words, not from passages

    @classmethod
    def of(cls, passages: Sequence[Passage], **settings: float):
        """The retriever over the words of the passages (``words``), which it keeps for hits."""
        retriever = cls([words(p.text) for p in passages], **settings)
        retriever.passages = list(passages)
        return retriever

    def score_matrix(self, queries: Sequence[Sequence[str]]) -> torch.Tensor:
        raise NotImplementedError

    def search(self, queries: Sequence[str], k: int) -> Ranking:
        """Each query text's k best documents, best first (the one retriever interface)."""
        check_top_k(k, len(self.vocabulary.counts), "passages searched")
        return top_of(self.score_matrix([words(q) for q in queries]), k)


class BM25(_Lexical):
    """Okapi BM25 (Robertson et al., 1994) as Lucene scores it: a document's score for a query is
    the sum over the query's words of idf(word) * tf / (tf + k1 * (1 - b + b * length / mean
    length)), tf the word's count in the document. k1 caps what repeating a word earns; b is how
    much a long document is discounted (0: not at all, 1: in proportion to its length)."""

    measure = "BM25 score"

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


class TfIdf(_Lexical):
    """TF-IDF cosine: each text a vector of tf * idf, idf = ln((1 + N) / (1 + df)) + 1 (the
    smoothed idf of scikit-learn's TfidfVectorizer), scaled to length 1; a score is the cosine
    of the query's vector and the document's."""

    measure = "TF-IDF cosine"

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
