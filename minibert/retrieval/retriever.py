"""The one retriever interface, and the registry of retrievers by name.

Every retriever answers ``search(queries, k) -> Ranking`` (each query's k best passages and their
scores, best first), holds the ``passages`` it searches and names its ``measure`` (what a score
is). BM25, TF-IDF, an encoder's index (``index.Searcher``) and the hybrid all do, and the rest of
the package reads them only through it: ``minibert search``, ``minibert ask`` and ``open_qa``. In use::

    retriever = retriever_of("bm25")              # a registered name, or an encoder ('minilm',
    retriever_of("hybrid", encoder="course")      #  'course', a folder): BM25 + its cosine
    retriever_of("bm25+rerank", reranker="runs/rerank")   # BM25's top 20, re-ranked
    retriever_of("minilm", backend="hnsw")        # an encoder's index, searched approximately
    hits(retriever, "who built the tower?", k=5)  # [Hit(rank, score, index, passage), ...]
    register_retriever("mine", lambda passages, **settings: Mine(passages))   # one line: a new one

A registered retriever is built by its factory from the passages and the settings (``encoder``,
``weight``, ``pooling``, ``quiet``, ``backend``, ``reranker``, ``depth``; a factory reads those it
needs). The hybrid composes BM25 with any other retriever by name: a registered one, or an
encoder; 'bm25+rerank' and 'hybrid+rerank' compose a first stage with a re-ranker
(``rerank.Reranker``: a wiki-rerank folder, ``rerank.default_reranker()`` when not given, or a
wiki-qnli one, read sentence by sentence).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from minibert.retrieval import corpus, index
from minibert.retrieval.corpus import Passage
from minibert.retrieval.hybrid import HYBRID_WEIGHT, Hybrid
from minibert.retrieval.lexical import BM25, TfIdf
from minibert.retrieval.measures import Hit, Ranking, hits_of
from minibert.retrieval.rerank import (
    RERANK_DEPTH,
    CrossEncoder,
    Reranker,
    SentenceEntailment,
    default_reranker,
    load_scorer,
)
from minibert.utils import check_text, check_top_k

__all__ = [
    "HYBRID",
    "HYBRID_WEIGHT",
    "RETRIEVERS",
    "Hit",
    "Passage",
    "Ranking",
    "Retriever",
    "hits",
    "register_retriever",
    "retriever_of",
]

HYBRID = "hybrid"


class Retriever(Protocol):
    """What every retriever is: the passages it searches, what its score is, and search."""

    passages: Sequence[Passage]
    measure: str

    def search(self, queries: Sequence[str], k: int) -> Ranking:
        """Each query's k best passages, best first: Ranking(ids, scores), each (queries, k)."""
        ...


Factory = Callable[..., Retriever]  # factory(passages, **settings) -> a retriever


def _hybrid(passages: Sequence[Passage], **settings: Any) -> Retriever:
    """BM25 and the retriever named by settings' encoder (a registered name or an encoder)."""
    dense = retriever_of(settings.get("encoder", "minilm"), passages, **_without(settings))
    return Hybrid(BM25.of(passages), dense, settings.get("weight", HYBRID_WEIGHT))


def _without(settings: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in settings.items() if k not in ("encoder", "weight")}


def _reranked(first: str) -> Factory:
    """The factory of the first stage (a registered name) re-ranked by settings' reranker (a
    folder, ``rerank.load_scorer``'s: wiki-rerank or wiki-qnli, default_reranker() when not
    given; or a pair scorer) at settings' depth."""

    def factory(passages: Sequence[Passage], **settings: Any) -> Retriever:
        cross = settings.get("reranker") or default_reranker()
        if not isinstance(cross, CrossEncoder | SentenceEntailment):
            cross = load_scorer(cross)  # before the first stage: a missing one fails fast
        rest = {k: v for k, v in settings.items() if k not in ("reranker", "depth")}
        first_stage = retriever_of(first, passages, **rest)
        return Reranker(first_stage, cross, settings.get("depth", RERANK_DEPTH))

    return factory


RETRIEVERS: dict[str, Factory] = {
    "bm25": lambda passages, **settings: BM25.of(passages),
    "tfidf": lambda passages, **settings: TfIdf.of(passages),
    HYBRID: _hybrid,
    "bm25+rerank": _reranked("bm25"),
    "hybrid+rerank": _reranked(HYBRID),
}


def register_retriever(name: str, factory: Factory) -> Factory:
    """Make name a retriever that ``retriever_of``, ``minibert search`` and ``minibert ask``
    know: ``factory(passages, **settings)`` builds it. A name already taken is refused."""
    if not isinstance(name, str) or not name or name in RETRIEVERS:
        raise ValueError(f"a retriever's name must be a new non-empty str, got {name!r}")
    RETRIEVERS[name] = factory
    return factory


def retriever_of(
    name: str | Path,
    passages: Sequence[Passage] | None = None,
    **settings: Any,
) -> Retriever:
    """The retriever a name means over the passages (wiki_passages() when not given): a
    registered name ('bm25', 'tfidf', 'hybrid', 'bm25+rerank', ...), else an encoder ('minilm',
    'course' or a BERT folder) searched by its index. settings: encoder and weight (the hybrid's
    other side and its weight), pooling (an encoder's, default 'mean'), quiet (say when an index
    is built), backend (an index's: None exact, 'hnsw' or 'ivf' approximate), reranker and depth
    (a re-ranker's folder and the first stage's passages it reads)."""
    passages = corpus.wiki_passages() if passages is None else list(passages)
    if str(name) in RETRIEVERS:
        return RETRIEVERS[str(name)](passages, **settings)
    pooling, quiet = settings.get("pooling", "mean"), settings.get("quiet", True)
    return index.Searcher(name, pooling, passages, quiet, settings.get("backend"))


def hits(retriever: Retriever, query: str, k: int, what: str = "query") -> list[Hit]:
    """A query's k best passages as Hits, best first; a query whose k best scores are all 0 (no
    word of it in the passages, for a lexical retriever) is refused: it ranks nothing. what: the
    query's name in a message ('question' for ask)."""
    check_text(query, f"the {what}")
    check_top_k(k, len(retriever.passages), "paragraphs searched")
    ranking = retriever.search([query], k)
    if not ranking.scores.any():
        raise ValueError(
            f"the {retriever.measure} finds none of the {what}'s words in the passages "
            f"({query!r}); rephrase it, or use a dense or hybrid retriever"
        )
    return hits_of(ranking, retriever.passages)[0]
