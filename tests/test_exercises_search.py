"""minibert.teaching.exercises.search, lesson 9: BM25 by hand, recall@k, MRR@10, whitening (and
whitening fitted on the passages, applied to the queries) and the hybrid's standardisation.

Each checker passes right answers (more than one where more than one is right) and catches the
typical mistakes, naming them in its hint.
"""

from __future__ import annotations

import math

import pytest
import torch

from minibert.teaching import exercises


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
    from minibert.teaching.exercises.search import reference_mrr, reference_recall

    rankings = [[3, 1, 2], [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 4], [9, 8]]
    relevant = [1, 4, 8]
    ranks = torch.tensor([2, 12, 2])
    want = retrieval.retrieval_scores(ranks)
    assert reference_mrr(rankings, relevant) == pytest.approx(want["mrr@10"])
    assert reference_recall(rankings, relevant, 1) == want["recall@1"] == 0
    assert reference_recall(rankings, relevant, 20) == pytest.approx(want["recall@20"])


# --- BM25 by hand: a learner's function written out, with each classic mistake planted ----------


def bm25_with(idf="lucene", df="passages", saturate=True, length="ratio", one_minus_b=True,
              numerator=False, repeats=True):  # fmt: skip
    """A learner's BM25, written with dictionaries as a student would, one mistake planted."""

    def fn(query, documents, k1, b):
        n, avgdl = len(documents), sum(len(d) for d in documents) / len(documents)
        scores = []
        for d in documents:
            total = 0.0
            for w in query if repeats else set(query):
                if df == "passages":
                    n_w = sum(1 for other in documents if w in other)
                else:
                    n_w = sum(other.count(w) for other in documents)
                f = d.count(w)
                if n_w == 0 or f == 0:
                    continue
                if idf == "lucene":
                    weight = math.log(1 + (n - n_w + 0.5) / (n_w + 0.5))
                elif idf == "robertson":
                    weight = math.log((n - n_w + 0.5) / (n_w + 0.5))
                else:
                    weight = math.log(n / n_w)
                ratio = {"ratio": len(d) / avgdl, "inverted": avgdl / len(d), "none": 1.0}[length]
                norm = (1 - b + b * ratio) if one_minus_b else b * ratio
                if length == "none":
                    norm = 1.0
                tf = f / (f + k1 * norm) if saturate else f
                total += weight * tf * ((k1 + 1) if numerator else 1)
            scores.append(total)
        return scores

    return fn


@pytest.mark.parametrize(
    "fn, hint",
    [
        (bm25_with(), "PASS"),
        (lambda q, d, k1, b: torch.tensor(bm25_with()(q, d, k1, b)), "PASS"),
        (bm25_with(idf="robertson"), "Robertson's original idf"),
        (bm25_with(idf="plain"), "not TF-IDF's"),
        (bm25_with(df="occurrences"), "n(w) counts the passages"),
        (bm25_with(saturate=False), "saturate the count"),
        (bm25_with(length="none"), "the length normalisation is missing"),
        (bm25_with(length="inverted"), "not avgdl / |d|"),
        (bm25_with(one_minus_b=False), "1 - b + b |d| / avgdl"),
        (bm25_with(numerator=True), "(k1 + 1)"),
        (bm25_with(repeats=False), "counts each time"),
        (lambda q, d, k1, b: bm25_with()(q, d, k1, b)[:-1], "one score per document"),
        (lambda q, d, k1, b: [x + 0.1 for x in bm25_with()(q, d, k1, b)], "should score"),
    ],
)
def test_bm25_checker(fn, hint):
    result = exercises.check_bm25(fn)
    assert bool(result) == (hint == "PASS")
    assert hint in str(result)


def test_the_bm25_variants_differ_from_the_reference_on_the_checkers_cases():
    """Every mistake the checker names changes some case's scores (else it could never be told)."""
    from minibert.retrieval.lexical import BM25
    from minibert.teaching.exercises.search import _BM25_MISTAKES, _bm25_case, bm25_variant

    g = torch.Generator().manual_seed(49)
    cases = [_bm25_case(g, case) for case in range(24)]
    for query, documents, k1, b in cases:
        assert torch.allclose(
            bm25_variant(query, documents, k1, b), BM25(documents, k1, b).scores(query)
        )
    for mistake in _BM25_MISTAKES:
        assert any(
            not torch.allclose(
                bm25_variant(q, d, k1, b, **{mistake: True}), BM25(d, k1, b).scores(q)
            )
            for q, d, k1, b in cases
        ), mistake


# --- whitening fitted on the passages, applied to the queries -----------------------------------


def fit(x):
    mean = x.mean(0)
    u, s, _ = torch.linalg.svd((x - mean).T @ (x - mean) / len(x))
    return mean, u / s.sqrt()


def whiten_search_with(rule="passages"):
    def fn(queries, passages):
        mean, w = fit(torch.cat([queries, passages]) if rule == "both" else passages)
        if rule == "own":
            q_mean, q_w = fit(queries)
            return (queries - q_mean) @ q_w, (passages - mean) @ w
        if rule == "own mean":
            return (queries - queries.mean(0)) @ w, (passages - mean) @ w
        if rule == "not centred":
            return queries @ w, (passages - mean) @ w
        if rule == "queries untouched":
            return queries, (passages - mean) @ w
        return (queries - mean) @ w, (passages - mean) @ w

    return fn


@pytest.mark.parametrize(
    "fn, hint",
    [
        (whiten_search_with(), "PASS"),
        (lambda q, p: [x.float() for x in whiten_search_with()(q, p)], "PASS"),
        (whiten_search_with("own"), "not with their own statistics"),
        (whiten_search_with("both"), "on the passages alone"),
        (whiten_search_with("own mean"), "not the queries' own mean"),
        (whiten_search_with("not centred"), "from the queries too"),
        (whiten_search_with("queries untouched"), "left as they came"),
        (lambda q, p: whiten_search_with()(q, p)[1], "return two tensors"),
        (lambda q, p: (whiten_search_with()(q, p)[0], p - p.mean(0)), "the passages:"),
    ],
)
def test_whitening_for_search_checker(fn, hint):
    result = exercises.check_whitening_for_search(fn)
    assert bool(result) == (hint == "PASS")
    assert hint in str(result)


# --- the hybrid's per-query standardisation --------------------------------------------------------


def hybrid_with(dim=1, spread="std", unbiased=True, swap=False, scope="row"):
    def z(x):
        if scope == "matrix":
            return (x - x.mean()) / x.std()
        if spread == "none":
            return x
        if spread == "min-max":
            low, high = x.amin(dim, keepdim=True), x.amax(dim, keepdim=True)
            return (x - low) / (high - low)
        centred = x - x.mean(dim, keepdim=True)
        deviation = x.std(dim, keepdim=True, unbiased=unbiased)
        return {"std": centred / deviation, "variance": centred / deviation**2, "centre": centred}[
            spread
        ]

    def fn(lexical, dense, weight):
        w = 1 - weight if swap else weight
        return (1 - w) * z(lexical) + w * z(dense)

    return fn


@pytest.mark.parametrize(
    "fn, hint",
    [
        (hybrid_with(), "PASS"),
        (hybrid_with(unbiased=False), "PASS"),  # a standard deviation over n is as right
        (hybrid_with(dim=0), "not each passage's over the queries"),
        (hybrid_with(scope="matrix"), "not the whole matrix at once"),
        (hybrid_with(spread="none"), "before mixing them"),
        (hybrid_with(spread="centre"), "not only subtract its mean"),
        (hybrid_with(spread="variance"), "not the variance"),
        (hybrid_with(swap=True), "not the other way round"),
        (hybrid_with(spread="min-max"), "not min-max"),
        (lambda lexical, dense, w: hybrid_with()(lexical, dense, w)[:, :-1], "shape"),
        (lambda lexical, dense, w: hybrid_with()(lexical, dense, w).tolist(), "torch.Tensor"),
    ],
)
def test_hybrid_scores_checker(fn, hint):
    result = exercises.check_hybrid_scores(fn)
    assert bool(result) == (hint == "PASS")
    assert hint in str(result)
