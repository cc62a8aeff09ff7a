"""minibert.teaching.exercises.finetuning, lesson 6: the classification head, an evaluation.

Each checker passes a right answer and catches the typical mistakes, naming them in its hint.
"""

from __future__ import annotations

import pytest
import torch

from minibert.teaching import exercises


def head_with(first=lambda h: h[:, 0], squash=torch.tanh, loss=None, transpose=True):
    """A classification head built with one deliberate change (or none)."""
    F = torch.nn.functional

    def fn(h, pw, pb, cw, cb, y):
        logits = squash(first(h) @ (pw.T if transpose else pw) + pb) @ cw.T + cb
        return logits, (loss or F.cross_entropy)(logits, y)

    return fn


def not_implemented(*args):
    raise NotImplementedError


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (head_with(), True, "PASS"),
        (head_with(first=lambda h: h.mean(1)), False, "mean of every position"),
        (head_with(first=lambda h: h[:, -1]), False, "last position"),
        (head_with(squash=lambda x: x), False, "tanh"),
        (head_with(transpose=False), False, "x @ W.T + b"),
        (
            head_with(loss=lambda lg, y: torch.nn.functional.cross_entropy(lg.softmax(-1), y)),
            False,
            "applied softmax first",
        ),
        (
            head_with(loss=lambda lg, y: torch.nn.functional.cross_entropy(lg, y, reduction="sum")),
            False,
            "you summed it",
        ),
        (lambda *a: a[0][:, 0], False, "return a pair"),
        (not_implemented, False, "NotImplementedError"),
    ],
)
def test_check_classification_head(fn, passes, hint, capsys):
    assert exercises.check_classification_head(fn).passed is passes
    assert hint in capsys.readouterr().out


def evaluation_with(transpose=False, count=False, percent=False, label=1, zero=True):
    """An evaluation function with one deliberate mistake (or none)."""

    def fn(labels, predictions):
        m = [[0, 0], [0, 0]]
        for y, p in zip(labels, predictions):
            m[y][p] += 1
        right = m[0][0] + m[1][1]
        accuracy = right if count else 100 * right / len(labels) if percent else right / len(labels)
        other = 1 - label
        tp, fp, fn_ = m[label][label], m[other][label], m[label][other]
        f1 = 0.0 if zero and tp == 0 else 2 / (1 / (tp / (tp + fp)) + 1 / (tp / (tp + fn_)))
        return accuracy, f1, [list(r) for r in zip(*m)] if transpose else m

    return fn


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (evaluation_with(), True, "PASS"),
        (evaluation_with(transpose=True), False, "transposed"),
        (evaluation_with(count=True), False, "not a count"),
        (evaluation_with(percent=True), False, "not a percentage"),
        (evaluation_with(label=0), False, "F1 of label 0"),
        (evaluation_with(zero=False), False, "nothing was predicted positive"),
        (lambda y, p: 0.5, False, "return a triple"),
    ],
)
def test_check_evaluation(fn, passes, hint, capsys):
    assert exercises.check_evaluation(fn).passed is passes
    assert hint in capsys.readouterr().out
