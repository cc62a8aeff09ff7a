"""Lesson 4, masked language modelling: the 15% / 80-10-10 masking procedure, the MLM loss,
accuracy at the [MASK] positions."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from minibert.config import IGNORE_INDEX
from minibert.teaching.exercises.common import Result, call_safely, report


def _sequence_problem(ids: list[int], result: Any) -> tuple[str | None, list[int], list[int]]:
    """One sequence's answer against the rules: (a hint or None, the masked ids, the positions
    chosen). ``ids`` is [CLS] + n tokens + [SEP]."""
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        return "return a pair (masked_ids, labels).", [], []
    out, labels = (list(map(int, x)) for x in result)
    n = len(ids) - 2
    if len(out) != len(ids) or len(labels) != len(ids):
        return f"both lists need {len(ids)} entries, like input_ids.", out, []
    at = [i for i, lab in enumerate(labels) if lab != IGNORE_INDEX]
    if len(at) == len(ids) or labels == ids:
        return (
            "every position has a label (labels = input_ids); only the chosen positions get "
            f"their original id, every other position gets {IGNORE_INDEX} so the loss skips it.",
            out,
            at,
        )
    if 0 in at or len(ids) - 1 in at:
        return "[CLS] and [SEP] were chosen; never choose special tokens.", out, at
    if len(at) > 0.6 * n + 3:  # far beyond what a 15% draw gives
        return f"{len(at)} positions chosen out of {n}; BERT chooses 15% of them.", out, at
    if any(labels[i] != ids[i] for i in at):
        return "a label must be the ORIGINAL id at its position.", out, at
    if any(out[i] != ids[i] for i in range(len(ids)) if i not in at):
        return "a position that was not chosen changed; leave it as it is.", out, at
    return None, out, at


def _proportion_problem(counts: dict[str, int], exact: bool) -> str | None:
    """The share of tokens chosen (when not exactly 15% per sequence) and the 80/10/10 split of
    the chosen ones, against 5-sigma binomial bounds; None if both hold."""
    chosen, candidates = counts["chosen"], counts["candidates"]
    if not exact:  # Hugging Face's variant: each token chosen with probability 0.15
        bound = 5 * math.sqrt(0.15 * 0.85 / candidates)
        if abs(chosen / candidates - 0.15) > bound:
            return (
                f"{chosen / candidates:.1%} of the tokens were chosen; BERT chooses 15%: "
                "exactly max(1, round(0.15 * n)) per sequence (Google, minibert), or each token "
                f"with probability 0.15 (Hugging Face); allowed +-{bound:.1%}."
            )
    for what, key, p in (
        ("[MASK]", "masked", 0.8),
        ("random", "randomised", 0.1),
        ("kept", "kept", 0.1),
    ):
        bound = 5 * math.sqrt(p * (1 - p) / chosen)
        if abs(counts[key] / chosen - p) > bound:
            return (
                f"{counts[key] / chosen:.1%} of the chosen tokens are {what}; BERT uses "
                f"{p:.0%} (allowed: +-{bound:.1%} over {chosen} tokens)."
            )
    return None


def check_masking(fn: Callable[..., Any], sequences: int = 1500) -> Result:
    """Check ``fn(input_ids, special_tokens_mask, mask_token_id, random_token_ids, rng)``.

    It returns (masked_ids, labels) like ``minibert.pretraining.mask_tokens``: 15% of the
    non-special positions chosen (round, at least 1; Hugging Face's variant, each position with
    probability 0.15, passes too and is named), 80% [MASK] / 10% random / 10% kept, labels
    the original id where chosen and -100 elsewhere. The checker tests the constraints on every
    sequence and the proportions over all of them, with 5-sigma binomial bounds.
    """
    name = "BERT masking"
    mask_id, random_ids = 4, list(range(5, 1000))
    g = np.random.default_rng(0)
    counts = dict.fromkeys(("chosen", "candidates", "masked", "kept", "randomised"), 0)
    exact = True  # every sequence got exactly max(1, round(15%)) chosen positions
    for case in range(sequences):
        n = int(g.integers(4, 120))
        ids = [2, *(int(t) for t in g.integers(5, 1000, n)), 3]
        special = [1] + [0] * n + [1]
        result, hint = call_safely(
            fn, list(ids), list(special), mask_id, random_ids, np.random.default_rng(case)
        )
        if hint is not None:
            return report(name, hint, case)
        problem, out, at = _sequence_problem(ids, result)
        if problem is not None:
            return report(name, problem, case)
        exact = exact and len(at) == max(1, round(0.15 * n))
        counts["chosen"] += len(at)
        counts["candidates"] += n
        counts["masked"] += sum(out[i] == mask_id for i in at)
        counts["kept"] += sum(out[i] == ids[i] for i in at)
        counts["randomised"] += sum(out[i] not in (mask_id, ids[i]) for i in at)
    problem = _proportion_problem(counts, exact)
    if problem is not None:
        return report(name, problem, sequences)
    if not exact:
        chosen = counts["chosen"] / counts["candidates"]
        return report(
            name,
            None,
            sequences,
            passed=(
                f"right on {sequences} sequences. {chosen:.1%} of the tokens were chosen, "
                "but not exactly max(1, round(0.15 * n)) per sequence as in minibert: a legitimate "
                "variant (Hugging Face chooses each token with probability 0.15; Google counts [CLS] "
                "and [SEP] in n)."
            ),
        )
    return report(name, None, sequences)


def check_mlm_loss(fn: Callable[..., Any], cases: int = 20) -> Result:
    """Check ``fn(logits, labels) -> loss``: mean cross-entropy over positions whose label is not -100.

    logits (batch, seq, vocab), labels (batch, seq). The loss must not change when padding (label
    -100) is added, and every labelled position must count once.
    """
    name = "masked LM loss"
    g = torch.Generator().manual_seed(0)
    for case in range(cases):
        batch, seq, vocab = 3, int(torch.randint(4, 12, (1,), generator=g)), 17
        logits = torch.randn(batch, seq, vocab, generator=g)
        labels = torch.randint(0, vocab, (batch, seq), generator=g)
        labels[torch.rand(batch, seq, generator=g) > 0.3] = IGNORE_INDEX
        labels[0, 0] = 3  # at least one labelled position
        expected = F.cross_entropy(logits.reshape(-1, vocab), labels.reshape(-1), ignore_index=-100)
        got, hint = call_safely(fn, logits, labels)
        if hint is not None:
            return report(name, hint, case)
        got = torch.as_tensor(got, dtype=torch.float32)
        if got.shape != ():
            return report(
                name, f"return one number (a 0-dim tensor), got shape {tuple(got.shape)}.", case
            )
        if not torch.allclose(got, expected, atol=1e-5):
            everywhere = F.cross_entropy(logits.reshape(-1, vocab), labels.clamp(min=0).reshape(-1))
            hint = f"got {float(got):.4f}, expected {float(expected):.4f}."
            if torch.allclose(got, everywhere, atol=1e-5):
                hint += " You counted every position; only positions with a label != -100 count."
            else:
                hint += " Average over the labelled positions only (d2l issue 2582 averaged first)."
            return report(name, hint, case)
        padded_logits = torch.cat([logits, torch.randn(batch, 5, vocab, generator=g)], dim=1)
        padded_labels = torch.cat([labels, torch.full((batch, 5), -100)], dim=1)
        padded, hint = call_safely(fn, padded_logits, padded_labels)
        if hint is not None or not torch.allclose(torch.as_tensor(padded), expected, atol=1e-5):
            return report(
                name, "adding padding (label -100) changed the loss; padding must not count.", case
            )
    return report(name, None, cases)


def check_mask_accuracy(fn: Callable[..., Any], cases: int = 20) -> Result:
    """Check ``fn(logits, labels, input_ids, mask_token_id) -> float``: top-1 accuracy at [MASK].

    logits (batch, seq, vocab), labels and input_ids (batch, seq). Only positions with a label
    (not -100) whose input is the [MASK] id count: the chosen positions kept as they are, which
    a model can copy, do not.
    """
    name = "accuracy at the [MASK] positions"
    g = torch.Generator().manual_seed(4)
    mask_id, vocab = 4, 12
    for case in range(cases):
        batch, seq = 3, int(torch.randint(6, 14, (1,), generator=g))
        labels = torch.randint(5, vocab, (batch, seq), generator=g)
        chosen = torch.rand(batch, seq, generator=g) < 0.4
        chosen[0, 1] = True
        labels[~chosen] = IGNORE_INDEX
        input_ids = torch.randint(5, vocab, (batch, seq), generator=g)
        as_mask = chosen & (torch.rand(batch, seq, generator=g) < 0.7)
        as_mask[0, 1] = True
        input_ids[as_mask] = mask_id
        kept = chosen & ~as_mask
        input_ids[kept] = labels[kept]  # kept as they are: a copying model gets them right
        logits = torch.randn(batch, seq, vocab, generator=g)
        copy = torch.zeros_like(logits).scatter_(-1, input_ids.clamp(min=0).unsqueeze(-1), 5.0)
        logits = logits + copy  # (batch, seq, vocab): the model copies its input where it can
        got, hint = call_safely(fn, logits, labels, input_ids, mask_id)
        if hint is not None:
            return report(name, hint, case)
        try:
            got = float(got)
        except (TypeError, ValueError):
            return report(name, f"return a number, got {type(got).__name__}.", case)
        right = logits.argmax(-1) == labels  # (batch, seq)

        def share(where: torch.Tensor, right: torch.Tensor = right) -> float:
            return float(right[where].float().mean())

        expected = share(chosen & (input_ids == mask_id))
        if abs(got - expected) < 1e-6:
            continue
        wrong = {
            "every chosen position was counted, the kept ones too: a model scores there by "
            "copying its input; count only positions whose input is the [MASK] id": share(chosen),
            "every position was counted, unlabelled ones too; count only labelled [MASK] "
            "positions": share(torch.ones_like(chosen)),
        }
        hint = f"got {got:.4f}, expected {expected:.4f}."
        for what, value in wrong.items():
            if abs(got - value) < 1e-6:
                hint += f" It looks like {what}."
                break
        return report(name, hint, case)
    return report(name, None, cases)
