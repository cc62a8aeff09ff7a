"""minibert.commands.models: fill-mask, classify and tag; each registered task's folder answered
by the command of its shape, and refused in one line by the others."""

from __future__ import annotations

import pytest

from minibert import assets, cli, inference, recipes, tasks
from minibert.model import BertForSequenceClassification
from minibert.tokenization import BertTokenizer

SAMPLE = {"text": "a gem of a film", "words": "the eiffel tower is in paris ."}
COMMAND = {"text": "classify", "words": "tag"}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A folder fine-tuned (two steps) on every registered task."""
    root = tmp_path_factory.mktemp("tasks")
    return {
        name: recipes.finetune(
            root / name,
            model="course",
            task=name,
            train_examples=32,
            steps=2,
            batch_size=16,
            max_length=32,
            evaluations=1,
            progress=False,
        ).folder  # fmt: skip
        for name in tasks.TASKS
    }


@pytest.mark.parametrize("name", sorted(tasks.TASKS))
def test_every_tasks_folder_is_answered_by_the_command_of_its_shape(folders, name, capsys):
    task, folder = tasks.get(name), folders[name]
    assert tasks.of_folder(folder) is task
    assert cli.main([COMMAND[task.shape], str(folder), SAMPLE[task.shape]]) == 0
    lines = capsys.readouterr().out.splitlines()
    labels = {line.split("\t")[0 if task.shape == "text" else 1] for line in lines}
    assert labels <= set(task.labels) and lines
    if task.shape == "words":  # a line per word, pieces joined back
        assert [line.split("\t")[0] for line in lines] == ["the", "eiffel", "tower", "is", "in",
                                                          "paris", "."]  # fmt: skip
    other = next(c for s, c in COMMAND.items() if s != task.shape)
    assert cli.main([other, str(folder), SAMPLE[task.shape]]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"use `minibert {COMMAND[task.shape]} {folder}" in err
    assert f"task {name}" in err


def test_classify_takes_sentence_pairs(folders, capsys):
    folder = folders["rotten-tomatoes"]
    model = BertForSequenceClassification.from_pretrained(folder)
    tok = BertTokenizer.from_pretrained(folder)
    pairs = inference.classify(model, tok, ["who built it ?", "when ?"], ["eiffel did .", "now"])
    assert len(pairs) == 2 and all(label in ("rotten", "fresh") for label, _ in pairs)
    batch = tok.encode_batch([("who built it ?", "eiffel did .")])
    assert batch["token_type_ids"].max() == 1  # the second text is segment B
    with pytest.raises(ValueError, match="2 texts but 1 text_pairs"):
        inference.classify(model, tok, ["a", "b"], ["c"])
    assert cli.main(["classify", str(folder), "who built it ?", "--pair", "eiffel did ."]) == 0
    assert capsys.readouterr().out.rstrip().endswith("who built it ? | eiffel did .")


def test_a_pretrained_folder_is_not_fine_tuned(capsys):
    assert cli.main(["tag", str(assets.course_checkpoint()), "the eiffel tower"]) == 1
    assert "has no trained head" in capsys.readouterr().err
