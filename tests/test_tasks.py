"""minibert.tasks: the registry the CLI, the recipe and the benchmark read; a 3-label task end to end."""

from __future__ import annotations

import json

import pytest

from minibert import finetuning, recipes, tasks
from minibert.cli import build_parser
from minibert.model import BertForSequenceClassification


def test_the_registry_names_each_task_once_and_refuses_unknown_ones():
    assert {"rotten-tomatoes", "capitalisation"} <= set(tasks.TASKS)
    assert tasks.get("rotten-tomatoes").labels == ("rotten", "fresh")
    assert tasks.get("capitalisation").unit == "word"
    with pytest.raises(ValueError, match="task must be one of"):
        tasks.get("ner")
    with pytest.raises(ValueError, match="already registered"):
        tasks.register(tasks.get("capitalisation"))
    with pytest.raises(ValueError, match="task must be one of"):
        recipes.finetune("unused", task="sst-2")


def test_the_cli_offers_the_registered_tasks():
    parser = build_parser()
    args = parser.parse_args(["finetune", "--out", "x", "--task", "capitalisation"])
    assert args.task == "capitalisation"
    with pytest.raises(SystemExit):
        parser.parse_args(["finetune", "--out", "x", "--task", "ner"])


def test_a_subset_larger_than_the_data_is_one_clear_error():
    with pytest.raises(ValueError, match="exceeds the .* training sentences"):
        tasks.get("capitalisation").datasets(None, 64, 10**7, 0)


def _three_way(tok, max_length, train_examples, seed):
    """Which of three words a sentence holds: a 3-label task built for this test."""
    words = ("film", "movie", "story")
    texts = [f"a {words[i % 3]} that i {verb} ." for i in range(96) for verb in ("saw", "liked")]
    labels = [i % 3 for i in range(96) for _ in range(2)]
    make = lambda t, y: finetuning.ClassificationDataset(t, y, tok, max_length)  # noqa: E731
    return make(texts, labels), make(texts[:48], labels[:48]), make(texts[48:96], labels[48:96])


@pytest.mark.slow
def test_a_three_label_task_fine_tunes_from_a_pretrained_folder(tmp_path, monkeypatch):
    # the latent bug: a pretrained folder gave a 2-way head, then "labels must lie in [0, 2)"
    task = tasks.Task(
        name="three-words",
        labels=("film", "movie", "story"),
        shape="text",
        unit="sentence",
        load=_three_way,
        metrics=finetuning.classification_metrics,
        selection=tasks.Selection("balanced_accuracy", finetuning.balanced_accuracy),
        description="which of three words a sentence holds",
    )
    monkeypatch.setitem(tasks.TASKS, task.name, task)
    result = recipes.finetune(
        tmp_path / "three", model="course", task="three-words", steps=30, lr=1e-3,
        batch_size=16, max_length=16, evaluations=2, progress=False,
    )  # fmt: skip
    config = json.loads((result.folder / "config.json").read_text())
    assert config["id2label"] == {"0": "film", "1": "movie", "2": "story"}
    assert len(result.test["confusion"]) == 3 and result.test["unit"] == "sentence"
    assert result.test["accuracy"] > 0.9  # the word is right there: a working 3-way head learns it
    again = BertForSequenceClassification.from_pretrained(result.folder)
    assert again.classifier.out_features == 3


def test_a_balanced_measure_picks_the_model_that_learned_on_an_imbalanced_dev_set():
    # dev: 58 fresh, 42 rotten. One model answers "fresh" everywhere; one learned something
    always_fresh = {"eval_accuracy": 0.58, "eval_recall_0": 0.0, "eval_recall_1": 1.0}
    learned = {"eval_accuracy": 0.56, "eval_recall_0": 0.52, "eval_recall_1": 0.59}
    by_accuracy = tasks.Selection("accuracy", lambda r: r["eval_accuracy"])
    assert by_accuracy.of(always_fresh) > by_accuracy.of(learned)  # accuracy picks the degenerate
    chosen = tasks.get("rotten-tomatoes").selection
    assert chosen.name == "balanced_accuracy"
    assert chosen.of(always_fresh) == 0.5 and chosen.of(learned) == pytest.approx(0.555)
    assert chosen.better(chosen.of(learned), chosen.of(always_fresh))
    assert not chosen.better(0.5, 0.5)  # a tie keeps the earlier evaluation
    lower = tasks.Selection("loss", lambda r: r["eval_loss"], higher_is_better=False)
    assert lower.better(0.3, 0.4) and not lower.better(0.4, 0.3)


@pytest.mark.slow
def test_capitalisation_keeps_its_best_evaluation_by_f1_and_names_its_scores(tmp_path):
    task = tasks.get("capitalisation")
    assert task.selection.name == "f1" and task.positive == "capitalised"
    result = recipes.finetune(
        tmp_path / "caps", model="course", task="capitalisation", train_examples=64,
        steps=12, batch_size=16, max_length=32, evaluations=4, lr=1e-3, progress=False,
    )  # fmt: skip
    evaluated = [h for h in result.history if "eval_loss" in h]
    values = [finetuning.positive_f1(h) for h in evaluated]
    chosen = values.index(max(values))  # the first of the best
    saved = json.loads((result.folder / "results.json").read_text())
    assert saved["selection"]["measure"] == "f1" and saved["selection"]["values"] == values
    assert saved["selection"]["step"] == evaluated[chosen]["step"]
    assert saved["dev"]["f1"] == pytest.approx(max(values))  # the kept weights are the best's
    assert saved["test"]["positive"] == "capitalised" and saved["test"]["unit"] == "word"
    assert {"accuracy", "balanced_accuracy", "precision", "recall", "f1"} <= set(saved["test"])
    assert "dev f1" in result.report() and "'capitalised': precision" in result.report()
    assert tasks.of_folder(result.folder) is task


def test_a_task_shape_must_be_known():
    with pytest.raises(ValueError, match="shape must be one of text, words"):
        tasks.Task("x", ("a", "b"), "spans", "item", None, None, None, "")
