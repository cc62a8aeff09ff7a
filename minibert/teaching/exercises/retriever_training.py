"""Lesson 10, training a retriever: the in-batch softmax loss (sentence-transformers'
MultipleNegativesRankingLoss), the same loss with one hard negative per query, and mining hard
negatives (the positive set aside, ties to the lower index)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from minibert.retrieval.in_batch import in_batch_loss
from minibert.teaching.exercises.common import Result, call_safely, report

# --- the in-batch contrastive loss -------------------------------------------------------------


def _loss_variants(q: torch.Tensor, p: torch.Tensor, t: float) -> dict[str, torch.Tensor]:
    """The reference with one thing changed, each keyed by the hint it deserves."""
    labels = torch.arange(len(q))
    qn, pn = F.normalize(q, dim=-1), F.normalize(p, dim=-1)
    return {
        "normalise both sides to unit length first: the loss compares cosine similarities, not "
        "dot products.": F.cross_entropy(q @ p.T / t, labels),
        "divide the cosines by the temperature (they lie in [-1, 1]: without it the softmax "
        "is almost flat).": F.cross_entropy(qn @ pn.T, labels),
        "divide by the temperature, do not multiply.": F.cross_entropy(qn @ pn.T * t, labels),
        "each query's row scores it against every passage: logits = q @ p.T, not p @ q.T "
        "(the rows are the queries).": F.cross_entropy(pn @ qn.T / t, labels),
        "the right passage of query i is passage i (labels 0, 1, ..., batch - 1), not 0 for "
        "every query.": F.cross_entropy(qn @ pn.T / t, torch.zeros_like(labels)),
        "take the mean over the batch, not the sum.": F.cross_entropy(
            qn @ pn.T / t, labels, reduction="sum"
        ),
        "the loss is a cross-entropy over the whole row (a softmax over every passage), not a "
        "sigmoid of the right pair alone.": -F.logsigmoid((qn * pn).sum(-1) / t).mean(),
    }


def _as_number(got: Any) -> tuple[torch.Tensor | None, str | None]:
    """A learner's loss as a 0-d float64 tensor, or a hint saying what came instead."""
    if isinstance(got, int | float):
        got = torch.tensor(float(got))
    if not isinstance(got, torch.Tensor) or got.numel() != 1:
        shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
        return None, f"return one number (a 0-d tensor), got {shape}."
    return got.reshape(()).detach().double(), None


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return abs(float(a) - float(b)) <= 1e-4 * max(1.0, abs(float(b)))


def _pairs(g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(batch, hidden) queries and passages, pairs alike, lengths unequal."""
    batch, hidden = (
        int(torch.randint(2, 9, (1,), generator=g)),
        int(torch.randint(3, 17, (1,), generator=g)),
    )
    q = torch.randn(batch, hidden, generator=g) * (1 + 4 * torch.rand(batch, 1, generator=g))
    p = q + 0.8 * torch.randn(batch, hidden, generator=g)
    return q, p * (1 + 4 * torch.rand(batch, 1, generator=g))


def check_in_batch_loss(fn: Callable[..., Any], cases: int = 20) -> Result:
    """Check ``fn(queries, passages, temperature) -> scalar`` against ``retrieval.in_batch.in_batch_loss``."""
    name = "in-batch contrastive loss"
    g = torch.Generator().manual_seed(9)
    for case in range(cases):
        q, p = _pairs(g)
        t = [0.05, 0.1, 1.0, 0.02][case % 4]
        want = in_batch_loss(q, p, t)
        got, hint = call_safely(fn, q.clone(), p.clone(), t)
        if hint is None:
            got, hint = _as_number(got)
        if hint is not None:
            return report(name, hint, case)
        if _close(got, want):
            continue
        for hint, variant in _loss_variants(q, p, t).items():
            if _close(got, variant):
                return report(name, hint, case)
        return report(
            name,
            f"with a batch of {len(q)} at temperature {t} the loss should be {float(want):.4f}, "
            f"got {float(got):.4f}.",
            case,
        )
    return report(name, None, cases)


# --- the loss with one hard negative per query ---------------------------------------------------


def reference_loss_with_hard_negatives(
    queries: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor, temperature: float
) -> torch.Tensor:
    """MultipleNegativesRankingLoss on (query, positive, negative) triplets, each (batch, hidden):
    every query against every positive and every hard negative of the batch, (batch, 2 batch)
    cosines / temperature, query i's positive the label; the mean cross-entropy."""
    q = F.normalize(queries, dim=-1)
    candidates = F.normalize(torch.cat([positives, negatives]), dim=-1)  # (2 batch, hidden)
    return F.cross_entropy(q @ candidates.T / temperature, torch.arange(len(q)))


def _hard_variants(
    q: torch.Tensor, p: torch.Tensor, n: torch.Tensor, t: float
) -> dict[str, torch.Tensor]:
    """The loss with hard negatives, one thing changed, each keyed by the hint it deserves."""
    labels = torch.arange(len(q))
    qn, pn, nn_ = (F.normalize(x, dim=-1) for x in (q, p, n))
    own = (qn * nn_).sum(-1, keepdim=True) / t  # (batch, 1): each query's own negative only
    return {
        "each hard negative is a negative for every query of the batch: score each query against "
        "all batch positives and all batch negatives (2 x batch columns), not only its own "
        "negative.": F.cross_entropy(torch.cat([qn @ pn.T / t, own], dim=1), labels),
        "the hard negatives are missing: the row holds the batch's positives and its hard "
        "negatives.": F.cross_entropy(qn @ pn.T / t, labels),
        "normalise the hard negatives too: every score is a cosine.": F.cross_entropy(
            torch.cat([qn @ pn.T, qn @ n.T], dim=1) / t, labels
        ),
        "normalise every side to unit length: the loss compares cosine similarities, not dot "
        "products.": F.cross_entropy(q @ torch.cat([p, n]).T / t, labels),
        "query i's label is i, its own positive's column (the positives come first), not "
        "batch + i.": F.cross_entropy(qn @ torch.cat([pn, nn_]).T / t, labels + len(q)),
        "divide by the temperature, do not multiply.": F.cross_entropy(
            qn @ torch.cat([pn, nn_]).T * t, labels
        ),
        "take the mean over the batch, not the sum.": F.cross_entropy(
            qn @ torch.cat([pn, nn_]).T / t, labels, reduction="sum"
        ),
    }


def check_loss_with_hard_negatives(fn: Callable[..., Any], cases: int = 20) -> Result:
    """Check ``fn(queries, positives, negatives, temperature) -> scalar``: the in-batch loss with
    one hard negative per query, each a negative for the whole batch (DPR's batches scored as
    sentence-transformers' MultipleNegativesRankingLoss scores (anchor, positive, negative))."""
    name = "in-batch loss with hard negatives"
    g = torch.Generator().manual_seed(79)
    for case in range(cases):
        q, p = _pairs(g)
        n = 0.7 * p + 0.7 * torch.randn(p.shape, generator=g)  # near the positives: hard
        n = n * (1 + 3 * torch.rand(len(n), 1, generator=g))
        t = [0.05, 0.1, 1.0, 0.02][case % 4]
        want = reference_loss_with_hard_negatives(q, p, n, t)
        got, hint = call_safely(fn, q.clone(), p.clone(), n.clone(), t)
        if hint is None:
            got, hint = _as_number(got)
        if hint is not None:
            return report(name, hint, case)
        if _close(got, want):
            continue
        for hint, variant in _hard_variants(q, p, n, t).items():
            if _close(got, variant):
                return report(name, hint, case)
        return report(
            name,
            f"with a batch of {len(q)} triplets at temperature {t} the loss should be "
            f"{float(want):.4f}, got {float(got):.4f}.",
            case,
        )
    return report(name, None, cases)


# --- mining hard negatives -----------------------------------------------------------------------


def reference_hard_negatives(scores: torch.Tensor, positives: list[int], k: int) -> list[list[int]]:
    """Each query's k best-scored passages that are not its positive, best first, a tie going to
    the lower index (``retrieval.negatives.mine_hard_negatives``' rule, on a score matrix)."""
    mined = []
    for row, positive in zip(scores.double(), positives):
        row = row.clone()
        row[positive] = -torch.inf  # set aside by its index: a passage tied with it stays
        mined.append(torch.sort(row, descending=True, stable=True).indices[:k].tolist())
    return mined


def _mining_variants(scores: torch.Tensor, positives: list[int], k: int) -> dict[str, list]:
    """Mined negatives with one thing changed, each keyed by the hint it deserves."""

    def mine(order: Callable[[torch.Tensor], torch.Tensor], drop: str = "index", top: int = k):
        found = []
        for row, positive in zip(scores.double(), positives):
            ranked = order(row).tolist()
            if drop == "index":
                ranked = [i for i in ranked if i != positive]
            elif drop == "score":
                ranked = [i for i in ranked if row[i] != row[positive]]
            elif drop == "after":  # the top k first, then the positive removed from them
                ranked = [i for i in ranked[:top] if i != positive]
            found.append(ranked[:top])
        return found

    best_first = lambda row: torch.sort(row, descending=True, stable=True).indices  # noqa: E731
    return {
        "set each query's positive aside: its own passage is no negative (and it is often the "
        "best scored).": mine(best_first, drop="none"),
        "set the positive aside by its index, not by its score: a passage tied with it is still "
        "a negative, the hardest one.": mine(best_first, drop="score"),
        "take k negatives after setting the positive aside: the best k and then the positive "
        "removed leaves k - 1 when it was among them.": mine(best_first, drop="after"),
        "a tie goes to the lower index (the passage that comes first): sort stably, best first.": mine(
            lambda row: len(row) - 1 - torch.sort(row.flip(0), descending=True, stable=True).indices
        ),
        "hard negatives are the best-scored wrong passages: sort the scores from the highest, "
        "not the lowest.": mine(lambda row: torch.sort(row, stable=True).indices),
    }


def _mining_case(g: torch.Generator, case: int) -> tuple[torch.Tensor, list[int], int]:
    """Scores with many ties (whole numbers 0 to 5), positives at every place, k from 1 to 4;
    every other case puts another passage level with each query's positive."""
    queries, passages = (
        int(torch.randint(3, 8, (1,), generator=g)),
        int(torch.randint(8, 20, (1,), generator=g)),
    )
    scores = torch.randint(0, 6, (queries, passages), generator=g).double()
    positives = torch.randint(passages, (queries,), generator=g).tolist()
    for i, positive in enumerate(positives):
        scores[i, positive] = 5.0 if i % 2 == 0 else scores[i, positive]  # often the best
        if case % 2 == 0:  # a passage tied with the positive
            other = (positive + 1 + i) % passages
            scores[i, other] = scores[i, positive]
    return scores, positives, 1 + case % 4


def check_hard_negatives(fn: Callable[..., Any], cases: int = 20) -> Result:
    """Check ``fn(scores, positives, k) -> list of lists``: scores (queries, passages), each
    query's positive passage index, k negatives per query: the k best-scored passages that are
    not the positive, best first, a tie going to the lower index."""
    name = "hard negatives"
    g = torch.Generator().manual_seed(89)
    for case in range(cases):
        scores, positives, k = _mining_case(g, case)
        want = reference_hard_negatives(scores, positives, k)
        got, hint = call_safely(fn, scores.clone(), list(positives), k)
        if hint is None:
            try:
                got = [[int(i) for i in row] for row in got]
            except (TypeError, ValueError):
                hint = (
                    "return one list of passage indices per query (whole numbers), got "
                    f"{type(got).__name__}."
                )
        if hint is None and len(got) != len(want):
            hint = f"return one list per query: {len(want)} lists, got {len(got)}."
        if hint is not None:
            return report(name, hint, case)
        if got == want:
            continue
        if short := [i for i, row in enumerate(got) if len(row) != k]:
            i = short[0]
            hint = (
                "take k negatives after setting the positive aside: the best k and then the "
                "positive removed leaves k - 1 when it was among them."
                if len(got[i]) == k - 1
                else f"return k = {k} negatives for each query; query {i} has {len(got[i])}."
            )
            return report(name, hint, case)
        for hint, variant in _mining_variants(scores, positives, k).items():
            if got == variant:
                return report(name, hint, case)
        i = next(i for i, (a, b) in enumerate(zip(got, want)) if a != b)
        hint = (
            f"query {i} (positive {positives[i]}, k = {k}, scores {scores[i].int().tolist()}): "
            f"the negatives should be {want[i]}, got {got[i]}"
        )
        if (
            all(0 <= j < scores.shape[1] for j in got[i])
            and scores[i, got[i]].tolist() == scores[i, want[i]].tolist()
        ):
            hint += (
                ": the right scores, another order among ties; a tie goes to the lower index "
                "(torch.topk promises no order among ties: sort stably)"
            )
        return report(name, hint + ".", case)
    return report(name, None, cases)
