"""Lesson 6, fine-tuning: the classification head on [CLS] and its loss, an evaluation function."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from minibert.finetuning import f1_score, scores
from minibert.teaching.exercises.common import Result, call_safely, report


def check_classification_head(fn: Callable[..., Any], cases: int = 20) -> Result:
    """Check ``fn(hidden, pooler_w, pooler_b, classifier_w, classifier_b, labels) -> (logits, loss)``.

    hidden (batch, seq, hidden); pooler_w (hidden, hidden); classifier_w (labels, hidden); labels
    (batch,). Reference: pooled = tanh(hidden[:, 0] @ pooler_w.T + pooler_b), logits = pooled @
    classifier_w.T + classifier_b (batch, labels), loss = mean cross-entropy (a 0-dim tensor).
    """
    name = "classification head"
    g = torch.Generator().manual_seed(0)
    for case in range(cases):
        batch, seq, hidden, labels_n = 4, int(torch.randint(3, 9, (1,), generator=g)), 6, 3
        h = torch.randn(batch, seq, hidden, generator=g)
        pw, pb = torch.randn(hidden, hidden, generator=g), torch.randn(hidden, generator=g)
        cw, cb = torch.randn(labels_n, hidden, generator=g), torch.randn(labels_n, generator=g)
        y = torch.randint(0, labels_n, (batch,), generator=g)

        def head(first, squash=torch.tanh, pooler=pw, pb=pb, cw=cw, cb=cb) -> torch.Tensor:
            return squash(first @ pooler.T + pb) @ cw.T + cb

        expected = head(h[:, 0])
        got, hint = call_safely(fn, h, pw, pb, cw, cb, y)
        if hint is not None:
            return report(name, hint, case)
        if not isinstance(got, tuple | list) or len(got) != 2:
            return report(name, "return a pair (logits, loss).", case)
        logits, loss = (torch.as_tensor(x, dtype=torch.float32) for x in got)
        if logits.shape != expected.shape:
            return report(
                name,
                f"logits should have shape (batch, labels) = {tuple(expected.shape)}, got "
                f"{tuple(logits.shape)}.",
                case,
            )
        if not torch.allclose(logits, expected, atol=1e-5):
            wrong = {
                "you pooled the mean of every position; BERT's pooler reads position 0, the [CLS] "
                "vector": head(h.mean(1)),
                "you read the last position; [CLS] is position 0": head(h[:, -1]),
                "the pooler applies tanh after its dense layer": head(h[:, 0], squash=lambda x: x),
                "a linear layer computes x @ W.T + b (W is (out, in)); you used W": head(
                    h[:, 0], pooler=pw.T
                ),
            }
            hint = next(
                (w for w, value in wrong.items() if torch.allclose(logits, value, atol=1e-5)), None
            )
            return report(
                name, hint or "the logits differ from tanh(h_cls W_p^T + b_p) W_c^T + b_c.", case
            )
        expected_loss = F.cross_entropy(expected, y)
        if loss.shape != () or not torch.allclose(loss, expected_loss, atol=1e-5):
            if loss.shape == () and torch.allclose(
                loss, F.cross_entropy(expected.softmax(-1), y), atol=1e-5
            ):
                hint = (
                    "cross_entropy takes the raw logits; you applied softmax first (twice in all)."
                )
            elif loss.shape == () and torch.allclose(
                loss, F.cross_entropy(expected, y, reduction="sum"), atol=1e-4
            ):
                hint = "average the loss over the batch (you summed it)."
            else:
                hint = f"the loss should be the mean cross-entropy, {float(expected_loss):.4f}."
            return report(name, hint, case)
    return report(name, None, cases)


def check_evaluation(fn: Callable[..., Any], cases: int = 30) -> Result:
    """Check ``fn(labels, predictions) -> (accuracy, f1, confusion)`` for two labels.

    accuracy in [0, 1]; f1 of label 1 (0.0 when nothing is predicted or labelled 1); confusion a
    2 x 2 nested list or tensor with confusion[true][predicted].
    """
    name = "evaluation"
    g = torch.Generator().manual_seed(1)
    for case in range(cases):
        n = int(torch.randint(5, 40, (1,), generator=g))
        labels = torch.randint(0, 2, (n,), generator=g).tolist()
        predictions = torch.randint(0, 2, (n,), generator=g).tolist()
        if case == 0:
            predictions = [0] * n  # nothing predicted positive: F1 must be 0, not an error
        reference = scores(labels, predictions)
        matrix = reference["confusion"]
        expected = (reference["accuracy"], reference["f1"], matrix)
        got, hint = call_safely(fn, labels, predictions)
        if hint is not None:
            if case == 0 and "ZeroDivision" in hint:
                hint += " (nothing was predicted positive: precision and F1 are 0 then)"
            return report(name, hint, case)
        if not isinstance(got, tuple | list) or len(got) != 3:
            return report(name, "return a triple (accuracy, f1, confusion).", case)
        accuracy, f1, confusion = got
        confusion = torch.as_tensor(confusion).tolist()
        if abs(float(accuracy) - expected[0]) > 1e-6:
            if abs(float(accuracy) - expected[0] * n) < 1e-6:
                hint = "accuracy is a fraction of the examples, not a count."
            elif abs(float(accuracy) - 100 * expected[0]) < 1e-4:
                hint = "give accuracy as a fraction in [0, 1], not a percentage."
            else:
                hint = f"accuracy should be {expected[0]:.4f}, got {float(accuracy):.4f}."
            return report(name, hint, case)
        if confusion != matrix:
            if confusion == [list(r) for r in zip(*matrix)]:
                hint = "the confusion matrix is transposed: rows are the true labels, columns the predictions."
            else:
                hint = (
                    f"confusion should be {matrix} (rows true, columns predicted), got {confusion}."
                )
            return report(name, hint, case)
        f1 = float(f1)
        if f1 != f1:  # NaN
            return report(
                name, "F1 is NaN when nothing is predicted positive; it should be 0.", case
            )
        if abs(f1 - expected[1]) > 1e-6:
            tn, fn0, fp0 = matrix[0][0], matrix[0][1], matrix[1][0]
            p0 = tn / (tn + fp0) if tn + fp0 else 0.0
            r0 = tn / (tn + fn0) if tn + fn0 else 0.0
            if abs(f1 - f1_score(p0, r0)) < 1e-6:
                hint = "that is the F1 of label 0; report the F1 of label 1 (fresh)."
            else:
                hint = f"F1 of label 1 should be {expected[1]:.4f}, got {f1:.4f}."
            return report(name, hint, case)
    return report(name, None, cases)
