"""Lesson 6, fine-tuning: the classification head on [CLS] and its loss, an evaluation function."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from minibert.finetuning import f1_score, scores
from minibert.teaching.exercises.common import Result, call_safely, report
from minibert.teaching.grading_worker import MADE


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


# ---- the fine-tuning loop ------------------------------------------------------------------------


def _made(kind: str, *args: Any) -> Any:
    """One of the objects the loop is given, built here as the grader's worker builds it there
    (grading_worker.MADE: LoopClassifier, which notes each call's mode, and DevAccuracy)."""
    return MADE[kind](*args)


def _Recorder(seed: int) -> torch.nn.Module:
    """The loop's model for seed (worker.LoopClassifier)."""
    return _made("LoopClassifier", seed)


def _loop_case(seed: int) -> tuple[list[dict], dict, int, float, int]:
    """(batches, dev, eval_every, lr, warmup_steps): token ids whose label is whether token 7 is in
    the text, so the model learns and its dev accuracy moves from one evaluation to the next."""
    g = torch.Generator().manual_seed(seed)

    def batch(n: int) -> dict:
        ids = torch.randint(0, 40, (n, 6), generator=g)
        return {"input_ids": ids, "labels": (ids == 7).any(1).long()}

    steps = int(torch.randint(6, 13, (1,), generator=g))
    return (
        [batch(8) for _ in range(steps)],
        batch(64),
        int(torch.randint(2, 4, (1,), generator=g)),
        (3e-2, 1e-1)[seed % 2],
        int(torch.randint(1, 4, (1,), generator=g)),
    )


MISTAKES = ("decay_all", "warmup", "clip", "zero", "keep_copy", "ties_later")


def _reference_loop(model, batches, evaluate, lr, warmup_steps, eval_every, **mistake):
    """The package's fine-tuning loop (minibert.training's optimizer, schedule and clipping; the
    best evaluation kept), or it with one step changed: mistake sets one of MISTAKES' flags
    (decay_all, ties_later: True; warmup, clip, zero, keep_copy: False)."""
    from minibert.training import linear_schedule, make_optimizer

    unknown = set(mistake) - set(MISTAKES)
    if unknown:
        raise TypeError(f"no such mistake: {', '.join(sorted(unknown))}")
    flags = {
        "decay_all": False,
        "warmup": True,
        "clip": True,
        "zero": True,
        "keep_copy": True,
        "ties_later": False,
        **mistake,
    }
    decay_all, warmup, clip, zero = (
        flags["decay_all"],
        flags["warmup"],
        flags["clip"],
        flags["zero"],
    )
    keep_copy, ties_later = flags["keep_copy"], flags["ties_later"]

    optimizer = make_optimizer(model, lr, weight_decay=0.01)
    if decay_all:
        for group in optimizer.param_groups:
            group["weight_decay"] = 0.01
    steps = len(batches)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: linear_schedule(s, warmup_steps, steps) if warmup else 1.0
    )
    best, best_state = None, None
    model.train()
    for step, batch in enumerate(batches, start=1):
        if zero:
            optimizer.zero_grad()
        model(**batch).loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        if step % eval_every == 0 or step == steps:
            model.eval()
            measure = evaluate(model)
            model.train()
            if best is None or measure > best or (ties_later and measure == best):
                best = measure
                state = model.state_dict()
                best_state = {k: v.clone() for k, v in state.items()} if keep_copy else state
    return best_state


def _run_loop(
    loop: Callable[..., Any], case: int, make: Callable[..., Any] | None = None, **mistake: Any
) -> tuple[Any, Any, str | None]:
    """Run a loop (the learner's, or the reference with a mistake) on case: (model, state, hint).

    make(kind, *args) builds the model and the measure (grading_worker.MADE's classes; a grader's
    make builds them in the worker that runs a submission)."""
    make = make or _made
    batches, dev, eval_every, lr, warmup = _loop_case(case)
    model = make("LoopClassifier", case)
    evaluate = make("DevAccuracy", dev["input_ids"], dev["labels"])
    state, hint = call_safely(
        loop, model, [dict(b) for b in batches], evaluate, lr, warmup, eval_every, **mistake
    )
    return model, state, hint


def _same(got: Any, case: int, mistake: dict) -> bool:
    """Whether got (a state dict) is what the reference loop with mistake returns on case."""
    _, variant, _ = _run_loop(_reference_loop, case, **mistake)
    return (
        isinstance(got, dict)
        and got.keys() == variant.keys()
        and all(torch.allclose(got[k], variant[k], atol=1e-5) for k in variant)
    )


def check_fine_tuning_loop(
    fn: Callable[..., Any], cases: int = 6, make: Callable[..., Any] | None = None
) -> Result:
    """Check ``fn(model, batches, evaluate, lr, warmup_steps, eval_every) -> best state dict``.

    One optimizer step per batch (``model(**batch).loss``): AdamW (betas 0.9, 0.999; eps 1e-6;
    weight decay 0.01 on the weight matrices, none on biases and LayerNorm), the learning rate
    warmed up linearly over warmup_steps then decayed linearly to zero at the last step
    (``training.linear_schedule``), the gradient's norm clipped to 1.0, the gradients zeroed
    before each step. Every eval_every steps and after the last, ``evaluate(model)`` (higher is
    better) with the model in eval mode, then back to train mode; the weights of the best
    evaluation are kept (a tie keeps the earlier) and returned as a state dict. make builds the
    model and the measure fn is given (see _run_loop; the assignment's grader passes its own).
    """
    name = "fine-tuning loop"
    for case in range(cases):
        batches, _, eval_every, _, _ = _loop_case(case)
        model, got, hint = _run_loop(fn, case, make)
        if hint is not None:
            return report(name, hint, case)
        calls = model.calls_made()
        evaluations = [training for kind, training in calls if kind == "eval"]
        trained = [training for kind, training in calls if kind == "train"]
        if len(evaluations) != len(range(eval_every, len(batches) + 1, eval_every)) + (
            len(batches) % eval_every != 0
        ):
            return report(
                name,
                f"evaluate every {eval_every} steps and after the last step "
                f"({len(batches)} steps here): evaluate(model) was called {len(evaluations)} times.",
                case,
            )
        if any(evaluations):
            return report(name, "evaluate in eval mode (model.eval()): dropout must be off.", case)
        if not all(trained):
            return report(
                name, "train in train mode: call model.train() again after evaluating.", case
            )
        if not isinstance(got, dict) or not all(isinstance(v, torch.Tensor) for v in got.values()):
            return report(name, "return the best evaluation's weights as a state dict.", case)
        _, want, _ = _run_loop(_reference_loop, case)
        if got.keys() != want.keys():
            return report(name, "return model.state_dict()'s keys (a copy of its tensors).", case)
        if all(torch.allclose(got[k], want[k], atol=1e-5) for k in want):
            continue
        mistakes = {
            "keep a copy of the best weights ({k: v.clone() for k, v in model.state_dict().items()}): "
            "state_dict() returns the live tensors, which later steps change": dict(
                keep_copy=False
            ),
            "zero the gradients before each step: they add up across steps otherwise": dict(
                zero=False
            ),
            "clip the gradient's norm to 1.0 before each step (torch.nn.utils.clip_grad_norm_)": dict(
                clip=False
            ),
            "warm the learning rate up over warmup_steps, then decay it linearly to zero at the last "
            "step (a LambdaLR with training.linear_schedule)": dict(warmup=False),
            "no weight decay on biases and LayerNorm's weights (1-D parameters): two parameter "
            "groups": dict(decay_all=True),
            "on a tie keep the earlier evaluation (replace the best only when one is strictly "
            "better)": dict(ties_later=True),
        }
        named = [text for text, flags in mistakes.items() if _same(got, case, flags)]
        if len(named) > 1:  # two mistakes give these weights here: the other cases tell them apart
            others = [(c, _run_loop(fn, c, make)[1]) for c in range(cases) if c != case]
            named = [
                text for text in named if all(_same(mine, c, mistakes[text]) for c, mine in others)
            ] or named
        if named:
            return report(name, named[0] + ".", case)
        worst = max(float((got[k] - want[k]).abs().max()) for k in want)
        return report(
            name, f"the weights differ from the reference loop's by up to {worst:.3g}.", case
        )
    return report(name, None, cases)


# ---- the learning-rate schedule ------------------------------------------------------------------

_SCHEDULE_MISTAKES = {  # a classic wrong schedule -> what it does wrong, as a hint
    "warm-up starts at 0 (step / warmup_steps): the first step learns nothing; use (step + 1) / "
    "warmup_steps": lambda s, w, t: s / w if s < w else max(0.0, (t - s) / max(1, t - w)),
    "no warm-up: the rate must rise from 1/warmup_steps to 1 over the first warmup_steps steps": (
        lambda s, w, t: max(0.0, (t - s) / max(1, t - w))
    ),
    "no decay: after the warm-up the rate must fall linearly to 0 at total_steps": (
        lambda s, w, t: (s + 1) / w if s < w else 1.0
    ),
    "the decay runs over total_steps, not total_steps - warmup_steps: the rate must be 1 right "
    "after the warm-up": lambda s, w, t: (s + 1) / w if s < w else max(0.0, (t - s) / t),
    "the rate reaches 0 one step early: at step s after the warm-up it is (total_steps - s) / "
    "(total_steps - warmup_steps)": (
        lambda s, w, t: (s + 1) / w if s < w else max(0.0, (t - s - 1) / max(1, t - w))
    ),
    "the rate goes below 0 after total_steps: clamp it at 0": (
        lambda s, w, t: (s + 1) / w if s < w else (t - s) / max(1, t - w)
    ),
}


def check_lr_schedule(fn: Callable[..., Any], cases: int = 12) -> Result:
    """Check ``fn(step, warmup_steps, total_steps) -> float``, the learning-rate multiplier of
    ``training.linear_schedule``: (step + 1) / warmup_steps during the warm-up, then (total_steps -
    step) / (total_steps - warmup_steps), never below 0 (step counts from 0)."""
    from minibert.training import linear_schedule

    name = "learning-rate schedule"
    g = torch.Generator().manual_seed(2)
    for case in range(cases):
        warmup = int(torch.randint(1, 6, (1,), generator=g))
        total = warmup + int(torch.randint(1, 12, (1,), generator=g))
        steps = range(total + 2)  # two beyond the end: the clamp
        want = [linear_schedule(s, warmup, total) for s in steps]
        got = []
        for s in steps:
            value, hint = call_safely(fn, s, warmup, total)
            if hint is not None:
                return report(name, hint, case)
            try:
                got.append(float(value))
            except (TypeError, ValueError):
                return report(name, f"return a number (got {type(value).__name__}).", case)
            if not math.isfinite(got[-1]):
                return report(name, f"return a finite number: step {s} gave {got[-1]}.", case)
        if all(abs(a - b) < 1e-9 for a, b in zip(got, want)):
            continue
        for hint, wrong in _SCHEDULE_MISTAKES.items():
            if all(abs(a - wrong(s, warmup, total)) < 1e-9 for a, s in zip(got, steps)):
                return report(name, hint + ".", case)
        step = next(s for s in steps if abs(got[s] - want[s]) >= 1e-9)
        return report(
            name,
            f"with warmup_steps={warmup}, total_steps={total}, step {step} "
            f"should give {want[step]:.4f}, got {got[step]:.4f}.",
            case,
        )
    return report(name, None, cases)
