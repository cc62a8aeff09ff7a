"""minibert.tasks.shapes: a shape owns its model class, head size, collate, predictions, result
line and command. A fake fifth shape registered here reaches `finetune`, its command and --help
with no file of the package changed; each registered shape's pieces are the ones the recipe and
the commands use."""

from __future__ import annotations

import dataclasses
import json

import pytest

from minibert import cli, finetuning, inference, recipes, tasks
from minibert.model import BertForSequenceClassification
from minibert.recipes import finetune_recipe
from minibert.tasks.shapes import Argument, Command, Shape


class BertForParity(BertForSequenceClassification):
    """The fake shape's model: a sequence classifier under its own name (config's architectures)."""


CALLS = {"collate": 0}


def _collate(items, pad_token_id):
    CALLS["collate"] += 1
    return finetuning.collate(items, pad_token_id)


def _predict(net, data, collate):
    return tasks.SHAPES["text"].predict(net, data, collate)


def _ask(args, model, tok, task):
    ((name, _),) = inference.classify(model, tok, [args.text])
    return [f"parity says {name} ({task.name if task else 'no task'})"]


FAKE = Shape(
    "parity",
    BertForParity,
    _predict,
    lambda data: [data[i]["labels"] for i in range(len(data))],
    collate=_collate,
    head_size=lambda task: 3,  # not one output per label: the shape decides
    result_line=lambda t: f"parity right {t['accuracy']:.2f}",
    command=Command(
        "parity",
        "say whether a text has an even number of words",
        "a folder fine-tuned for the parity shape",
        "says a text's parity",
        (Argument("text", "the text, in quotes"),),
        _ask,
    ),
)


def _load(tok, max_length, train_examples, seed):
    texts = [" ".join(["word"] * n) + " ." for n in range(1, 33)]
    labels = [n % 2 for n in range(1, 33)]
    data = finetuning.ClassificationDataset(texts, labels, tok, max_length)
    return data, data, data


@pytest.fixture
def fake(monkeypatch):
    """The fake shape and a task of it, registered for one test."""
    monkeypatch.setitem(tasks.SHAPES, FAKE.name, FAKE)
    task = tasks.Task(
        name="parity-words",
        labels=("odd", "even"),
        shape="parity",
        unit="text",
        load=_load,
        metrics=finetuning.classification_metrics,
        selection=tasks.Selection("accuracy", lambda r: r["eval_accuracy"]),
        description="is the number of words even?",
    )
    monkeypatch.setitem(tasks.TASKS, task.name, task)
    return task


@pytest.mark.slow
def test_a_fifth_shape_reaches_finetune_its_command_and_help(fake, tmp_path, capsys):
    CALLS["collate"] = 0
    result = recipes.finetune(
        tmp_path / "parity", model="course", task="parity-words", steps=2, batch_size=8,
        max_length=40, evaluations=1, progress=False,
    )  # fmt: skip
    assert CALLS["collate"] > 0  # the shape's collate made the batches
    config = json.loads((result.folder / "config.json").read_text())
    assert config["architectures"] == ["BertForParity"] and len(config["id2label"]) == 3
    assert "test (32 texts): parity right" in result.report()  # the shape's result line
    assert cli.main(["parity", str(result.folder), "word word ."]) == 0
    assert capsys.readouterr().out.startswith("parity says ")
    assert cli.main(["classify", str(result.folder), "word ."]) == 2  # refused, naming its own
    assert "says a text's parity" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "parity" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["parity", "--help"])
    assert "say whether a text has an even number of words" in capsys.readouterr().out


def test_a_shapes_verb_is_its_own():
    taken = Shape("other", BertForParity, _predict, list, command=tasks.SHAPES["text"].command)
    with pytest.raises(ValueError, match="'classify' answers shape 'text' already"):
        tasks.register_shape(taken)
    with pytest.raises(ValueError, match="already registered"):
        tasks.register_shape(tasks.SHAPES["text"])


@pytest.mark.parametrize("name", sorted(tasks.TASKS))
def test_each_tasks_head_size_collate_and_result_line_come_from_its_shape(name, monkeypatch):
    task = tasks.get(name)
    calls = []
    spy = dataclasses.replace(
        tasks.SHAPES[task.shape],
        head_size=lambda t: 7,
        collate=lambda items, pad: calls.append(pad) or {"spied": len(items)},
        result_line=lambda t: "the shape's line",
    )
    monkeypatch.setitem(tasks.SHAPES, task.shape, spy)
    assert task.head_size == 7 and task.label_names is None  # 7 outputs: no name per label
    assert task.collate([{}, {}], 5) == {"spied": 2} and calls == [5]
    scores = ("accuracy", "balanced_accuracy", "precision", "recall", "f1", "exact_match")
    test = {**dict.fromkeys(scores, 0.5), "positive": "x", "examples": 3, "unit": task.unit}
    line = finetune_recipe._test_line(test, name)
    assert line.startswith(f"test (3 {task.unit}s): ")
    if task.result_line is None:  # a task with its own score brings its own line (CoNLL's)
        assert line.endswith("the shape's line")
    verb = spy.command.verb if spy.command else "search"  # the vector shape's: minibert search
    assert verb in cli.build_parser().format_help()  # each shape has its command


def test_the_text_and_word_shapes_have_a_head_of_one_output_per_label():
    assert tasks.get("rotten-tomatoes").head_size == 2
    assert tasks.get("wiki-mentions").head_size == len(tasks.get("wiki-mentions").labels)
    assert tasks.get("wiki-swag").head_size == 1
    assert tasks.SHAPES["text"].collate is finetuning.collate
