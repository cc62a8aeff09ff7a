"""minibert.paired_statistics: the paired bootstrap and the paired tests on known cases."""

import pytest

from minibert import paired_statistics as stats


def test_the_paired_bootstrap_on_known_cases():
    right_a = [1, 0] * 500  # 1,000 items
    assert stats.paired_bootstrap(right_a, right_a) == (0.0, 0.0, 0.0)  # the same model
    plus = [1] * 1000  # b right everywhere a is and on its 500 misses: +0.5, spread by resampling
    diff, low, high = stats.paired_bootstrap(right_a, plus)
    assert diff == 0.5 and 0.45 < low < 0.5 < high < 0.55  # the misses resampled: binomial spread
    # b differs from a on 100 items, 60 for b and 40 for a: +2 points, sd of the mean difference
    # sqrt(0.1 - 0.02**2) / sqrt(1000) = 0.0100, so the 95% interval is about +-1.96 points
    a = [1] * 900 + [1] * 40 + [0] * 60
    b = [1] * 900 + [0] * 40 + [1] * 60
    diff, low, high = stats.paired_bootstrap(a, b, resamples=4000)
    assert diff == pytest.approx(0.02) and (high - low) / 2 == pytest.approx(0.0196, abs=0.002)
    p = stats.paired_sign_flip_test(a, b)
    assert 0.03 < p < 0.07  # 60 against 40 among 100 discordant items: two-sided p = 0.057
    assert stats.paired_sign_flip_test(right_a, plus) < 0.001
    # seeds: (seeds, items); the same three runs as a and as b differ by nothing
    runs = [[1, 0, 1, 1], [0, 0, 1, 1], [1, 1, 1, 0]]
    assert stats.paired_bootstrap(runs, runs, resamples=200)[1:] == (0.0, 0.0)
    with pytest.raises(ValueError, match="alike"):
        stats.paired_bootstrap([1, 0, 1], [1, 0])


def test_the_paired_bootstrap_of_f1_on_known_cases():
    """F1 from summed counts (not a mean of per-item F1), seeds averaged; interval and p-value."""
    same = [[[1, 0, 1]] * 200]  # one seed, 200 items of tp 1, fp 0, fn 1: F1 2/3
    assert stats.paired_bootstrap_f1(same, same) == (0.0, 0.0, 0.0)
    assert stats.paired_permutation_test_f1(same, same, resamples=200) == 1.0
    better = [[[2, 0, 0]] * 200]  # the same positives all found: F1 1
    diff, low, high = stats.paired_bootstrap_f1(same, better, resamples=500)
    assert diff == pytest.approx(1 / 3) and low == pytest.approx(1 / 3) == pytest.approx(high)
    assert stats.paired_permutation_test_f1(same, better, resamples=500) < 0.01
    # F1 of the sums: 10 items with tp 1 and 10 with fn 1 give 2*10/(20+10) = 2/3, not the
    # mean per-item F1 (1/2)
    mixed = [[[1, 0, 0]] * 10 + [[0, 0, 1]] * 10]
    missed = [[[0, 0, 1]] * 20]  # F1 0
    assert stats.paired_bootstrap_f1(missed, mixed)[0] == pytest.approx(2 / 3)
    # two seeds: their F1 gaps (+1/3 and 0) averaged
    two = stats.paired_bootstrap_f1([same[0], same[0]], [better[0], same[0]], resamples=200)
    assert two[0] == pytest.approx(1 / 6)
    with pytest.raises(ValueError, match="seeds, items, 3"):
        stats.paired_bootstrap_f1([[1, 0, 1]], [[1, 0, 1]])


def test_the_bootstraps_can_draw_the_seeds_too():
    """Items alike, runs not: over the items alone the interval is a point (the seeds' mean);
    with the seeds drawn as well it spans what the runs disagree on."""
    zeros, ones = [0] * 50, [1] * 50
    a, b = [zeros, zeros], [ones, zeros]  # seed 0: b right everywhere; seed 1: the same as a
    assert stats.paired_bootstrap(a, b, resamples=400) == (0.5, 0.5, 0.5)
    diff, low, high = stats.paired_bootstrap(a, b, resamples=400, resample_seeds=True)
    assert (diff, low, high) == (0.5, 0.0, 1.0)  # both seeds drawn 0 or both 1: 5% tails reached
    same, better = [[1, 0, 1]] * 30, [[2, 0, 0]] * 30  # F1 2/3 and 1 on every item
    a3, b3 = [same, same], [better, same]  # F1 gaps +1/3 and 0
    assert stats.paired_bootstrap_f1(a3, b3, resamples=400)[1:] == pytest.approx((1 / 6,) * 2)
    diff, low, high = stats.paired_bootstrap_f1(a3, b3, resamples=400, resample_seeds=True)
    assert diff == pytest.approx(1 / 6) and (low, high) == pytest.approx((0.0, 1 / 3))
    with pytest.raises(ValueError, match="two seeds"):
        stats.paired_bootstrap([ones], [zeros], resample_seeds=True)
