"""Lesson 9, BERT as a sentence encoder: the in-batch contrastive loss, recall@k and MRR@10 of
ranked lists, and whitening."""

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


def check_in_batch_loss(fn: Callable[..., Any], cases: int = 20) -> Result:
    """Check ``fn(queries, passages, temperature) -> scalar`` against ``retrieval.in_batch.in_batch_loss``."""
    name = "in-batch contrastive loss"
    g = torch.Generator().manual_seed(9)
    for case in range(cases):
        batch, hidden = (
            int(torch.randint(2, 9, (1,), generator=g)),
            int(torch.randint(3, 17, (1,), generator=g)),
        )
        q = torch.randn(batch, hidden, generator=g) * (1 + 4 * torch.rand(batch, 1, generator=g))
        p = q + 0.8 * torch.randn(batch, hidden, generator=g)  # pairs alike, lengths unequal
        p = p * (1 + 4 * torch.rand(batch, 1, generator=g))
        t = [0.05, 0.1, 1.0, 0.02][case % 4]
        want = in_batch_loss(q, p, t)
        got, hint = call_safely(fn, q.clone(), p.clone(), t)
        if hint is not None:
            return report(name, hint, case)
        if isinstance(got, (int, float)):
            got = torch.tensor(float(got))
        if not isinstance(got, torch.Tensor) or got.numel() != 1:
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
            return report(name, f"return one number (a 0-d tensor), got {shape}.", case)
        got = got.reshape(()).detach().double()
        if abs(float(got) - float(want)) <= 1e-4 * max(1.0, abs(float(want))):
            continue
        for hint, variant in _loss_variants(q, p, t).items():
            if abs(float(got) - float(variant)) <= 1e-4 * max(1.0, abs(float(variant))):
                return report(name, hint, case)
        return report(
            name,
            f"with a batch of {batch} at temperature {t} the loss should be {float(want):.4f}, "
            f"got {float(got):.4f}.",
            case,
        )
    return report(name, None, cases)


# --- recall@k and MRR@10 of ranked lists ---------------------------------------------------------


def reference_recall(rankings: list[list[int]], relevant: list[int], k: int) -> float:
    """The share of queries whose relevant passage is among the first k of their ranking."""
    return sum(r in ranked[:k] for ranked, r in zip(rankings, relevant)) / len(relevant)


def reference_mrr(rankings: list[list[int]], relevant: list[int], cutoff: int = 10) -> float:
    """The mean over queries of 1 / (the relevant passage's 1-based rank), 0 past the cutoff."""
    total = 0.0
    for ranked, r in zip(rankings, relevant):
        if r in ranked[:cutoff]:
            total += 1 / (ranked.index(r) + 1)
    return total / len(relevant)


def _rankings(g: torch.Generator, case: int) -> tuple[list[list[int]], list[int]]:
    """Random ranked lists of passage ids (distinct, some shorter than 20) and each query's relevant
    passage: found at rank 1, within the first 10, between 11 and 20, or in no list at all."""
    queries = int(torch.randint(3, 12, (1,), generator=g))
    rankings, relevant = [], []
    for i in range(queries):
        length = int(torch.randint(5, 31, (1,), generator=g))
        ranked = torch.randperm(60, generator=g)[:length].tolist()
        where = (i + case) % 5  # 0: first, 1: 2-10, 2: 11-20 or later, 3: last, 4: absent
        if where == 0 or length < 3:
            r = ranked[0]
        elif where == 1:
            r = ranked[int(torch.randint(1, min(10, length), (1,), generator=g))]
        elif where == 2:
            r = ranked[min(length - 1, int(torch.randint(10, 20, (1,), generator=g)))]
        elif where == 3:
            r = ranked[-1]
        else:
            r = 60 + i  # an id in no ranking: the retriever did not return it
        rankings.append(ranked)
        relevant.append(r)
    return rankings, relevant


def check_recall_at_k(fn: Callable[..., Any], cases: int = 30) -> Result:
    """Check ``fn(rankings, relevant, k) -> float``: the share of queries found in the first k."""
    name = "recall@k"
    g = torch.Generator().manual_seed(19)
    for case in range(cases):
        rankings, relevant = _rankings(g, case)
        k = [5, 1, 20, 3, 10][case % 5]
        for at in (k - 1, k):  # the edges: a passage at rank k (found), one at rank k + 1 (not)
            ranked = list(range(100, 100 + k + 5))
            rankings.append(ranked)
            relevant.append(ranked[at])
        want = reference_recall(rankings, relevant, k)
        got, hint = call_safely(fn, [list(r) for r in rankings], list(relevant), k)
        if hint is not None:
            if "ValueError" in hint and "is not in list" in hint:
                hint += " (a query's passage may be missing from its ranking: it is not found)"
            return report(name, hint, case)
        try:
            got = float(got)
        except (TypeError, ValueError):
            return report(name, f"return a number (a share), got {type(got).__name__}.", case)
        if abs(got - want) < 1e-9:
            continue
        found = sum(r in ranked[:k] for ranked, r in zip(rankings, relevant))
        if abs(got - reference_recall(rankings, relevant, k + 1)) < 1e-9:
            hint = f"the first k are ranking[:k]; ranking[:k + 1] holds {k + 1} passages."
        elif abs(got - reference_recall(rankings, relevant, k - 1)) < 1e-9 and k > 1:
            hint = f"the first k are ranking[:k] (k = {k} passages), not ranking[:k - 1]."
        elif abs(got - found) < 1e-9:
            hint = (
                "return the share of queries found (divide by the number of queries), not a count."
            )
        elif abs(got - 100 * want) < 1e-6:
            hint = "return a share in [0, 1], not a percentage."
        else:
            hint = f"with k = {k}, {found} of {len(relevant)} queries are found: {want:.4f}; got {got:.4f}."
        return report(name, hint, case)
    return report(name, None, cases)


def check_mrr(fn: Callable[..., Any], cases: int = 30) -> Result:
    """Check ``fn(rankings, relevant) -> float``: MS MARCO's MRR@10 of ranked lists."""
    name = "MRR@10"
    g = torch.Generator().manual_seed(29)
    for case in range(cases):
        rankings, relevant = _rankings(g, case)
        want = reference_mrr(rankings, relevant)
        got, hint = call_safely(fn, [list(r) for r in rankings], list(relevant))
        if hint is not None:
            if "ValueError" in hint and "is not in list" in hint:
                hint += " (a query's passage may be missing from its ranking: it scores 0)"
            if "ZeroDivision" in hint:
                hint += " (ranks start at 1: the first passage has reciprocal rank 1 / 1)"
            return report(name, hint, case)
        try:
            got = float(got)
        except (TypeError, ValueError):
            return report(name, f"return a number (a mean), got {type(got).__name__}.", case)
        if abs(got - want) < 1e-9:
            continue
        uncut = reference_mrr(rankings, relevant, cutoff=10**9)
        found = [(ranked, r) for ranked, r in zip(rankings, relevant) if r in ranked[:10]]
        if abs(got - uncut) < 1e-9:
            hint = "a passage ranked after the 10th scores 0 in MRR@10, not 1 / rank."
        elif found and abs(got - want * len(relevant) / len(found)) < 1e-9:
            hint = "average over every query: one whose passage is not in the first 10 counts as 0."
        elif abs(got - reference_mrr(rankings, relevant, cutoff=11)) < 1e-9:
            hint = "the first 10 are ranking[:10]: rank 11 is past the cutoff."
        elif abs(got - reference_mrr(rankings, relevant, cutoff=9)) < 1e-9:
            hint = "rank 10 is within the cutoff: the first 10 are ranking[:10]."
        elif (
            abs(got - sum(1 / (ranked.index(r) + 2) for ranked, r in found) / len(relevant)) < 1e-9
        ):
            hint = "ranks start at 1: the first passage scores 1 / 1 (its index is 0)."
        else:
            hint = f"MRR@10 should be {want:.4f}, got {got:.4f}."
        return report(name, hint, case)
    return report(name, None, cases)


# --- whitening -----------------------------------------------------------------------------------


def check_whitening(fn: Callable[..., Any], cases: int = 10) -> Result:
    """Check ``fn(vectors) -> whitened (n, hidden)``: an affine map of the vectors whose result
    has mean 0 and identity covariance (any rotation of it is as white: PCA's and ZCA's pass)."""
    name = "whitening"
    g = torch.Generator().manual_seed(39)
    for case in range(cases):
        n, hidden = (
            int(torch.randint(40, 120, (1,), generator=g)),
            int(torch.randint(3, 9, (1,), generator=g)),
        )
        mix = torch.randn(hidden, hidden, generator=g) + 2 * torch.eye(hidden)
        x = (
            torch.randn(n, hidden, generator=g) @ mix + 3 * torch.randn(hidden, generator=g)
        ).double()
        got, hint = call_safely(fn, x.clone())
        if hint is not None:
            return report(name, hint, case)
        if not isinstance(got, torch.Tensor):
            return report(name, f"return a torch.Tensor, got {type(got).__name__}.", case)
        if tuple(got.shape) != (n, hidden):
            return report(name, f"expected shape {(n, hidden)}, got {tuple(got.shape)}.", case)
        y = got.detach().double()
        mean = y.mean(0)
        covariance = (y - mean).T @ (y - mean) / n
        identity = torch.eye(hidden, dtype=torch.float64)
        centred = x - x.mean(0)  # the result should be (x - mean) @ W for one W
        w = torch.linalg.lstsq(centred, y - mean).solution
        if (centred @ w - (y - mean)).abs().max() > 1e-6:
            hint = "the whitened vectors should be (x - mean) @ W, one matrix W for every vector."
        elif mean.abs().max() > 1e-6:
            hint = "subtract the mean of the vectors first: the whitened vectors have mean 0."
        elif torch.allclose(covariance * n / (n - 1), identity, atol=1e-6):
            hint = "the covariance here divides by n (the vectors' own), not n - 1."
        elif torch.allclose(covariance, identity, atol=1e-6):
            continue
        elif torch.allclose(covariance, torch.diag(torch.diag(covariance)), atol=1e-6):
            hint = (
                "the directions are uncorrelated but not of variance 1: scale each by "
                "1 / sqrt(its eigenvalue), not 1 / eigenvalue or 1."
            )
        else:
            worst = float((covariance - identity).abs().max())
            hint = (
                f"the result's covariance should be the identity (it is off by up to {worst:.3g}): "
                "project onto the eigenvectors of the covariance (U of its SVD) and scale each "
                "direction by 1 / sqrt(its eigenvalue)."
            )
        return report(name, hint, case)
    return report(name, None, cases)
