"""minibert.commands.models: fill-mask and each shape's command (classify, tag, answer, choose);
each registered task's folder answered by the command of its shape, and refused in one line by
the others."""

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
    "choose": ["the tower was built in 1889 .", "--choice", "it is made of iron .", "--choice",
               "cats sleep a lot ."],
}  # fmt: skip
COMMAND = {  # the shape's own; the vector shape's folders are searched by `minibert search`
    name: shape.command.verb if shape.command else "search" for name, shape in tasks.SHAPES.items()
}


def _args(task, command: str) -> list[str]:
    """The command's arguments for a folder of this task (a pair for a pair task)."""
    if command == "search":  # an encoder's folder (wiki-search): a query
        return ["who built the tower ?", "--top-k", "2"]
    return ["who built it ?", "eiffel did ."] if task.pairs else ARGS[command]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A run fine-tuned (two steps) on every registered task: one evaluation, on one batch of dev
    (it only has to pick the weights); dev and test are then measured whole, as always."""
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
            eval_batches=1,
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
    "wiki-swag": "accuracy",  # the share of items whose right choice is picked
    "wiki-search": "MRR@10",  # and recall@1/5/20, over every paragraph
    "wiki-ict": "MRR@10",  # wiki-search's measures
    "wiki-simcse": "MRR@10",
    "wiki-rerank": "balanced accuracy",  # of (question, paragraph) pairs: relevant or not
}


@pytest.mark.parametrize("name", sorted(tasks.TASKS))
@pytest.mark.slow
def test_every_tasks_report_gives_its_test_scores_by_their_names(runs, name):
    lines = runs[name].report().splitlines()
    test = next(line for line in lines if line.startswith("test ("))
    shape = tasks.get(name).shape
    assert TEST_SCORES[name] in test and ("F1" in test or shape in ("choice", "vector"))
    assert lines[-2].startswith("saved the fine-tuned model")


@pytest.mark.slow
def test_finetune_on_the_span_task_prints_squads_scores(tmp_path, capsys):
    assert cli.main(["finetune", "--model", "course", "--task", "wiki-qa", "--out",
                     str(tmp_path / "qa"), "--train-examples", "16", "--steps", "1",
                     "--batch-size", "16", "--max-length", "96"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "exact match" in out and "(SQuAD v1.1, percent)" in out


@pytest.mark.parametrize("name", sorted(tasks.TASKS))
@pytest.mark.slow
def test_every_tasks_folder_is_answered_by_the_command_of_its_shape(
    folders, name, capsys, monkeypatch
):
    from minibert.retrieval import Passage, corpus

    paris = [Passage("Paris", 0, "the tower is in paris ."), Passage("Cats", 0, "cats sleep .")]
    monkeypatch.setattr(corpus, "wiki_passages", lambda: paris)  # a small haystack
    task, folder = tasks.get(name), folders[name]
    assert tasks.of_folder(folder) is task
    command = COMMAND[task.shape]
    assert cli.main([command, str(folder), *_args(task, command)]) == 0
    lines = capsys.readouterr().out.splitlines()
    if command == "answer":  # the answer's text alone, then its probability and characters
        assert lines[0] in CONTEXT and lines[1].startswith("probability ")
    elif command == "search":  # rank, score, article and paragraph; then the paragraph
        assert [line[:2] for line in lines[::2]] == ["1\t", "2\t"]
        assert {lines[1], lines[3]} == {"    the tower is in paris .", "    cats sleep ."}
    elif command == "choose":  # each choice with its probability, the most probable first
        assert sorted(line.split("\t")[1] for line in lines) == ["cats sleep a lot .",
                                                                 "it is made of iron ."]  # fmt: skip
    else:
        labels = {line.split("\t")[0 if command == "classify" else 1] for line in lines}
        assert labels <= set(task.labels) and len(lines) == 1 + 6 * (command == "tag")
    if command == "tag":  # a line per word, pieces joined back
        assert [line.split("\t")[0] for line in lines] == ["the", "eiffel", "tower", "is", "in",
                                                           "paris", "."]  # fmt: skip
    for other in (c for c in ARGS if c != command):
        assert cli.main([other, str(folder), *ARGS[other]]) == 2  # the folder given: a bad argument
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"use `minibert {command} {folder}" in err
        assert f"task {name}" in err


@pytest.mark.slow
def test_a_pair_tasks_folder_takes_text_and_text_b(folders, capsys):
    folder = folders["wiki-qnli"]
    assert cli.main(["classify", str(folder), "who built it ?"]) == 1
    assert "give TEXT TEXT_B" in capsys.readouterr().err


@pytest.mark.slow
def test_answer_reads_a_context_file_and_refuses_an_empty_question(folders, tmp_path, capsys):
    (tmp_path / "paragraph.txt").write_text(CONTEXT, encoding="utf-8")
    folder = str(folders["wiki-qa"])
    assert cli.main(["answer", folder, "--question", "who?", "--context",
                     str(tmp_path / "paragraph.txt")]) == 0  # fmt: skip
    assert capsys.readouterr().out.splitlines()[0] in CONTEXT
    assert cli.main(["answer", folder, "--question", " ", "--context", CONTEXT]) == 2
    assert "the question is empty" in capsys.readouterr().err


@pytest.mark.slow
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
    assert cli.main(["classify", str(folder), "who built it ?", "--pair", "eiffel did ."]) == 2
    assert "labels single texts (rotten-tomatoes), not pairs" in capsys.readouterr().err


def test_a_pretrained_folder_is_not_fine_tuned(capsys):
    assert cli.main(["tag", str(assets.course_checkpoint("course")), "the eiffel tower"]) == 2
    assert "has no trained head" in capsys.readouterr().err


@pytest.mark.slow
def test_choose_refuses_a_folder_that_cannot_choose_with_one_line_and_exit_2(
    folders, tmp_path, capsys
):
    """`choose` exited 1 for these folders where `search` and `ask` exit 2: a wrong folder is a
    bad argument."""
    context = ["it rained .", "--choice", "so .", "--choice", "we got wet ."]
    wrong = {
        str(tmp_path / "nowhere"): "no checkpoint folder",
        str(assets.course_checkpoint("course")): "has no trained head",
        str(folders["rotten-tomatoes"]): "use `minibert classify",
        str(folders["wiki-search"]): "use `minibert search",
        str(folders["wiki-qa"]): "use `minibert answer",
    }
    for folder, says in wrong.items():
        _one_line(capsys, 2, says, cli.main(["choose", folder, *context]))


# --- one line, exit code 2, for every bad input ---------------------------------------------------


def _one_line(capsys, code: int, says: str, got: int) -> None:
    out, err = capsys.readouterr()
    assert got == code and says in err and len(err.strip().splitlines()) == 1, (got, err)


@pytest.mark.slow
def test_answer_reads_a_long_pasted_paragraph_as_text(folders, tmp_path, capsys):
    """A paragraph over 255 bytes as --context was tried as a path: OSError File name too long."""
    folder = str(folders["wiki-qa"])
    paragraph = " ".join([CONTEXT] * 12)  # 588 characters
    assert cli.main(["answer", folder, "--question", "who built it ?", "--context", paragraph]) == 0
    assert capsys.readouterr().out.splitlines()[0] in paragraph
    got = cli.main(["answer", folder, "--question", "who?", "--context", str(tmp_path)])
    _one_line(capsys, 2, "is a folder; give a text or a file", got)
    got = cli.main(["answer", folder, "--question", "who?", "--context", "notes.txt"])
    _one_line(capsys, 2, "no file notes.txt", got)


@pytest.mark.parametrize("text", ["", "   ", "\x00\x01", "\t\n"])
@pytest.mark.slow
def test_empty_or_control_only_text_is_refused_by_every_command(folders, capsys, text):
    """classify "" answered "rotten 0.590" while tag and answer refused empty text."""
    rt, qnli = str(folders["rotten-tomatoes"]), str(folders["wiki-qnli"])
    caps, qa = str(folders["capitalisation"]), str(folders["wiki-qa"])
    swag = str(folders["wiki-swag"])
    for command in (
        ["classify", rt, text],
        ["classify", qnli, "who built it ?", text],
        ["tag", caps, text],
        ["answer", qa, "--question", "who?", "--context", text],
        ["choose", swag, text, "--choice", "it rained .", "--choice", "so ."],
        ["choose", swag, "it rained .", "--choice", "so .", "--choice", text],
        ["fill-mask", str(assets.course_checkpoint("course")), text],
    ):
        _one_line(capsys, 2, "is empty (or only spaces and control characters)", cli.main(command))


@pytest.mark.slow
def test_a_pair_task_without_results_json_is_known_by_its_labels(folders, tmp_path, capsys):
    """A wiki-qnli folder without results.json classified its two texts separately."""
    import shutil

    copy = tmp_path / "qnli"
    shutil.copytree(folders["wiki-qnli"], copy)
    (copy / "results.json").unlink()
    assert cli.main(["classify", str(copy), "who built it ?", "eiffel built it ."]) == 0
    assert capsys.readouterr().out.rstrip().endswith("who built it ? | eiffel built it .")


@pytest.mark.slow
def test_a_model_that_outputs_nan_is_refused(folders, tmp_path, capsys):
    """A model with NaN weights printed "rotten nan", exit 0."""
    import torch

    folder = folders["rotten-tomatoes"]
    model = BertForSequenceClassification.from_pretrained(folder)
    with torch.no_grad():
        model.classifier.weight.fill_(float("nan"))
    model.save_pretrained(tmp_path / "nan")
    BertTokenizer.from_pretrained(folder).save_pretrained(tmp_path / "nan")
    (tmp_path / "nan" / "results.json").write_text('{"task": "rotten-tomatoes"}')
    got = cli.main(["classify", str(tmp_path / "nan"), "a gem of a film"])
    _one_line(capsys, 2, "outputs are not numbers (NaN or inf)", got)


@pytest.mark.slow
def test_tag_takes_the_models_positions_and_cuts_only_when_asked(folders, capsys):
    """130 words: "truncate them (truncation=True)", an option tag does not have, at 512."""
    folder = str(folders["capitalisation"])
    text = " ".join(["the tower is in paris ."] * 30)  # 180 words, more than 128 positions
    got = cli.main(["tag", folder, text])
    _one_line(capsys, 2, "more than the model's 128 positions", got)
    assert cli.main(["tag", folder, text, "--max-length", "128"]) == 0
    assert 100 < len(capsys.readouterr().out.splitlines()) < 180  # its first words only


@pytest.mark.slow
def test_a_results_json_whose_task_is_not_a_name_is_one_line(folders, tmp_path, capsys):
    import shutil

    copy = tmp_path / "rt"
    shutil.copytree(folders["rotten-tomatoes"], copy)
    (copy / "results.json").write_text('{"task": ["rotten-tomatoes"]}')
    got = cli.main(["classify", str(copy), "a gem"])
    _one_line(capsys, 1, "is damaged (its task is", got)
