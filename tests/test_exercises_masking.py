"""minibert.teaching.exercises.masking, lesson 4: masking, the MLM loss, accuracy at [MASK].

Each checker passes a right answer and catches the typical mistakes, naming them in its hint.
"""

from __future__ import annotations

import pytest
import torch

from minibert.teaching import exercises


def _never_random(ids, special, mask_id, random_ids, rng):
    from minibert.pretraining import mask_tokens

    masked, labels = mask_tokens(ids, special, mask_id, random_ids, rng)
    return [mask_id if lab != -100 else t for t, lab in zip(masked, labels)], labels


def _labels_everywhere(ids, special, mask_id, random_ids, rng):
    from minibert.pretraining import mask_tokens

    masked, _ = mask_tokens(ids, special, mask_id, random_ids, rng)
    return masked, list(ids)


def _hugging_face_style(ids, special, mask_id, random_ids, rng):
    labels, out = [-100] * len(ids), list(ids)
    for i, t in enumerate(ids):
        if special[i] or rng.random() >= 0.15:
            continue
        labels[i], r = t, rng.random()
        out[i] = mask_id if r < 0.8 else int(rng.choice(random_ids)) if r < 0.9 else t
    return out, labels


def _choose_half(ids, special, mask_id, random_ids, rng):
    labels = [t if not s and i % 2 else -100 for i, (t, s) in enumerate(zip(ids, special))]
    return [mask_id if lab != -100 else t for t, lab in zip(ids, labels)], labels


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        ("reference", True, "PASS"),
        (_never_random, False, "[MASK]; BERT uses 80%"),
        (_labels_everywhere, False, "every position has a label"),
        (_hugging_face_style, True, "legitimate variant"),
        (_choose_half, False, "BERT chooses 15%"),
        (lambda *args: None, False, "return a pair"),
    ],
)
def test_check_masking(fn, passes, hint, capsys):
    from minibert.pretraining import mask_tokens

    assert exercises.check_masking(mask_tokens if fn == "reference" else fn).passed is passes
    assert hint in capsys.readouterr().out


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (
            lambda lg, y: torch.nn.functional.cross_entropy(lg.flatten(0, 1), y.flatten()),
            True,
            "PASS",
        ),
        (
            lambda lg, y: torch.nn.functional.cross_entropy(
                lg.flatten(0, 1), y.flatten().clamp(min=0)
            ),
            False,
            "You counted every position",
        ),
        (
            lambda lg, y: torch.nn.functional.cross_entropy(
                lg.flatten(0, 1), y.flatten(), reduction="none"
            ).mean(),
            False,
            "labelled positions only",
        ),
        (lambda lg, y: torch.zeros(2), False, "return one number"),
    ],
)
def test_check_mlm_loss(fn, passes, hint, capsys):
    assert exercises.check_mlm_loss(fn).passed is passes
    assert hint in capsys.readouterr().out


def _mask_accuracy_right(logits, labels, input_ids, mask_id):
    at = (labels != -100) & (input_ids == mask_id)
    return float((logits.argmax(-1) == labels)[at].float().mean())


def _mask_accuracy_everywhere(logits, labels, input_ids, mask_id):
    return float((logits.argmax(-1) == labels).float().mean())


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (_mask_accuracy_right, True, "PASS"),
        (_mask_accuracy_everywhere, False, "every position was counted"),
        (lambda lg, y, ids, m: "high", False, "return a number"),
    ],
)
def test_check_mask_accuracy(fn, passes, hint, capsys):
    assert exercises.check_mask_accuracy(fn).passed is passes
    assert hint in capsys.readouterr().out
