"""The benchmarks' paired statistics measure what their tables print."""

import json
import sys
from pathlib import Path

import pytest

from minibert import finetuning
from minibert.tasks import mentions

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import finetuning_shapes  # noqa: E402  (benchmarks/, beside the tests)
from common import grid  # noqa: E402


def test_span_counts_per_sentence_give_the_span_f1_the_task_reports():
    """wiki-mentions: the bootstrap's F1 of the summed per-sentence counts is the task's span F1."""
    gold = [[0, 1, 2, 0, 1], [1, 0, 0, 0], [0, 0, 1, 2]]  # O, B-MENTION, I-MENTION
    guess = [[0, 1, 2, 0, 0], [1, 2, 0, 1], [0, 0, 1, 2]]  # 1 of 2, 0 of 1 (2 wrong), 1 of 1
    right, guessed, wanted = mentions.span_counts(gold, guess)
    assert (right, guessed, wanted) == (2, 4, 4)
    none = [[0] * len(g) for g in gold]
    measure = grid.Measure.of("wiki-mentions")  # from the task: its spans, not its name
    assert measure.counts and measure.headline == "f1"
    a = [measure.item_scores(gold, none)]
    b = [measure.item_scores(gold, guess)]
    gap = finetuning.paired_bootstrap_f1(a, b, resamples=200)[0]
    assert gap == pytest.approx(2 * right / (guessed + wanted))  # 0.5, the span F1


def test_each_task_measure_comes_from_its_shape_and_scores():
    """The headline and the per-item unit of every task the grid runs, read off the task."""
    assert grid.Measure.of("rotten-tomatoes").headline == "accuracy"
    assert grid.Measure.of("wiki-qnli").item_scores([1, 0], [1, 1]) == [1.0, 0.0]
    caps = grid.Measure.of("review-capitalisation")  # F1 of label 1's words, from counts
    assert caps.counts and caps.item_scores([[1, 0, 1]], [[1, 1, 0]]) == [[1, 1, 1]]
    qa = grid.Measure.of("wiki-qa")  # SQuAD F1 per question, a percentage in the table
    assert qa.headline == "f1" and qa.scale == 100 and not qa.counts


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
    assert partner("minilm-cls") == "minilm-scratch-cls"  # [CLS] without the pooler: the same
    assert partner("scratch") is partner("minilm-scratch-probe") is partner("scratch-mean") is None


def test_the_rows_read_what_their_names_say():
    """-mean and -cls fine-tune the whole model on the tokens' mean or on [CLS] without the
    pooler; -probe trains a linear head on frozen features."""
    text = type("Task", (), {"shape": "text"})()
    models = finetuning_shapes.MODELS
    assert models["course"].options(text) == {}  # BERT's pooled [CLS]
    assert models["course-mean"].options(text) == {"pooling": "mean"}
    assert models["minilm-cls"].options(text) == {"pooling": "cls"}
    assert models["course-probe"].options(text)["freeze_encoder"] is True
    assert models["minilm-scratch-cls"].scratch and models["minilm-cls"].rates == (3e-5, 1e-4)


def test_a_probe_on_a_token_task_names_no_pooling():
    """finetune refuses pooling for a task that is not a sentence classifier (cls included): a
    probe row on a token task passed pooling="cls"."""
    token = type("Task", (), {"shape": "token"})()
    probe = finetuning_shapes.MODELS["course-probe"].options(token)
    assert "pooling" not in probe and probe["freeze_encoder"] is True


def test_intervals_compare_probes_with_probes_and_every_row_with_the_rules(monkeypatch):
    """A probe row's interval is against the random probe, never against fine-tuned weights; a
    fine-tuned row against a rule gets the same paired interval, its seeds drawn too; the pooler
    (-cls minus the plain row) is told from the pooling (-mean minus -cls)."""
    rows = {  # per item 0/1, two seeds, three items
        "scratch": [[1.0, 1.0, 1.0]] * 2,
        "course": [[1.0, 1.0, 1.0]] * 2,
        "scratch-probe": [[0.0, 0.0, 0.0]] * 2,
        "course-probe": [[1.0, 0.0, 1.0]] * 2,
        "course-cls": [[1.0, 1.0, 0.0]] * 2,  # [CLS] without the pooler
        "course-mean": [[1.0, 1.0, 1.0]] * 2,
        "course-english": [[1.0, 0.0, 0.0]] * 2,  # more text: set against the course checkpoint
        "english-scratch": [[0.0, 0.0, 0.0]] * 2,  # and against random weights of its vocabulary
        "self": [[1.0, 1.0, 1.0]] * 2,  # its folder (runs/self) absent: keeps what it had
    }
    kept = {"self - self-scratch": {"difference": 0.5, "low": 0.1, "high": 0.9}}

    class Items:
        def row(self, model, size):
            return rows.get(model) if size == "256" else None

    monkeypatch.setattr(finetuning_shapes, "_items", lambda done, task: Items())
    rule = {"majority class": [[0.0, 1.0, 0.0]] * 2}  # the rule of each seed's own subset
    monkeypatch.setattr(finetuning_shapes, "_rules", lambda *args: rule)
    monkeypatch.setattr(finetuning_shapes, "_on_this_machine", lambda source: source != "runs/self")
    done = {
        "table": {"rotten-tomatoes": {m: {} for m in rows}},
        "intervals": {"rotten-tomatoes": {"256": kept}},
    }
    found = finetuning_shapes.intervals(done)["rotten-tomatoes"]["256"]
    assert set(found) == {
        "course - scratch",
        "course-probe - scratch-probe",
        "course-cls - course",  # what the pooler does
        "course-mean - course-cls",  # what the mean does
        "course-english - english-scratch",
        "course-english - course",  # more text minus less
        "self - self-scratch",  # as it was
        *(
            f"{m} - majority class"
            for m in (
                "course",
                "scratch",
                "course-cls",
                "course-mean",
                "course-english",
                "english-scratch",
            )
        ),
    }
    assert found["course-english - course"]["difference"] == pytest.approx(-2 / 3)
    assert found["course-english - english-scratch"]["difference"] == pytest.approx(1 / 3)
    assert found["self - self-scratch"] == kept["self - self-scratch"]
    assert found["course-cls - course"]["difference"] == pytest.approx(-1 / 3)
    assert found["course-mean - course-cls"]["difference"] == pytest.approx(1 / 3)
    assert found["course-probe - scratch-probe"]["difference"] == pytest.approx(2 / 3)
    assert found["course - scratch"]["difference"] == 0
    assert found["course - majority class"]["difference"] == pytest.approx(2 / 3)
    assert "seeds_low" in found["course - majority class"]  # as model against model
    # the same two seeds agree, so drawing the seeds too gives the items' interval again
    probe = found["course-probe - scratch-probe"]
    assert (probe["seeds_low"], probe["seeds_high"]) == (probe["low"], probe["high"])


def test_a_fresh_clone_resumes_from_the_committed_runs(tmp_path):
    """seed_from writes the results file's runs into an empty cache, keeps those already there,
    and gather then finds them."""
    results, cache = tmp_path / "results.json", grid.RunCache(tmp_path / "cache")
    cache.folder.mkdir()
    kept = {"dev_selection": 0.5, "dev_loss": 0.7, "test": {"accuracy": 0.6}}
    results.write_text(json.dumps({"runs": {"rotten-tomatoes/course/256/0.001/0": kept,
                                            "rotten-tomatoes/course/256/0.003/0": kept}}))  # fmt: skip
    newer = cache.folder / "rotten-tomatoes_course_256_0.003_0.json"
    newer.write_text(json.dumps({**kept, "dev_selection": 0.9}) + "\n")
    assert cache.seed_from(results) == 1
    assert cache.seed_from(results) == 0
    assert json.loads(newer.read_text())["dev_selection"] == 0.9  # the cache's own run is kept
    runs = cache.gather(tmp_path / "not-yet.json")["runs"]
    assert runs["rotten-tomatoes/course/256/0.001/0"] == kept


def test_baselines_by_size_are_built_from_each_seeds_subset(monkeypatch):
    """A baseline at a size is built from the items seed k's run trains on (task.datasets with
    that size and seed), per seed; 'all' is left to the table's own baselines."""
    asked = []

    class Task:
        max_length = 128
        shape = "text"

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
    assert asked == [(64, 256, 0)]  # a sentence cut at 64 pieces, as its runs are


def _fake_sweep(monkeypatch, lr=1e-3):
    """choose_lr that tries one rate with the choosing seed and chooses it."""

    def choose_lr(trial, rates, **kwargs):
        trial(lr)

        class Swept:
            chosen = type("Chosen", (), {"lr": lr})

            def as_dict(self):
                return {}

        return Swept()

    monkeypatch.setattr(grid, "choose_lr", choose_lr)


def test_a_seeded_run_without_predictions_serves_the_sweep_and_is_run_again_for_the_table(
    tmp_path, monkeypatch
):
    """The results file keeps test predictions only for the table's runs; seeded into the cache,
    a run may choose a rate on dev, but a seed the table shows is run again."""
    cache = tmp_path / "cache"
    cache.mkdir()
    seeded = {"dev_selection": 0.6, "dev_loss": 0.5, "test": {"accuracy": 0.55}}
    for seed in (0, 1):
        (cache / f"rotten-tomatoes_course_256_0.001_{seed}.json").write_text(json.dumps(seeded))
    ran = []

    def fine_tune(job, lr, seed):
        ran.append((lr, seed))
        return {**seeded, "test_predictions": [1, 0], "dev_selection": 0.7}

    _fake_sweep(monkeypatch)
    job = grid.Job("rotten-tomatoes", finetuning_shapes.MODELS["course"], 256, cache, tmp_path)
    row, runs = grid.cell(job, fine_tune)
    assert ran == [(1e-3, 1), (1e-3, 2)]  # the reported seeds, again for their predictions
    assert all("test_predictions" in run for key, run in runs.items() if key in row["runs"])
    with pytest.raises(LookupError):  # nothing runs with --cached-only: the gap is reported
        (cache / "rotten-tomatoes_course_256_0.001_1.json").write_text(json.dumps(seeded))
        grid.cell(grid.Job("rotten-tomatoes", job.model, 256, cache, tmp_path, cached_only=True))
