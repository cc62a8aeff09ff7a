"""Lesson 5, next sentence prediction: NSP pairs, sentence-order (SOP) pairs, the NSP loss."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F

from minibert.teaching.exercises.common import Result, call_safely, report


def _numbered_documents(g: Any, docs: int = 6) -> list[list[list[int]]]:
    """Documents whose every token says where it is: 1000 * (doc + 1) + sentence, repeated."""
    out = []
    for d in range(docs):
        sentences = int(torch.randint(3, 9, (1,), generator=g))
        out.append(
            [
                [1000 * (d + 1) + i] * int(torch.randint(2, 40, (1,), generator=g))
                for i in range(sentences)
            ]
        )
    return out


def _where(tokens: Sequence[int], documents: list[list[list[int]]]) -> tuple[int, int] | None:
    """(document, sentence) a segment came from, found by its marker token, or None."""
    for token in tokens:
        if token >= 1000:
            d, i = divmod(token, 1000)
            if 1 <= d <= len(documents) and i < len(documents[d - 1]):
                return d - 1, i
    return None


def _parse_pairs(got: Any, documents: list[list[list[int]]]) -> tuple[list[tuple], str | None]:
    """A learner's pairs -> [(a, b, label, where_a, where_b)], or a hint on what is malformed."""
    expected = sum(len(d) - 1 for d in documents)
    if not isinstance(got, list | tuple) or len(got) != expected:
        size = len(got) if hasattr(got, "__len__") else got
        return (
            [],
            f"expected one pair per sentence but the last of each document ({expected}), got {size!r}.",
        )
    pairs = []
    for pair in got:
        if not isinstance(pair, list | tuple) or len(pair) != 3:
            return [], "each pair should be (tokens_a, tokens_b, label)."
        try:
            a, b, label = list(pair[0]), list(pair[1]), int(pair[2])
        except (TypeError, ValueError):
            return [], "each pair should be (list of ids, list of ids, int label)."
        pairs.append((a, b, label, _where(a, documents), _where(b, documents)))
    return pairs, None


def _imbalance(labels: Sequence[int], what: str, rule: str) -> str | None:
    """A hint when labels 0/1 drawn with p = 0.5 put the 1s beyond 4 standard deviations of half."""
    n = len(labels)
    if abs(sum(labels) - n / 2) <= 4 * (n / 4) ** 0.5:
        return None
    return f"{sum(labels)} of {n} pairs are {what}; {rule} with probability 0.5."


def check_nsp_pairs(fn: Callable[..., Any], cases: int = 5) -> Result:
    """Check ``fn(documents, max_len, rng) -> [(tokens_a, tokens_b, label), ...]``: BERT's NSP pairs.

    For every sentence but the last of each document: A is that sentence; B is the next sentence
    (label 0, IsNext) or, with probability 0.5, a random sentence of another document (label 1,
    NotNext). The pair is truncated (the longer segment first) so that [CLS] A [SEP] B [SEP] fits
    max_len.
    """
    name = "NSP pairs"
    g = torch.Generator().manual_seed(2)
    labels: list[int] = []
    for case in range(cases):
        documents, max_len = _numbered_documents(g), int(torch.randint(24, 64, (1,), generator=g))
        got, hint = call_safely(
            fn, [[list(s) for s in d] for d in documents], max_len, random.Random(case)
        )
        if hint is not None:
            return report(name, hint, case)
        pairs, hint = _parse_pairs(got, documents)
        if hint is not None:
            return report(name, hint, case)
        for a, b, label, where_a, where_b in pairs:
            if len(a) + len(b) + 3 > max_len:
                return report(
                    name,
                    f"a pair of {len(a)} + {len(b)} tokens does not fit max_len {max_len} with [CLS] and two [SEP]; truncate the longer segment.",
                    case,
                )
            if where_a is None or where_b is None:
                return report(
                    name,
                    "a segment is empty or holds tokens of no sentence of the documents.",
                    case,
                )
            follows = where_b == (where_a[0], where_a[1] + 1)
            if label not in (0, 1):
                return report(name, f"labels are 0 (IsNext) and 1 (NotNext), got {label}.", case)
            if label == 1 and follows:
                return report(
                    name,
                    "a pair labelled 1 is the true continuation. Labels follow Google and Hugging Face: 0 = IsNext, 1 = NotNext (d2l uses the opposite).",
                    case,
                )
            if label == 0 and not follows:
                hint = "a pair labelled 0 (IsNext) is not the true continuation"
                if where_b[0] != where_a[0]:
                    hint += " (did you use 1 for IsNext, as d2l does? minibert follows Google: 0)"
                return report(name, hint + ".", case)
            if label == 1 and where_b[0] == where_a[0]:
                return report(
                    name,
                    "a random B came from the same document as A; draw it from another document (Google's rule; d2l's allows the same one).",
                    case,
                )
            labels.append(label)
    return report(
        name, _imbalance(labels, "NotNext", "each should be NotNext"), cases
    )  # None: a pass


def check_sop_pairs(fn: Callable[..., Any], cases: int = 5) -> Result:
    """Check ``fn(documents, rng) -> [(tokens_a, tokens_b, label), ...]``: ALBERT's sentence order.

    For every sentence but the last of each document: the sentence and the next one, in order
    (label 0) or, with probability 0.5, swapped (label 1).
    """
    name = "SOP pairs"
    g = torch.Generator().manual_seed(3)
    labels: list[int] = []
    for case in range(cases):
        documents = _numbered_documents(g)
        got, hint = call_safely(fn, [[list(s) for s in d] for d in documents], random.Random(case))
        if hint is not None:
            return report(name, hint, case)
        pairs, hint = _parse_pairs(got, documents)
        if hint is not None:
            return report(name, hint, case)
        for _a, _b, label, where_a, where_b in pairs:
            if where_a is None or where_b is None or where_a[0] != where_b[0]:
                return report(
                    name,
                    "both segments of an SOP pair come from one document: a sentence and its neighbour.",
                    case,
                )
            if abs(where_a[1] - where_b[1]) != 1:
                return report(
                    name,
                    "the two segments must be consecutive sentences (only their order changes).",
                    case,
                )
            in_order = where_b[1] == where_a[1] + 1
            if label != (0 if in_order else 1):
                return report(
                    name,
                    "labels: 0 = in order, 1 = swapped (as Google's NSP: 0 = B follows A).",
                    case,
                )
            labels.append(label)
    return report(name, _imbalance(labels, "swapped", "swap each"), cases)  # None: a pass


def check_nsp_loss(fn: Callable[..., Any], cases: int = 20) -> Result:
    """Check ``fn(nsp_logits, labels) -> loss``: mean cross-entropy over every pair, both labels.

    nsp_logits (batch, 2), labels (batch,) with 0 = IsNext and 1 = NotNext.
    """
    name = "NSP loss"
    g = torch.Generator().manual_seed(4)
    for case in range(cases):
        logits = torch.randn(8, 2, generator=g)
        labels = torch.randint(0, 2, (8,), generator=g)
        labels[0], labels[1] = 0, 1  # both labels present
        expected = F.cross_entropy(logits, labels)
        got, hint = call_safely(fn, logits, labels)
        if hint is not None:
            return report(name, hint, case)
        got = torch.as_tensor(got, dtype=torch.float32)
        if got.shape != ():
            return report(
                name, f"return one number (a 0-dim tensor), got shape {tuple(got.shape)}.", case
            )
        if not torch.allclose(got, expected, atol=1e-5):
            wrong = {
                "IsNext pairs (label 0) were dropped: ignore_index=0 (padding's id, shared with "
                "the MLM loss) silently ignores one of the two classes": F.cross_entropy(
                    logits, labels, ignore_index=0
                ),
                "the labels are reversed: 0 = IsNext, 1 = NotNext (Google, Hugging Face; d2l uses the opposite)": F.cross_entropy(
                    logits, 1 - labels
                ),
                "cross_entropy takes the raw logits; you applied softmax first": F.cross_entropy(
                    logits.softmax(-1), labels
                ),
                "average over the batch (you summed)": F.cross_entropy(
                    logits, labels, reduction="sum"
                ),
            }
            hint = next((w for w, v in wrong.items() if torch.allclose(got, v, atol=1e-5)), None)
            return report(
                name, hint or f"got {float(got):.4f}, expected {float(expected):.4f}.", case
            )
    return report(name, None, cases)
