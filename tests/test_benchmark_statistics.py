"""The benchmarks' paired statistics measure what their tables print."""

import json
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
    assert partner("course-mean") == "scratch-mean"  # fine-tuned on the mean: the same
    assert partner("self-mean") == "self-scratch-mean"
    assert partner("scratch") is partner("minilm-scratch-probe") is partner("scratch-mean") is None


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


def test_a_fresh_clone_resumes_from_the_committed_runs(tmp_path, monkeypatch):
    """seed_cache writes the results file's runs into an empty cache, keeps those already there,
    and the cell then finds them instead of training again."""
    results, cache = tmp_path / "results.json", tmp_path / "cache"
    cache.mkdir()
    kept = {"dev_selection": 0.5, "dev_loss": 0.7, "test": {"accuracy": 0.6}}
    results.write_text(json.dumps({"runs": {"rotten-tomatoes/course/256/0.001/0": kept,
                                            "rotten-tomatoes/course/256/0.003/0": kept}}))  # fmt: skip
    newer = cache / "rotten-tomatoes_course_256_0.003_0.json"
    newer.write_text(json.dumps({**kept, "dev_selection": 0.9}) + "\n")
    assert finetuning_shapes.seed_cache(results, cache) == 1
    assert finetuning_shapes.seed_cache(results, cache) == 0
    assert json.loads(newer.read_text())["dev_selection"] == 0.9  # the cache's own run is kept
    monkeypatch.setattr(finetuning_shapes, "OUT", tmp_path / "not-yet.json")
    runs = finetuning_shapes.gather(cache)["runs"]
    assert runs["rotten-tomatoes/course/256/0.001/0"] == kept


def test_baselines_by_size_are_built_from_each_seeds_subset(monkeypatch):
    """A baseline at a size is built from the items seed k's run trains on (task.datasets with
    that size and seed), per seed; 'all' is left to the table's own baselines."""
    asked = []

    class Task:
        max_length = 128

        def datasets(self, tok, max_length, size, seed):
            asked.append((max_length, size, seed))
            return size, seed

        def baseline_scores(self, data, tok):
            size, seed = data
            return {"rule": {"accuracy": size + seed, "f1": -1.0}}

    monkeypatch.setattr(finetuning_shapes.tasks, "get", lambda name: Task())
    monkeypatch.setattr(finetuning_shapes.BertTokenizer, "from_pretrained", lambda path: None)
    got = finetuning_shapes.baselines_by_size("rotten-tomatoes", (64, None), seeds=2)
    assert asked == [(128, 64, 0), (128, 64, 1)]
    assert got == {"64": {"rule": [64, 65]}}  # the task's headline measure, accuracy
    asked.clear()
    finetuning_shapes.baselines_by_size("capitalisation", (256,), seeds=1)
    assert asked == [(64, 256, 0)]  # as benchmarks/finetuning.py ran it


def test_a_seeded_run_without_predictions_serves_the_sweep_and_is_run_again_for_the_table(
    tmp_path, monkeypatch
):
    """The results file keeps test predictions only for the table's runs; seeded into the cache,
    another run may choose a rate on dev, but a seed the table shows is run again."""
    cache = tmp_path / "cache"
    cache.mkdir()
    seeded = {"dev_selection": 0.6, "dev_loss": 0.5, "test": {"accuracy": 0.55}}
    (cache / "rotten-tomatoes_course_256_0.001_0.json").write_text(json.dumps(seeded))
    ran = []

    def fine_tune(task, model, size, lr, seed, epochs, work):
        ran.append((lr, seed))
        return {**seeded, "test_predictions": [1, 0], "dev_selection": 0.1 * seed}

    def choose_lr(trial, rates, **kwargs):
        trial(1e-3)  # the sweep reads the seeded run, and runs nothing

        class Swept:
            chosen = type("Chosen", (), {"lr": 1e-3})

            def as_dict(self):
                return {}

        return Swept()

    monkeypatch.setattr(finetuning_shapes, "fine_tune", fine_tune)
    monkeypatch.setattr(finetuning_shapes, "choose_lr", choose_lr)
    job = ("rotten-tomatoes", "course", 256, 3, 2, cache, tmp_path, False)
    _, row, runs = finetuning_shapes.cell(job)
    assert ran == [(1e-3, 0), (1e-3, 1)]  # seed 0 again, for its predictions
    assert all("test_predictions" in run for run in runs.values())
    with pytest.raises(LookupError):  # nothing runs with --cached-only: the gap is reported
        (cache / "rotten-tomatoes_course_256_0.001_0.json").write_text(json.dumps(seeded))
        finetuning_shapes.cell(job[:-1] + (True,))
