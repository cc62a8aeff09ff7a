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


def test_each_pretrained_row_is_paired_with_random_weights_of_its_own_size_and_kind():
    """MiniLM against random weights of MiniLM's size, a frozen probe against a frozen probe."""
    partner = finetuning_shapes.random_partner
    assert partner("course") == partner("course-reviews") == "scratch"
    assert partner("minilm") == "minilm-scratch"
    assert partner("self") == "self-scratch"
    assert partner("course-probe") == "scratch-probe"
    assert partner("minilm-probe") == "minilm-scratch-probe"
    assert partner("scratch") is partner("minilm-scratch-probe") is None


def test_intervals_compare_probes_with_probes(monkeypatch):
    """A probe row's interval is against the random probe, never against fine-tuned weights."""
    rows = {  # per item 0/1, two seeds, three items
        "scratch": [[1.0, 1.0, 1.0]] * 2,
        "course": [[1.0, 1.0, 1.0]] * 2,
        "scratch-probe": [[0.0, 0.0, 0.0]] * 2,
        "course-probe": [[1.0, 0.0, 1.0]] * 2,
    }

    class Items:
        def __init__(self, done, task):
            pass

        def row(self, model, size):
            return rows.get(model) if size == "256" else None

    monkeypatch.setattr(finetuning_shapes, "_TestItems", Items)
    done = {"table": {"rotten-tomatoes": {m: {} for m in rows}}}
    found = finetuning_shapes.intervals(done)["rotten-tomatoes"]["256"]
    assert set(found) == {"course - scratch", "course-probe - scratch-probe"}
    assert found["course-probe - scratch-probe"]["difference"] == pytest.approx(2 / 3)
    assert found["course - scratch"]["difference"] == 0
    # the same two seeds agree, so drawing the seeds too gives the items' interval again
    probe = found["course-probe - scratch-probe"]
    assert (probe["seeds_low"], probe["seeds_high"]) == (probe["low"], probe["high"])
