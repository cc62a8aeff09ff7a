"""minibert.teaching.exercises.nsp, lesson 5: NSP pairs, SOP pairs, the NSP loss.

Each checker passes a right answer and catches the typical mistakes, naming them in its hint.
"""

from __future__ import annotations

import pytest
import torch

from minibert.teaching import exercises


def not_implemented(*args):
    raise NotImplementedError


def nsp_pairs_with(same_document=False, labels=(0, 1), truncate=True):
    """NSP pairs with one deliberate mistake (or none); labels = (IsNext, NotNext)."""

    def fn(documents, max_len, rng):
        pairs = []
        for d, doc in enumerate(documents):
            for i in range(len(doc) - 1):
                a = list(doc[i])
                if rng.random() < 0.5:
                    b, label = list(doc[i + 1]), labels[0]
                else:
                    others = [e for e in range(len(documents)) if same_document or e != d]
                    other = documents[rng.choice(others)]
                    b, label = list(rng.choice(other)), labels[1]
                while truncate and len(a) + len(b) > max_len - 3:
                    (a if len(a) > len(b) else b).pop()
                pairs.append((a, b, label))
        return pairs

    return fn


def sop_pairs_with(labels=(0, 1), swap_probability=0.5, neighbour=1):
    def fn(documents, rng):
        pairs = []
        for doc in documents:
            for i in range(len(doc) - 1):
                a, b = doc[i], doc[min(i + neighbour, len(doc) - 1)]
                if rng.random() < swap_probability:
                    pairs.append((b, a, labels[1]))
                else:
                    pairs.append((a, b, labels[0]))
        return pairs

    return fn


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (nsp_pairs_with(), True, "PASS"),
        (nsp_pairs_with(labels=(1, 0)), False, "d2l"),
        (nsp_pairs_with(truncate=False), False, "does not fit max_len"),
        (lambda docs, n, rng: [], False, "one pair per sentence"),
        (not_implemented, False, "NotImplementedError"),
    ],
)
def test_check_nsp_pairs(fn, passes, hint, capsys):
    assert exercises.check_nsp_pairs(fn).passed is passes
    assert hint in capsys.readouterr().out


def test_check_nsp_pairs_catches_a_negative_from_the_same_document(capsys):
    # d2l's rule: the random sentence may come from any document, A's own included
    assert exercises.check_nsp_pairs(nsp_pairs_with(same_document=True)).passed is False
    assert "same document" in capsys.readouterr().out


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (sop_pairs_with(), True, "PASS"),
        (sop_pairs_with(labels=(1, 0)), False, "0 = in order"),
        (sop_pairs_with(swap_probability=0.1), False, "swap each with probability 0.5"),
        (sop_pairs_with(neighbour=2), False, "consecutive"),
    ],
)
def test_check_sop_pairs(fn, passes, hint, capsys):
    assert exercises.check_sop_pairs(fn).passed is passes
    assert hint in capsys.readouterr().out


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (lambda lg, y: torch.nn.functional.cross_entropy(lg, y), True, "PASS"),
        (
            lambda lg, y: torch.nn.functional.cross_entropy(lg, y, ignore_index=0),
            False,
            "ignore_index=0",
        ),
        (lambda lg, y: torch.nn.functional.cross_entropy(lg, 1 - y), False, "reversed"),
        (
            lambda lg, y: torch.nn.functional.cross_entropy(lg, y, reduction="sum"),
            False,
            "you summed",
        ),
        (lambda lg, y: torch.zeros(3), False, "one number"),
    ],
)
def test_check_nsp_loss(fn, passes, hint, capsys):
    assert exercises.check_nsp_loss(fn).passed is passes
    assert hint in capsys.readouterr().out
