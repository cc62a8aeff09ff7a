"""The benchmarks' paired statistics measure what their tables print."""

import sys
from pathlib import Path

import pytest

from minibert import finetuning
from minibert.tasks import mentions

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import finetuning_shapes  # noqa: E402  (benchmarks/, beside the tests)


def test_span_counts_per_sentence_give_the_span_f1_the_task_reports():
    """wiki-mentions: the bootstrap's F1 of the summed per-sentence counts is the task's span F1."""
    gold = [[0, 1, 2, 0, 1], [1, 0, 0, 0], [0, 0, 1, 2]]  # O, B-MENTION, I-MENTION
    guess = [[0, 1, 2, 0, 0], [1, 2, 0, 1], [0, 0, 1, 2]]  # 1 of 2, 0 of 1 (2 wrong), 1 of 1
    right, guessed, wanted = mentions.span_counts(gold, guess)
    assert (right, guessed, wanted) == (2, 4, 4)
    none = [[0] * len(g) for g in gold]
    a = [finetuning_shapes.per_item("wiki-mentions", gold, none)]
    b = [finetuning_shapes.per_item("wiki-mentions", gold, guess)]
    gap = finetuning.paired_bootstrap_f1(a, b, resamples=200)[0]
    assert gap == pytest.approx(2 * right / (guessed + wanted))  # 0.5, the span F1
