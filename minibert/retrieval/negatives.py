"""Hard negatives (DPR, Karpukhin et al., 2020): for each query, the passages a retriever ranks
highest that are not its answer. Beside the in-batch ones, one such negative per question is
DPR's key ingredient: a random passage is easy to tell apart, BM25's best wrong one is not.

    passages, queries = wiki_passages(), wiki_queries("train")
    positives = positives_of(queries, passages)       # each question's paragraph (and its copies)
    mined = mine_hard_negatives(BM25.of(passages), [q.text for q in queries], positives, k=1)
    negatives = [passages[found[0]].text for found in mined]   # one per question
    train_encoder(encoder, pairs, negatives=negatives, steps=100)   # bi_encoder: DPR's loss

Any retriever mines: BM25, or a dense one (``index.Searcher("minilm")``, the course checkpoint's).
The rule is exact and the same on every machine: every passage's score is read (the retriever is
asked for all of them, so a tie at the k-th place is never cut by its own top-k), the positives
are set aside, and the rest are ordered by score, best first, a tie going to the passage that
comes first in the passages (the lower index). A query the retriever scores 0 everywhere (no word
of it in the passages) gets the first passages: nothing is hard for it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from minibert.retrieval.corpus import Passage, Query
from minibert.retrieval.measures import every_score

__all__ = ["mine_hard_negatives", "positives_of"]

BLOCK = 256  # queries scored at a time: a (block, passages) matrix of scores in memory


def positives_of(queries: Sequence[Query], passages: Sequence[Passage]) -> list[list[int]]:
    """Each query's paragraph and every other passage of the same text (a paragraph repeated in
    another article answers as well, so it is no negative), as indices in passages."""
    same: dict[str, list[int]] = {}
    for i, p in enumerate(passages):
        same.setdefault(p.text, []).append(i)
    return [sorted({q.passage, *same.get(passages[q.passage].text, ())}) for q in queries]


def _is_index(p: object, passages: int) -> bool:
    return isinstance(p, int) and not isinstance(p, bool) and 0 <= p < passages


def _check_positives(positives: Sequence, queries: int, passages: int) -> list[list[int]]:
    """positives as a list of index lists, one non-empty list per query, each index in range."""
    if len(positives) != queries:
        raise ValueError(f"give the positives of each query: {queries} queries, {len(positives)}")
    found = [[p] if isinstance(p, int) else list(p) for p in positives]
    for i, own in enumerate(found):
        if not own or not all(_is_index(p, passages) for p in own):
            raise ValueError(
                f"query {i}'s positives must be passage indices in [0, {passages}), at least "
                f"one, got {positives[i]!r}"
            )
    return found


def mine_hard_negatives(
    retriever,
    queries: Sequence[str],
    positives: Sequence[int | Sequence[int]],
    k: int = 1,
    progress: bool = False,
) -> list[list[int]]:
    """Each query's k best-ranked passages by the retriever (indices in retriever.passages) that
    are not among its positives (an index, or a list of them, per query), best first; a tie goes
    to the lower index. A k larger than the passages left once a query's positives are set aside
    is refused (ValueError): there are not that many negatives, and none is made up."""
    n = len(retriever.passages)
    if isinstance(queries, str) or not queries:
        raise ValueError(f"queries must be a non-empty list of texts, got {queries!r:.60}")
    own = _check_positives(positives, len(queries), n)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int (negatives per query), got {k!r}")
    if k > (fewest := n - max(len(set(p)) for p in own)):
        raise ValueError(
            f"k must be at most {fewest:,}: the {n:,} passages less a query's positives, got {k:,}"
        )
    from tqdm.auto import tqdm

    mined = []
    starts = range(0, len(queries), BLOCK)
    for start in tqdm(starts, desc="hard negatives", unit="block", disable=not progress):
        block = list(queries[start : start + BLOCK])
        scores = every_score(retriever.search(block, n), n)  # (block, passages) float64
        for row, positive in zip(scores, own[start : start + BLOCK]):
            row[positive] = -torch.inf  # never a negative
            order = torch.sort(row, descending=True, stable=True).indices  # a tie: lower index
            mined.append(order[:k].tolist())
    return mined
