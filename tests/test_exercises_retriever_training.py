"""minibert.teaching.exercises.retriever_training, lesson 10: the in-batch loss, the loss with one
hard negative per query, and mining hard negatives.

Each checker passes right answers (more than one where more than one is right) and catches the
typical mistakes, naming them in its hint.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from minibert.teaching import exercises


def loss_with(normalise=True, divide=True, rows="queries", labels="diagonal", reduce="mean"):
    def fn(q, p, t):
        if normalise:
            q, p = F.normalize(q, dim=-1), F.normalize(p, dim=-1)
        logits = q @ p.T if rows == "queries" else p @ q.T
        logits = logits / t if divide else logits * t
        target = (
            torch.arange(len(q)) if labels == "diagonal" else torch.zeros(len(q), dtype=torch.long)
        )
        return F.cross_entropy(logits, target, reduction=reduce)

    return fn


def by_hand_loss(q, p, t):  # a right answer written without cross_entropy
    q = q / q.norm(dim=-1, keepdim=True)
    p = p / p.norm(dim=-1, keepdim=True)
    logits = q @ p.T / t
    return (torch.logsumexp(logits, dim=1) - logits.diagonal()).mean()


@pytest.mark.parametrize(
    "fn, hint",
    [
        (loss_with(), "PASS"),
        (by_hand_loss, "PASS"),
        (lambda q, p, t: float(loss_with()(q, p, t)), "PASS"),
        (loss_with(normalise=False), "normalise both sides"),
        (loss_with(divide=False), "divide by the temperature, do not multiply"),
        (lambda q, p, t: loss_with()(q, p, 1.0), "divide the cosines by the temperature"),
        (loss_with(rows="passages"), "each query's row"),
        (loss_with(labels="zero"), "labels 0, 1, ..., batch - 1"),
        (loss_with(reduce="sum"), "the mean over the batch"),
        (loss_with(reduce="none"), "return one number"),
        (
            lambda q, p, t: (
                -F.logsigmoid((F.normalize(q, dim=-1) * F.normalize(p, dim=-1)).sum(-1) / t).mean()
            ),
            "not a sigmoid",
        ),  # fmt: skip
        (lambda q, p, t: loss_with()(q, p, t) + 0.5, "should be"),
    ],
)
def test_in_batch_loss_checker(fn, hint, capsys):
    result = exercises.check_in_batch_loss(fn)
    assert bool(result) == (hint == "PASS")
    assert hint in str(result)
    assert str(result) in capsys.readouterr().out


# --- the loss with one hard negative per query ---------------------------------------------------


def hard_loss_with(columns="all", normalise="all", label_shift=False, divide=True, reduce="mean"):
    def fn(q, p, n, t):
        if normalise in ("all", "not negatives"):
            q, p = F.normalize(q, dim=-1), F.normalize(p, dim=-1)
        if normalise == "all":
            n = F.normalize(n, dim=-1)
        if columns == "all":
            logits = q @ torch.cat([p, n]).T
        elif columns == "own negative":
            logits = torch.cat([q @ p.T, (q * n).sum(-1, keepdim=True)], dim=1)
        else:  # no negatives
            logits = q @ p.T
        logits = logits / t if divide else logits * t
        labels = torch.arange(len(q)) + (len(q) if label_shift else 0)
        return F.cross_entropy(logits, labels, reduction=reduce)

    return fn


def by_hand_hard_loss(q, p, n, t):  # right, written as a softmax by hand over a loop
    total = 0.0
    candidates = torch.cat([p, n])
    candidates = candidates / candidates.norm(dim=-1, keepdim=True)
    for i, query in enumerate(q / q.norm(dim=-1, keepdim=True)):
        row = candidates @ query / t
        total = total - (row[i] - torch.logsumexp(row, dim=0))
    return total / len(q)


@pytest.mark.parametrize(
    "fn, hint",
    [
        (hard_loss_with(), "PASS"),
        (by_hand_hard_loss, "PASS"),
        (hard_loss_with(columns="own negative"), "not only its own negative"),
        (hard_loss_with(columns="none"), "the hard negatives are missing"),
        (hard_loss_with(normalise="not negatives"), "normalise the hard negatives too"),
        (hard_loss_with(normalise="none"), "not dot products"),
        (hard_loss_with(label_shift=True), "not batch + i"),
        (hard_loss_with(divide=False), "do not multiply"),
        (hard_loss_with(reduce="sum"), "not the sum"),
        (hard_loss_with(reduce="none"), "return one number"),
    ],
)
def test_loss_with_hard_negatives_checker(fn, hint):
    result = exercises.check_loss_with_hard_negatives(fn)
    assert bool(result) == (hint == "PASS")
    assert hint in str(result)


# --- mining hard negatives -------------------------------------------------------------------------


def mine_with(drop="index", ties="lower", order="best", after=False):
    def fn(scores, positives, k):
        mined = []
        for row, positive in zip(scores.tolist(), positives):
            sign = 1 if ties == "lower" else -1
            ranked = sorted(range(len(row)), key=lambda i, row=row: (-row[i], sign * i))
            if order == "worst":
                ranked = sorted(range(len(row)), key=lambda i: (row[i], i))
            if after:
                ranked = ranked[:k]
            if drop == "index":
                ranked = [i for i in ranked if i != positive]
            elif drop == "score":
                ranked = [i for i in ranked if row[i] != row[positive]]
            mined.append(ranked[:k])
        return mined

    return fn


@pytest.mark.parametrize(
    "fn, hint",
    [
        (mine_with(), "PASS"),
        (lambda s, p, k: torch.tensor(mine_with()(s, p, k)), "PASS"),
        (mine_with(drop="none"), "set each query's positive aside"),
        (mine_with(drop="score"), "by its index, not by its score"),
        (mine_with(after=True), "leaves k - 1"),
        (mine_with(ties="higher"), "a tie goes to the lower index"),
        (mine_with(order="worst"), "not the lowest"),
        (lambda s, p, k: [row[: k + 1] for row in mine_with()(s, p, k + 1)], "negatives for each"),
        (lambda s, p, k: mine_with()(s, p, k)[:-1], "one list per query"),
        (
            lambda s, p, k: [
                [s[i, j].item() + 0.5 for j in row] for i, row in enumerate(mine_with()(s, p, k))
            ],
            "should be",
        ),  # fmt: skip
    ],
)
def test_hard_negatives_checker(fn, hint):
    result = exercises.check_hard_negatives(fn)
    assert bool(result) == (hint == "PASS")
    assert hint in str(result)


def test_the_references_agree_with_the_package():
    """The checkers' own references equal the package's: the loss with hard negatives is
    in_batch_loss with negatives=, and the mining rule is negatives.mine_hard_negatives' (here
    over a retriever that answers a fixed score matrix)."""
    from minibert.retrieval.in_batch import in_batch_loss
    from minibert.retrieval.measures import top_of
    from minibert.retrieval.negatives import mine_hard_negatives
    from minibert.teaching.exercises.retriever_training import (
        _mining_case,
        reference_hard_negatives,
        reference_loss_with_hard_negatives,
    )

    g = torch.Generator().manual_seed(0)
    q, p, n = (torch.randn(6, 10, generator=g) for _ in range(3))
    for t in (0.05, 1.0):
        assert torch.allclose(
            reference_loss_with_hard_negatives(q, p, n, t), in_batch_loss(q, p, t, negatives=n)
        )

    class Fixed:  # a retriever whose scores are a given (queries, passages) matrix
        def __init__(self, scores):
            self.scores, self.passages = scores, list(range(scores.shape[1]))

        def search(self, queries, k):
            return top_of(self.scores[[int(text) for text in queries]], k)

    for case in range(8):
        scores, positives, k = _mining_case(g, case)
        queries = [str(i) for i in range(len(scores))]
        assert reference_hard_negatives(scores, positives, k) == mine_hard_negatives(
            Fixed(scores), queries, positives, k
        )
