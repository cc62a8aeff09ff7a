"""minibert.teaching.exercises.sentence_encoders, lesson 9: the in-batch loss, recall@k, MRR@10
and whitening.

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


def recall_with(shift=0, share=True, percent=False):
    def fn(rankings, relevant, k):
        found = sum(r in ranked[: k + shift] for ranked, r in zip(rankings, relevant))
        value = found / len(relevant) if share else found
        return 100 * value if percent else value

    return fn


@pytest.mark.parametrize(
    "fn, hint",
    [
        (recall_with(), "PASS"),
        (recall_with(shift=1), "ranking[:k + 1]"),
        (recall_with(shift=-1), "not ranking[:k - 1]"),
        (recall_with(share=False), "not a count"),
        (recall_with(percent=True), "not a percentage"),
        (
            lambda rankings, relevant, k: (
                sum(ranked.index(r) < k for ranked, r in zip(rankings, relevant)) / len(relevant)
            ),
            "is not found",
        ),  # fmt: skip
    ],
)
def test_recall_checker(fn, hint):
    result = exercises.check_recall_at_k(fn)
    assert bool(result) == (hint == "PASS")
    assert hint in str(result)


def mrr_with(cutoff=10, over="all", start=1):
    def fn(rankings, relevant):
        scores = []
        for ranked, r in zip(rankings, relevant):
            if r in ranked[:cutoff]:
                scores.append(1 / (ranked.index(r) + start))
            elif over == "all":
                scores.append(0.0)
        return sum(scores) / len(scores)

    return fn


@pytest.mark.parametrize(
    "fn, hint",
    [
        (mrr_with(), "PASS"),
        (mrr_with(cutoff=10**6), "after the 10th scores 0"),
        (mrr_with(over="found"), "counts as 0"),
        (mrr_with(cutoff=11), "rank 11 is past the cutoff"),
        (mrr_with(cutoff=9), "rank 10 is within the cutoff"),
        (mrr_with(start=2), "ranks start at 1"),
        (mrr_with(start=0), "ZeroDivisionError"),
    ],
)
def test_mrr_checker(fn, hint):
    result = exercises.check_mrr(fn)
    assert bool(result) == (hint == "PASS")
    assert hint in str(result)


def whiten_with(centre=True, power=0.5, ddof=0, zca=False):
    def fn(x):
        x = x.double()
        c = x - x.mean(0) if centre else x
        cov = (x - x.mean(0)).T @ (x - x.mean(0)) / (len(x) - ddof)
        u, s, _ = torch.linalg.svd(cov)
        w = u / s**power
        return c @ (w @ u.T if zca else w)

    return fn


@pytest.mark.parametrize(
    "fn, hint",
    [
        (whiten_with(), "PASS"),
        (whiten_with(zca=True), "PASS"),  # a rotation of a whitening is as white
        (lambda x: whiten_with()(x.float()).float(), "PASS"),
        (whiten_with(centre=False), "subtract the mean"),
        (whiten_with(ddof=1), "divides by n"),
        (whiten_with(power=1.0), "not of variance 1"),
        (whiten_with(power=0.0), "not of variance 1"),
        (lambda x: torch.tanh(whiten_with()(x)), "one matrix W"),
        (lambda x: whiten_with()(x)[:, :-1], "expected shape"),
        (lambda x: x - x.mean(0), "should be the identity"),
    ],
)
def test_whitening_checker(fn, hint):
    result = exercises.check_whitening(fn)
    assert bool(result) == (hint == "PASS")
    assert hint in str(result)


def test_the_references_agree_with_the_package():
    """The checkers' own MRR@10 and recall@k equal retrieval.retrieval_scores on the same ranks."""
    from minibert import retrieval
    from minibert.teaching.exercises.sentence_encoders import reference_mrr, reference_recall

    rankings = [[3, 1, 2], [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 4], [9, 8]]
    relevant = [1, 4, 8]
    ranks = torch.tensor([2, 12, 2])
    want = retrieval.retrieval_scores(ranks)
    assert reference_mrr(rankings, relevant) == pytest.approx(want["mrr@10"])
    assert reference_recall(rankings, relevant, 1) == want["recall@1"] == 0
    assert reference_recall(rankings, relevant, 20) == pytest.approx(want["recall@20"])
