"""Search as one family: one module a job, every retriever answering one interface.

    corpus       the haystack (every paragraph), the queries (wiki-qa's questions), ICT and
                 SimCSE pairs from the training articles
    measures     what a retriever answers (Ranking, Hit) and how it is judged (recall@k, MRR@10)
    lexical      BM25 and TF-IDF cosine
    encoders     BERT as a sentence encoder: one encode (one padding, one pooling vocabulary:
                 'cls', 'pooler', 'mean'), one fingerprint, one vector cache
    index        the passage index kept beside an encoder's folder; Searcher, the dense retriever;
                 exact search, or approximate (faiss HNSW or IVF) with its recall of the exact
    hybrid       two retrievers composed, each standardised per query
    rerank       the cross-encoder re-ranker: a first stage's top k ordered again by BERT reading
                 (question, passage) as a pair ('bm25+rerank', 'hybrid+rerank'), or lesson 7's
                 wiki-qnli classifier reading each sentence (``minibert ask --rerank``)
    negatives    hard negatives: each query's best-ranked passages that are not its answer
    retriever    the interface (search(queries, k) -> Ranking) and the registry of names
    in_batch     the contrastive loss with in-batch negatives (a loss, one module)
    bi_encoder   one BERT for queries and passages, its pooling and a pluggable loss
    distillation a teacher's vectors as a loss (through a projection that keeps cosines) and a
                 data source (the training articles' texts, each with its teacher vector)

The names below are those ``minibert.retrieval`` had when it was one module, the interface's and
those of its extensions (re-ranking, hard negatives, approximate search); each is imported from
its module the first time it is used (PEP 562).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Passage": "corpus",
    "Query": "corpus",
    "corpus_version": "corpus",
    "wiki_passages": "corpus",
    "wiki_queries": "corpus",
    "CUTOFFS": "measures",
    "Hit": "measures",
    "Ranking": "measures",
    "per_query": "measures",
    "ranks_of": "measures",
    "retrieval_scores": "measures",
    "BM25": "lexical",
    "TfIdf": "lexical",
    "words": "lexical",
    "encode": "encoders",
    "load_encoder": "encoders",
    "APPROXIMATE": "index",
    "ApproximateIndex": "index",
    "Searcher": "index",
    "recall_of_exact": "index",
    "search": "index",
    "Hybrid": "hybrid",
    "hybrid_scores": "hybrid",
    "CrossEncoder": "rerank",
    "Reranker": "rerank",
    "SentenceEntailment": "rerank",
    "load_scorer": "rerank",
    "mine_hard_negatives": "negatives",
    "positives_of": "negatives",
    "Retriever": "retriever",
    "hits": "retriever",
    "register_retriever": "retriever",
    "retriever_of": "retriever",
    "in_batch_loss": "in_batch",
    "BiEncoder": "bi_encoder",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"minibert.retrieval.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'minibert.retrieval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
