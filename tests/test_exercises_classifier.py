"""minibert.teaching.exercises.classifier, lesson 6: the classification head, an evaluation.

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


# ---- the fine-tuning loop -------------------------------------------------------------------------


def loop_with(mistake: dict | None = None, eval_mode=True, train_mode=True, returns="state"):
    """A learner's loop: the reference with one of the checker's mistakes, or a mode forgotten."""
    from minibert.teaching.exercises import classifier as ft

    def loop(model, batches, evaluate, lr, warmup_steps, eval_every):
        if eval_mode and train_mode and returns == "state":
            return ft._reference_loop(model, batches, evaluate, lr, warmup_steps, eval_every,
                                      **(mistake or {}))  # fmt: skip
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        model.train()
        for step, batch in enumerate(batches, start=1):
            optimizer.zero_grad()
            model(**batch).loss.backward()
            optimizer.step()
            if step % eval_every == 0 or step == len(batches):
                if eval_mode:
                    model.eval()
                evaluate(model)
                if train_mode:
                    model.train()
        return model.state_dict() if returns == "state" else None

    return loop


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (loop_with(), True, "PASS"),
        (loop_with(dict(keep_copy=False)), False, "keep a copy of the best weights"),
        (loop_with(dict(zero=False)), False, "zero the gradients"),
        (loop_with(dict(clip=False)), False, "clip the gradient's norm"),
        (loop_with(dict(warmup=False)), False, "warm the learning rate up"),
        (loop_with(dict(decay_all=True)), False, "no weight decay on biases and LayerNorm"),
        (loop_with(dict(ties_later=True)), False, "on a tie keep the earlier evaluation"),
        (loop_with(eval_mode=False), False, "evaluate in eval mode"),
        (loop_with(train_mode=False), False, "call model.train() again"),
        (loop_with(returns=None), False, "as a state dict"),
        (lambda *args: (_ for _ in ()).throw(NotImplementedError), False, "NotImplementedError"),
    ],
)
def test_check_fine_tuning_loop(fn, passes, hint, capsys):
    assert exercises.check_fine_tuning_loop(fn).passed is passes
    assert hint in capsys.readouterr().out


def test_the_loops_reference_is_minibert_training_loop():
    """On one full batch (so the batch order cannot differ), the checker's loop and
    training.train end at the same weights: the exercise is checked against the package."""
    from minibert import training
    from minibert.teaching.exercises import classifier as ft

    batches, _, _, lr, warmup = ft._loop_case(3)
    full = {k: torch.cat([b[k] for b in batches]) for k in batches[0]}
    items = [{k: v[i] for k, v in full.items()} for i in range(len(full["labels"]))]
    mine, package = ft._Recorder(3), ft._Recorder(3)
    steps = 7
    kept = ft._reference_loop(mine, [full] * steps, lambda m: 0.0, lr, warmup, eval_every=steps)
    training.train(package, items, steps=steps, batch_size=len(items), lr=lr, warmup_steps=warmup,
                   collate_fn=lambda xs: {k: torch.stack([x[k] for x in xs]) for k in xs[0]},
                   progress=False)  # fmt: skip
    for name, value in package.state_dict().items():
        torch.testing.assert_close(kept[name], value, atol=1e-5, rtol=1e-5)


def test_a_schedule_that_returns_nan_gets_a_hint_about_it():
    """A submission whose lr_multiplier returned NaN got "it raised StopIteration" (the
    checker's own next() raised it)."""
    result = exercises.check_lr_schedule(lambda step, warmup, total: float("nan"))
    assert not result.passed and "return a finite number: step 0 gave nan" in result.message
    assert "StopIteration" not in result.message
