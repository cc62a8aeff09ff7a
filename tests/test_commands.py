"""minibert.commands.models: fill-mask, classify, tag and answer; each registered task's folder
answered by the command of its shape, and refused in one line by the others."""

from __future__ import annotations

import pytest

from minibert import assets, cli, inference, recipes, tasks
from minibert.model import BertForSequenceClassification
from minibert.tokenization import BertTokenizer

CONTEXT = "the tower was built by gustave eiffel in paris ."
ARGS = {  # what each command is given
    "classify": ["a gem of a film"],
    "tag": ["the eiffel tower is in paris ."],
    "answer": ["--question", "who built the tower ?", "--context", CONTEXT],
}
COMMAND = {"text": "classify", "words": "tag", "span": "answer"}


def _args(task, command: str) -> list[str]:
    """The command's arguments for a folder of this task (a pair for a pair task)."""
    return ["who built it ?", "eiffel did ."] if task.pairs else ARGS[command]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A run fine-tuned (two steps) on every registered task."""
    root = tmp_path_factory.mktemp("tasks")
    return {
        name: recipes.finetune(
            root / name,
            model="course",
            task=name,
            train_examples=32,
            steps=2,
            batch_size=16,
            max_length=96 if tasks.get(name).shape == "span" else 32,  # room for the context
            evaluations=1,
            progress=False,
        )  # fmt: skip
        for name in tasks.TASKS
    }


@pytest.fixture(scope="module")
def folders(runs):
    return {name: run.folder for name, run in runs.items()}


TEST_SCORES = {  # what `minibert finetune` reports of test, by the task's own names
    "wiki-qa": "exact match",  # SQuAD's, in percent
    "wiki-mentions": "span precision",  # CoNLL's
    "wiki-qnli": "balanced accuracy",
    "rotten-tomatoes": "balanced accuracy",
    "capitalisation": "'capitalised': precision",
    "review-capitalisation": "'capitalised': precision",
}


@pytest.mark.parametrize("name", sorted(tasks.TASKS))
def test_every_tasks_report_gives_its_test_scores_by_their_names(runs, name):
    lines = runs[name].report().splitlines()
    test = next(line for line in lines if line.startswith("test ("))
    assert TEST_SCORES[name] in test and "F1" in test
    assert lines[-2].startswith("saved the fine-tuned model")


def test_finetune_on_the_span_task_prints_squads_scores(tmp_path, capsys):
    assert cli.main(["finetune", "--model", "course", "--task", "wiki-qa", "--out",
                     str(tmp_path / "qa"), "--train-examples", "16", "--steps", "1",
                     "--batch-size", "16", "--max-length", "96"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "exact match" in out and "(SQuAD v1.1, percent)" in out


@pytest.mark.parametrize("name", sorted(tasks.TASKS))
def test_every_tasks_folder_is_answered_by_the_command_of_its_shape(folders, name, capsys):
    task, folder = tasks.get(name), folders[name]
    assert tasks.of_folder(folder) is task
    command = COMMAND[task.shape]
    assert cli.main([command, str(folder), *_args(task, command)]) == 0
    lines = capsys.readouterr().out.splitlines()
    if command == "answer":  # the answer's text alone, then its probability and characters
        assert lines[0] in CONTEXT and lines[1].startswith("probability ")
    else:
        labels = {line.split("\t")[0 if command == "classify" else 1] for line in lines}
        assert labels <= set(task.labels) and len(lines) == 1 + 6 * (command == "tag")
    if command == "tag":  # a line per word, pieces joined back
        assert [line.split("\t")[0] for line in lines] == ["the", "eiffel", "tower", "is", "in",
                                                           "paris", "."]  # fmt: skip
    for other in (c for c in ARGS if c != command):
        assert cli.main([other, str(folder), *ARGS[other]]) == 1
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"use `minibert {command} {folder}" in err
        assert f"task {name}" in err


def test_a_pair_tasks_folder_takes_text_and_text_b(folders, capsys):
    folder = folders["wiki-qnli"]
    assert cli.main(["classify", str(folder), "who built it ?"]) == 1
    assert "give TEXT TEXT_B" in capsys.readouterr().err


def test_answer_reads_a_context_file_and_refuses_an_empty_question(folders, tmp_path, capsys):
    (tmp_path / "paragraph.txt").write_text(CONTEXT, encoding="utf-8")
    folder = str(folders["wiki-qa"])
    assert cli.main(["answer", folder, "--question", "who?", "--context",
                     str(tmp_path / "paragraph.txt")]) == 0  # fmt: skip
    assert capsys.readouterr().out.splitlines()[0] in CONTEXT
    assert cli.main(["answer", folder, "--question", " ", "--context", CONTEXT]) == 1
    assert "not empty" in capsys.readouterr().err


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
