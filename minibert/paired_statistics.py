"""Paired statistics: is model b better than model a on the same test items, and by how much?

    diff, low, high = paired_bootstrap(right_a, right_b)     # (items,) 1/0 per item, or (seeds, items)
    p = paired_sign_flip_test(right_a, right_b)
    diff, low, high = paired_bootstrap_f1(counts_a, counts_b)  # (seeds, items, 3) tp, fp, fn

Both models are scored on every resample of the test items (a paired bootstrap), so the interval
holds the items' variation once, not twice; a measure that is not a mean of per-item scores (F1)
is recomputed from the summed counts of each resample.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = [
    "paired_bootstrap",
    "paired_bootstrap_f1",
    "paired_permutation_test_f1",
    "paired_sign_flip_test",
]


def _paired(a: Sequence, b: Sequence) -> torch.Tensor:
    """b - a as a (seeds, items) float64 tensor; a and b are (items,) or (seeds, items) each."""
    a, b = torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64)
    if a.shape != b.shape or a.dim() not in (1, 2) or a.shape[-1] < 2:
        raise ValueError(
            f"a and b must be (items,) or (seeds, items) alike with 2+ items, got {tuple(a.shape)} and {tuple(b.shape)}"
        )
    return (b - a).reshape(-1, a.shape[-1])


def paired_bootstrap(
    a: Sequence,
    b: Sequence,
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    resample_seeds: bool = False,
) -> tuple[float, float, float]:
    """mean(b) - mean(a) and its percentile bootstrap interval, the test items resampled with both
    models scored on each resample. a, b: (items,) per-item scores (1/0 right, or a per-item F1),
    or (seeds, items): the seeds averaged within each resample (the interval then holds the
    items' variation, and the seeds' mean); with resample_seeds, the seeds are drawn too (a's and
    b's seed s together: the same training subset), so it holds the runs' variation as well.
    Returns (difference, low, high)."""
    if resamples < 100 or not 0 < level < 1:
        raise ValueError(
            f"resamples must be >= 100 and level in (0, 1), got {resamples} and {level}"
        )
    gaps = _paired(a, b)
    n = gaps.shape[-1]
    g = torch.Generator().manual_seed(seed)
    picks = torch.randint(n, (resamples, n), generator=g)  # (resamples, items)
    runs = _seed_picks(gaps.shape[0], resamples, g, resample_seeds)  # (resamples, seeds)
    by_seed = gaps[:, picks].mean(2)  # (seeds, resamples): each seed on the resampled items
    means = by_seed.gather(0, runs.T).mean(0)  # (resamples,): over the drawn seeds
    tail = (1 - level) / 2
    low, high = torch.quantile(means, torch.tensor([tail, 1 - tail], dtype=torch.float64)).tolist()
    return float(gaps.mean()), low, high


def paired_sign_flip_test(a: Sequence, b: Sequence, resamples: int = 10000, seed: int = 0) -> float:
    """Two-sided p-value for "a and b score the same" (per-item scores, paired as in
    paired_bootstrap): each item's difference (averaged over seeds) has its sign flipped at random;
    the share of flips whose mean is at least as far from 0 as the observed one (counting the
    observed one, so never 0)."""
    gaps = _paired(a, b).mean(0)  # (items,)
    g = torch.Generator().manual_seed(seed)
    signs = torch.randint(2, (resamples, gaps.numel()), generator=g, dtype=torch.float64) * 2 - 1
    observed = abs(float(gaps.mean()))
    extreme = int(((signs * gaps).mean(1).abs() >= observed - 1e-12).sum())
    return (extreme + 1) / (resamples + 1)


def _seed_picks(seeds: int, resamples: int, g: torch.Generator, draw: bool) -> torch.Tensor:
    """(resamples, seeds) seed indices: each resample's seeds drawn with replacement, or all."""
    if not draw:
        return torch.arange(seeds).expand(resamples, seeds)
    if seeds < 2:
        raise ValueError("resampling the seeds needs at least two seeds")
    return torch.randint(seeds, (resamples, seeds), generator=g)


def _f1_of_counts(counts: torch.Tensor) -> torch.Tensor:
    """F1 from summed (..., 3) counts of (true positives, false positives, false negatives)."""
    tp, fp, fn = counts.unbind(-1)
    denominator = 2 * tp + fp + fn
    return torch.where(denominator > 0, 2 * tp / denominator.clamp(min=1), torch.zeros_like(tp))


def paired_bootstrap_f1(
    a: Sequence,
    b: Sequence,
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    resample_seeds: bool = False,
) -> tuple[float, float, float]:
    """F1(b) - F1(a) and its percentile bootstrap interval, for a measure that is not a mean of
    per-item scores: a, b are (seeds, items, 3) counts of (tp, fp, fn) per test item (a sentence's
    words, say). Each resample draws items with replacement; each seed's F1 is computed on the
    summed counts of the drawn items, and the seeds' F1 averaged (with resample_seeds, over seeds
    drawn with replacement, a's and b's together). Returns (difference, low, high)."""
    if resamples < 100 or not 0 < level < 1:
        raise ValueError(
            f"resamples must be >= 100 and level in (0, 1), got {resamples} and {level}"
        )
    a, b = (torch.as_tensor(x, dtype=torch.float64) for x in (a, b))
    if a.shape != b.shape or a.dim() != 3 or a.shape[-1] != 3:
        raise ValueError(
            f"a and b must both be (seeds, items, 3) counts, got {tuple(a.shape)} and {tuple(b.shape)}"
        )
    n = a.shape[1]
    g = torch.Generator().manual_seed(seed)
    picks = torch.randint(n, (resamples, n), generator=g)  # (resamples, items)
    gaps = _f1_of_counts(b[:, picks].sum(2)) - _f1_of_counts(
        a[:, picks].sum(2)
    )  # (seeds, resamples)
    runs = _seed_picks(a.shape[0], resamples, g, resample_seeds)  # (resamples, seeds)
    tail = (1 - level) / 2
    qs = torch.tensor([tail, 1 - tail], dtype=torch.float64)
    low, high = torch.quantile(gaps.gather(0, runs.T).mean(0), qs).tolist()
    observed = _f1_of_counts(b.sum(1)) - _f1_of_counts(a.sum(1))  # (seeds,)
    return float(observed.mean()), low, high


def paired_permutation_test_f1(
    a: Sequence, b: Sequence, resamples: int = 10000, seed: int = 0
) -> float:
    """Two-sided p-value for "a and b have the same F1" (counts as in paired_bootstrap_f1): each
    item's two sets of counts are swapped between a and b at random (the same swap for every
    seed); the share of swaps whose mean F1 gap is at least as far from 0 as the observed one
    (counting the observed one, so never 0)."""
    a, b = (torch.as_tensor(x, dtype=torch.float64) for x in (a, b))
    if a.shape != b.shape or a.dim() != 3 or a.shape[-1] != 3:
        raise ValueError(
            f"a and b must both be (seeds, items, 3) counts, got {tuple(a.shape)} and {tuple(b.shape)}"
        )
    observed = abs(float((_f1_of_counts(b.sum(1)) - _f1_of_counts(a.sum(1))).mean()))
    g = torch.Generator().manual_seed(seed)
    extreme = 0
    for chunk in range(0, resamples, 500):  # (swaps, seeds, items, 3) in chunks: bounded memory
        swap = torch.randint(2, (min(500, resamples - chunk), 1, a.shape[1], 1), generator=g).bool()
        a_swapped, b_swapped = torch.where(swap, b, a), torch.where(swap, a, b)
        gaps = (_f1_of_counts(b_swapped.sum(2)) - _f1_of_counts(a_swapped.sum(2))).mean(1)
        extreme += int((gaps.abs() >= observed - 1e-12).sum())
    return (extreme + 1) / (resamples + 1)
