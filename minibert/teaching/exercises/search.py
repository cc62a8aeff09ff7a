"""Lesson 9, search: BM25 by hand, recall@k and MRR@10 of ranked lists, whitening fitted on the
passages and applied to the queries; and the hybrid's per-query standardisation (the `retrieval`
assignment's part that no exercise of the lesson gives away)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import torch

from minibert.retrieval.hybrid import hybrid_scores
from minibert.retrieval.lexical import BM25
from minibert.teaching.exercises.common import Result, call_safely, report

# --- BM25 by hand --------------------------------------------------------------------------------

# a small vocabulary with common words ("the", "of": in most documents) and rare ones
_COMMON, _RARE = ("the", "of", "and", "war"), ("troy", "hector", "spear", "heel", "river", "ship")


def bm25_variant(
    query: Sequence[str],
    documents: Sequence[Sequence[str]],
    k1: float,
    b: float,
    **mistake: bool,
) -> torch.Tensor:
    """(documents,) float64 BM25 scores as section 2 writes them (Lucene's form), or with one
    classic mistake when a keyword names it: robertson_idf, plain_idf, occurrences, no_saturation,
    no_length, inverted_length, no_one_minus_b, k1_plus_1, query_words_once."""
    n = len(documents)
    avgdl = sum(len(d) for d in documents) / n
    counts = [Counter(d) for d in documents]
    words = list(dict.fromkeys(query)) if mistake.get("query_words_once") else list(query)
    scores = torch.zeros(n, dtype=torch.float64)
    for w in words:
        if mistake.get("occurrences"):
            n_w = sum(c[w] for c in counts)
        else:
            n_w = sum(w in c for c in counts)
        if n_w == 0:
            continue
        if mistake.get("robertson_idf"):
            idf = math.log((n - n_w + 0.5) / (n_w + 0.5))
        elif mistake.get("plain_idf"):
            idf = math.log(n / n_w)
        else:
            idf = math.log(1 + (n - n_w + 0.5) / (n_w + 0.5))
        for i, c in enumerate(counts):
            f = c[w]
            if not f:
                continue
            ratio = (
                avgdl / len(documents[i])
                if mistake.get("inverted_length")
                else len(documents[i]) / avgdl
            )
            norm = b * ratio if mistake.get("no_one_minus_b") else 1 - b + b * ratio
            if mistake.get("no_length"):
                norm = 1.0
            tf = f if mistake.get("no_saturation") else f / (f + k1 * norm)
            scores[i] += idf * tf * ((k1 + 1) if mistake.get("k1_plus_1") else 1)
    return scores


_BM25_MISTAKES = {
    "robertson_idf": "idf is ln(1 + (N - n(w) + 0.5) / (n(w) + 0.5)), Lucene's: without the 1 +, "
    "a word in more than half the passages gets a negative idf and lowers a passage's score "
    "(Robertson's original idf).",
    "plain_idf": "idf here is BM25's, ln(1 + (N - n(w) + 0.5) / (n(w) + 0.5)), not TF-IDF's "
    "ln(N / n(w)).",
    "occurrences": "n(w) counts the passages that hold w, not how often w occurs in all of them.",
    "no_saturation": "saturate the count: f / (f + k1 (1 - b + b |d| / avgdl)), not f itself; k1 "
    "caps what repeating a word earns.",
    "no_length": "the length normalisation is missing: f / (f + k1 (1 - b + b |d| / avgdl)), not "
    "f / (f + k1); b discounts a long passage.",
    "inverted_length": "a long passage is discounted, not favoured: the ratio is |d| / avgdl, "
    "not avgdl / |d|.",
    "no_one_minus_b": "the normalisation is 1 - b + b |d| / avgdl: with b = 0 it is 1 (no "
    "discount), not 0.",
    "k1_plus_1": "drop the factor (k1 + 1) of Robertson's numerator: it scales every score alike "
    "and changes no ranking, but section 2 writes Lucene's form, without it.",
    "query_words_once": "a word repeated in the query counts each time it appears (as Lucene and "
    "the package count it), not once.",
}


def _bm25_case(g: torch.Generator, case: int) -> tuple[list[str], list[list[str]], float, float]:
    """A query, documents of unequal lengths (common words in most, rare words repeated in a few)
    and (k1, b); every fourth query repeats a word, every third holds a word in no document."""
    documents = []
    for _ in range(int(torch.randint(5, 11, (1,), generator=g))):
        length = int(torch.randint(3, 30, (1,), generator=g))
        rare = _RARE[int(torch.randint(len(_RARE), (1,), generator=g))]
        words = [
            rare if float(torch.rand(1, generator=g)) < 0.3
            else _COMMON[int(torch.randint(len(_COMMON), (1,), generator=g))]
            for _ in range(length)
        ]  # fmt: skip
        documents.append(words)
    picks = torch.randint(
        len(_COMMON + _RARE), (int(torch.randint(2, 5, (1,), generator=g)),), generator=g
    )
    query = [(_COMMON + _RARE)[int(i)] for i in picks]
    if case % 4 == 0:
        query.append(query[-1])
    if case % 3 == 0:
        query.append("zeus")
    k1, b = [(1.2, 0.75), (2.0, 0.3), (0.8, 1.0), (1.5, 0.5)][case % 4]
    return query, documents, k1, b


def _as_scores(got: Any, n: int) -> tuple[torch.Tensor | None, str | None]:
    """A learner's answer as (n,) float64 scores, or a hint saying what came instead."""
    try:
        scores = torch.as_tensor(
            got if not isinstance(got, torch.Tensor) else got.detach(), dtype=torch.float64
        )
    except (TypeError, ValueError, RuntimeError):
        return (
            None,
            f"return one score per document (a list or a tensor), got {type(got).__name__}.",
        )
    if scores.shape != (n,):
        return None, f"return one score per document: {n} of them, got shape {tuple(scores.shape)}."
    return scores, None


def check_bm25(fn: Callable[..., Any], cases: int = 24) -> Result:
    """Check ``fn(query, documents, k1, b) -> scores``: query a list of words, documents lists of
    words, one BM25 score per document (Lucene's form, the package's ``BM25``)."""
    name = "BM25"
    g = torch.Generator().manual_seed(49)
    for case in range(cases):
        query, documents, k1, b = _bm25_case(g, case)
        want = BM25(documents, k1=k1, b=b).scores(query)
        got, hint = call_safely(fn, list(query), [list(d) for d in documents], k1, b)
        if hint is None:
            got, hint = _as_scores(got, len(documents))
        if hint is not None:
            return report(name, hint, case)
        if torch.allclose(got, want, rtol=1e-6, atol=1e-9):
            continue
        for mistake, hint in _BM25_MISTAKES.items():
            variant = bm25_variant(query, documents, k1, b, **{mistake: True})
            if torch.allclose(got, variant, rtol=1e-6, atol=1e-9):
                return report(name, hint, case)
        worst = int((got - want).abs().argmax())
        return report(
            name,
            f"query {query} with k1 = {k1}, b = {b}: document {worst} ({len(documents[worst])} "
            f"words) should score {float(want[worst]):.4f}, got {float(got[worst]):.4f}.",
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


def _vectors(g: torch.Generator, n: int, hidden: int, shift: float = 3.0) -> torch.Tensor:
    """(n, hidden) float64 vectors with a mean far from 0 and correlated directions (a cone)."""
    mix = torch.randn(hidden, hidden, generator=g) + 2 * torch.eye(hidden)
    return (
        torch.randn(n, hidden, generator=g) @ mix + shift * torch.randn(hidden, generator=g)
    ).double()


def _mean_and_covariance(y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    mean = y.mean(0)
    return mean, (y - mean).T @ (y - mean) / len(y)


def _is_white(y: torch.Tensor) -> bool:
    mean, covariance = _mean_and_covariance(y)
    identity = torch.eye(y.shape[1], dtype=torch.float64)
    return mean.abs().max() <= 1e-6 and torch.allclose(covariance, identity, atol=1e-6)


def _whitening_problem(x: torch.Tensor, got: Any) -> str | None:
    """None when got is (x - mean) @ W for one W and white (mean 0, identity covariance over n),
    else a hint naming what is wrong."""
    n, hidden = x.shape
    if not isinstance(got, torch.Tensor):
        return f"return a torch.Tensor, got {type(got).__name__}."
    if tuple(got.shape) != (n, hidden):
        return f"expected shape {(n, hidden)}, got {tuple(got.shape)}."
    y = got.detach().double()
    mean, covariance = _mean_and_covariance(y)
    identity = torch.eye(hidden, dtype=torch.float64)
    centred = x - x.mean(0)  # the result should be (x - mean) @ W for one W
    w = torch.linalg.lstsq(centred, y - mean).solution
    if (centred @ w - (y - mean)).abs().max() > 1e-6:
        return "the whitened vectors should be (x - mean) @ W, one matrix W for every vector."
    if mean.abs().max() > 1e-6:
        return "subtract the mean of the vectors first: the whitened vectors have mean 0."
    if torch.allclose(covariance * n / (n - 1), identity, atol=1e-6):
        return "the covariance here divides by n (the vectors' own), not n - 1."
    if torch.allclose(covariance, identity, atol=1e-6):
        return None
    if torch.allclose(covariance, torch.diag(torch.diag(covariance)), atol=1e-6):
        return (
            "the directions are uncorrelated but not of variance 1: scale each by "
            "1 / sqrt(its eigenvalue), not 1 / eigenvalue or 1."
        )
    worst = float((covariance - identity).abs().max())
    return (
        f"the result's covariance should be the identity (it is off by up to {worst:.3g}): "
        "project onto the eigenvectors of the covariance (U of its SVD) and scale each "
        "direction by 1 / sqrt(its eigenvalue)."
    )


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
        x = _vectors(g, n, hidden)
        got, hint = call_safely(fn, x.clone())
        if hint is None:
            hint = _whitening_problem(x, got)
        if hint is not None:
            return report(name, hint, case)
    return report(name, None, cases)


def _shaped(x: Any, shape: tuple[int, int]) -> bool:
    return isinstance(x, torch.Tensor) and tuple(x.shape) == shape


def _queries_problem(
    q: torch.Tensor, p: torch.Tensor, white_p: torch.Tensor, got: torch.Tensor
) -> str | None:
    """None when got is the queries through the passages' map (the one that whitened p into
    white_p), else a hint naming the mistake."""
    centred = p - p.mean(0)
    w = torch.linalg.lstsq(centred, white_p).solution  # (hidden, hidden): the passages' W
    if torch.allclose(got, (q - p.mean(0)) @ w, atol=1e-6):
        return None
    if _is_white(got):
        return (
            "whiten the queries with the passages' mean and W, not with their own statistics: "
            "fit once, on the passages searched, and apply that map to every query (one query "
            "has no covariance, and two fits put queries and passages in different spaces)."
        )
    if torch.allclose(got, (q - q.mean(0)) @ w, atol=1e-6):
        return "subtract the passages' mean from the queries, not the queries' own mean."
    if torch.allclose(got, q @ w, atol=1e-6):
        return "subtract the passages' mean from the queries too, before W."
    if torch.allclose(got, q, atol=1e-6):
        return "the queries are left as they came: apply the passages' map to them too."
    return "the queries must go through the passages' map: (queries - the passages' mean) @ W."


def check_whitening_for_search(fn: Callable[..., Any], cases: int = 10) -> Result:
    """Check ``fn(queries, passages) -> (whitened queries, whitened passages)``: the whitening
    fitted on the passages (mean 0 and identity covariance for them) and the same map applied to
    the queries (queries drawn from another distribution than the passages, as real ones are)."""
    name = "whitening fitted on the passages"
    g = torch.Generator().manual_seed(59)
    for case in range(cases):
        hidden = int(torch.randint(3, 9, (1,), generator=g))
        n, m = (
            int(torch.randint(60, 120, (1,), generator=g)),
            int(torch.randint(30, 50, (1,), generator=g)),
        )
        p, q = _vectors(g, n, hidden), _vectors(g, m, hidden, shift=6.0)
        got, hint = call_safely(fn, q.clone(), p.clone())
        if hint is None and not (isinstance(got, tuple | list) and len(got) == 2):
            hint = f"return two tensors, (whitened queries, whitened passages), got {type(got).__name__}."
        if hint is None:
            white_q, white_p = got
            if hint := _whitening_problem(p, white_p):
                if _shaped(white_q, (m, hidden)) and _is_white(
                    torch.cat([white_q.detach().double(), white_p.detach().double()])
                ):
                    hint = (
                        "fit the whitening on the passages alone (the collection searched), not "
                        "on queries and passages together."
                    )
                else:
                    hint = "the passages: " + hint
        if hint is None:
            if not _shaped(white_q, (m, hidden)):
                shape = (
                    tuple(white_q.shape)
                    if isinstance(white_q, torch.Tensor)
                    else type(white_q).__name__
                )
                hint = (
                    f"the whitened queries should be a tensor of shape {(m, hidden)}, got {shape}."
                )
            else:
                hint = _queries_problem(q, p, white_p.detach().double(), white_q.detach().double())
        if hint is not None:
            return report(name, hint, case)
    return report(name, None, cases)


# --- the hybrid's per-query standardisation (the retrieval assignment's part) ---------------------


def _standardised(scores: torch.Tensor, dim: int = 1, rule: str = "z") -> torch.Tensor:
    if rule == "global":
        return (scores - scores.mean()) / scores.std()
    mean, spread = scores.mean(dim, keepdim=True), scores.std(dim, keepdim=True)
    if rule == "centred":
        return scores - mean
    if rule == "variance":
        return (scores - mean) / spread**2
    if rule == "min-max":
        low, high = scores.amin(dim, keepdim=True), scores.amax(dim, keepdim=True)
        return (scores - low) / (high - low)
    return (scores - mean) / spread


def _hybrid_variants(
    lexical: torch.Tensor, dense: torch.Tensor, w: float
) -> dict[str, torch.Tensor]:
    """The hybrid with one thing changed, each keyed by the hint it deserves."""
    z = _standardised

    def mix(first: torch.Tensor, second: torch.Tensor, weight: float = w) -> torch.Tensor:
        return (1 - weight) * first + weight * second

    return {
        "standardise each query's scores over the passages (each row, dim=1), not each passage's "
        "over the queries (dim=0).": mix(z(lexical, 0), z(dense, 0)),
        "standardise each query's row on its own (its mean and standard deviation over the "
        "passages), not the whole matrix at once.": mix(
            z(lexical, rule="global"), z(dense, rule="global")
        ),
        "standardise both retrievers' scores before mixing them: BM25's scores run to 20 and "
        "more, cosines to 1, so unscaled the lexical side decides.": mix(lexical, dense),
        "divide each row by its standard deviation too, not only subtract its mean.": mix(
            z(lexical, rule="centred"), z(dense, rule="centred")
        ),
        "divide by the standard deviation, not the variance.": mix(
            z(lexical, rule="variance"), z(dense, rule="variance")
        ),
        "the weight multiplies the dense scores: (1 - weight) z(lexical) + weight z(dense), not "
        "the other way round.": mix(z(lexical), z(dense), 1 - w),
        "standardise (subtract the row's mean, divide by its standard deviation), not min-max "
        "scaling: one outlying score would squeeze every other into a corner.": mix(
            z(lexical, rule="min-max"), z(dense, rule="min-max")
        ),
    }


def _hybrid_case(g: torch.Generator, case: int) -> tuple[torch.Tensor, torch.Tensor, float]:
    """BM25-like lexical scores (mostly 0, some up to 25) and cosines, (queries, passages) each."""
    queries, passages = (
        int(torch.randint(3, 9, (1,), generator=g)),
        int(torch.randint(12, 40, (1,), generator=g)),
    )
    hit = torch.rand(queries, passages, generator=g) < 0.3
    lexical = torch.where(hit, 25 * torch.rand(queries, passages, generator=g), torch.zeros(()))
    lexical += 0.1 * torch.rand(queries, passages, generator=g)  # no row or column constant
    dense = -0.2 + 1.1 * torch.rand(queries, passages, generator=g)
    return lexical.double(), dense.double(), [0.55, 0.3, 0.8, 0.45][case % 4]


def check_hybrid_scores(fn: Callable[..., Any], cases: int = 12) -> Result:
    """Check ``fn(lexical, dense, weight) -> (queries, passages)``: each retriever's scores
    standardised per query over the passages, then (1 - weight) * lexical + weight * dense (the
    package's ``hybrid_scores``; a standard deviation dividing by n or by n - 1 both pass)."""
    name = "hybrid scores"
    g = torch.Generator().manual_seed(69)
    for case in range(cases):
        lexical, dense, w = _hybrid_case(g, case)
        want = hybrid_scores(lexical, dense, w)
        got, hint = call_safely(fn, lexical.clone(), dense.clone(), w)
        if hint is None and not isinstance(got, torch.Tensor):
            hint = f"return a torch.Tensor of scores, got {type(got).__name__}."
        if hint is None and tuple(got.shape) != tuple(want.shape):
            hint = f"return (queries, passages) scores: shape {tuple(want.shape)}, got {tuple(got.shape)}."
        if hint is not None:
            return report(name, hint, case)
        got = got.detach().double()
        n = lexical.shape[1]
        population = want * math.sqrt(n / (n - 1))  # a standard deviation dividing by n
        if torch.allclose(got, want, atol=1e-6) or torch.allclose(got, population, atol=1e-6):
            continue
        for hint, variant in _hybrid_variants(lexical, dense, w).items():
            scale = float((got * variant).sum() / (variant * variant).sum().clamp(min=1e-12))
            if scale > 0 and torch.allclose(got, scale * variant, atol=1e-6):  # either deviation
                return report(name, hint, case)
        worst = float((got - want).abs().max())
        return report(name, f"off from the reference by up to {worst:.3g} (weight {w}).", case)
    return report(name, None, cases)
