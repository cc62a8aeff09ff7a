"""The `minibert` command: pretrain end to end on the real corpus (briefly), resume, fill-mask, help."""

import json
import re
import subprocess
import sys

import pytest
from conftest import cli as in_process

from minibert import cli


def minibert(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "minibert.cli", *args], capture_output=True, text=True
    )


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    out = tmp_path_factory.mktemp("pretrain")
    args = [
        "pretrain",
        "--preset",
        "tiny",
        "--steps",
        "6",
        "--vocab-size",
        "600",
        "--out",
        str(out),
        "--batch-size",
        "4",
        "--dupe-factor",
        "1",
        "--eval-every",
        "3",
        "--eval-batches",
        "2",
        "--checkpoint-every",
        "3",
        "--dropout",
        "0",
        "--neighbour-steps",
        "3",
        "--mask-rate",
        "0.3",
    ]
    done = in_process(*args)  # the command's main(); the resume below runs it as a process
    assert done.returncode == 0, done.stderr[-2000:]
    return out, args, done.stdout


def _into(args: list[str], out) -> list[str]:
    """The same pretrain arguments with another --out."""
    i = args.index("--out")
    return [*args[: i + 1], str(out), *args[i + 2 :]]


@pytest.fixture(scope="module")
def paused(pretrained, tmp_path_factory):
    """The fixture's run stopped by --stop-after 4 of its 6 steps (in this process: the pause is
    the recipe's; resuming it is a process of its own below); its folder, never changed, and the
    command's output. A test copies the folder before it resumes or damages it."""
    _, args, _ = pretrained
    out = tmp_path_factory.mktemp("paused") / "run"
    done = in_process(*_into(args, out), "--stop-after", "4")
    assert done.returncode == 0, done.stderr[-2000:]
    return out, done.stdout


@pytest.mark.slow
def test_pretrain_writes_a_loadable_model_and_reports_metrics(pretrained):
    out, _, stdout = pretrained
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "model.safetensors", "vocab.txt", "history.json"} <= names
    assert "97 training and 9 held-out documents" in stdout
    assert "held-out: loss" in stdout and "mask_accuracy" in stdout and "nsp_accuracy" in stdout
    history = json.loads((out / "history.json").read_text())
    assert [h["step"] for h in history] == [1, 2, 3, 4, 5, 6]
    assert len((out / "vocab.txt").read_text(encoding="utf-8").splitlines()) <= 600
    # trained with --dropout 0, saved with BERT's 0.1 so fine-tuning is regularised as usual
    config = json.loads((out / "config.json").read_text())
    assert config["hidden_dropout_prob"] == config["attention_probs_dropout_prob"] == 0.1


@pytest.mark.slow
def test_guided_pretraining_saves_a_standard_bert(pretrained):
    import transformers

    out, _, _ = pretrained
    recipe = json.loads((out / "recipe.json").read_text())
    assert recipe["neighbour_steps"] == 3 and recipe["mask_rate"] == 0.3
    _, info = transformers.BertForPreTraining.from_pretrained(out, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]


@pytest.mark.slow
def test_stop_after_pauses_and_resume_finishes(pretrained, paused, tmp_path):
    import shutil

    _, args, _ = pretrained
    args = _into(args, tmp_path / "run")
    folder, stdout = paused
    assert "paused at step 4 of 6" in stdout and "--resume" in stdout
    assert not (folder / "model.safetensors").exists()
    shutil.copytree(folder, tmp_path / "run")
    done = minibert(*args, "--resume")  # a new process reads the state the pause left
    assert done.returncode == 0, done.stderr[-2000:]
    history = json.loads((tmp_path / "run" / "history.json").read_text())
    assert [h["step"] for h in history] == [1, 2, 3, 4, 5, 6]
    bad = in_process(*args, "--stop-after", "7", "--overwrite")
    assert bad.returncode == 2 and "stop_after" in bad.stderr


@pytest.mark.slow
def test_a_finished_run_is_neither_resumed_nor_overwritten(pretrained):
    out, args, _ = pretrained
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    done = in_process(*args, "--resume")  # finished: nothing to resume
    assert done.returncode == 2 and "no interrupted run" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    done = in_process(*args)  # a second run into the same folder
    assert done.returncode == 2 and "--overwrite" in done.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.slow
def test_fill_mask_prints_top_k(pretrained):
    out, _, _ = pretrained
    done = in_process("fill-mask", str(out), "the [MASK] of france is paris .", "--top-k", "3")
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip().splitlines()[0]
    assert line.startswith("[MASK] 1:") and len(line.split("  ")) == 3
    done = in_process("fill-mask", str(out), "no mask here")
    assert done.returncode == 2 and "no [MASK]" in done.stderr  # a bad argument


def test_every_pretrain_option_is_explained():
    parser = cli.build_parser()
    pretrain = parser._subparsers._group_actions[0].choices["pretrain"]
    for action in pretrain._actions:
        if action.option_strings and action.dest != "help":
            assert action.help and len(action.help) > 10, action.dest


def test_classify_refuses_a_folder_without_a_trained_classifier(capsys):
    from minibert import assets

    assert cli.main(["classify", str(assets.course_checkpoint("course")), "a gem of a film"]) == 2
    assert re.search(r"has no trained head .*classifier.weight", capsys.readouterr().err)


def test_a_vocabulary_that_does_not_match_the_weights_is_refused(tmp_path, capsys):
    import shutil

    from minibert import assets
    from minibert.model import BertForMaskedLM

    folder = tmp_path / "course"
    shutil.copytree(assets.course_checkpoint("course"), folder)
    lines = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines(True)
    (folder / "vocab.txt").write_text("".join(lines[:100] + lines[101:]), encoding="utf-8")
    with pytest.raises(ValueError, match="has 7,999 lines but the model's vocab_size is 8,000"):
        BertForMaskedLM.from_pretrained(folder)
    assert cli.main(["fill-mask", str(folder), "the [MASK] of france"]) == 2
    assert "cannot load the model" in capsys.readouterr().err


@pytest.mark.slow
def test_truncated_training_state_is_one_line(pretrained, paused, tmp_path):
    import shutil

    _, args, _ = pretrained
    out = tmp_path / "run"
    args = _into(args, out)
    shutil.copytree(paused[0], out)  # a run paused after 4 steps
    (state,) = out.rglob("training_state.pt")
    state.write_bytes(state.read_bytes()[:1000])  # a disk that filled up, a copy cut short
    done = in_process(*args, "--resume")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert f"{state} is damaged" in done.stderr and "--overwrite" in done.stderr


def test_seed_beyond_the_generators_is_one_line(tmp_path):
    done = in_process(
        "pretrain", "--steps", "2", "--out", str(tmp_path / "x"), "--seed", str(10**20)
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--seed: must be an int in [0, 2**32 - 1], got 100000000000000000000" in done.stderr
    assert not (tmp_path / "x").exists()


def test_damaged_model_folders_are_one_line(tmp_path):
    from minibert import assets

    looping = tmp_path / "looping"
    looping.mkdir()
    modules = [{"path": "", "type": "sentence_transformers.models.Transformer"}]
    (looping / "modules.json").write_text(json.dumps(modules))
    index = tmp_path / "index"
    index.mkdir()
    (index / "config.json").write_bytes(
        (assets.course_checkpoint("course") / "config.json").read_bytes()
    )
    (index / "model.safetensors.index.json").write_text('{"weight_map": 5}')
    huge = tmp_path / "huge"
    huge.mkdir()
    config = json.loads((assets.course_checkpoint("course") / "config.json").read_text())
    (huge / "config.json").write_text(json.dumps(config | {"intermediate_size": 10**9}))
    cases = {looping: "modules.json", index: "model.safetensors.index.json", huge: "config.json"}
    for folder, file in cases.items():
        done = in_process("fill-mask", str(folder), "the [MASK] of france is paris .")
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
        assert len(done.stderr.strip().splitlines()) == 1 and str(folder / file) in done.stderr


def test_ctrl_c_in_any_command_is_one_line_and_exit_130(monkeypatch, capsys):
    """Ctrl-C while `search` built its index: a 60-line KeyboardInterrupt traceback."""
    from minibert.retrieval import index as retrieval_index

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # as Ctrl-C while the paragraphs are encoded

    monkeypatch.setattr(retrieval_index, "Searcher", interrupted)
    assert cli.main(["search", "minilm", "who built the tower?"]) == 130
    err = capsys.readouterr().err
    assert err == "minibert search: interrupted (Ctrl-C)\n"


@pytest.mark.slow
def test_a_reader_that_closes_the_pipe_ends_the_command_quietly():
    """`minibert search ... | head -1`: BrokenPipeError, exit 1. The reader here closes its end
    before the command writes, as `head -1` does once it has its line."""
    import os

    read, write = os.pipe()
    os.close(read)  # nobody reads: the first write fails with EPIPE
    done = subprocess.run(
        [sys.executable, "-m", "minibert", "assignment", "list"],
        stdout=write,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(write)
    assert done.returncode == 0 and done.stderr == "", done.stderr


@pytest.mark.slow
def test_pretrain_recipe_expands_to_its_flags_and_the_users_flags_win():
    from minibert import assets
    from minibert.cli import build_parser, with_recipe

    args = build_parser().parse_args(
        with_recipe(["pretrain", "--recipe", "wikipedia", "--out", "x", "--steps", "10"])
    )
    assert args.steps == 10 and args.preset == "tiny" and args.neighbour_steps == 3000
    # the named recipe is the one the course checkpoint was trained with
    saved = json.loads((assets.course_checkpoint("course") / "recipe.json").read_text())
    full = build_parser().parse_args(with_recipe(["pretrain", "--recipe=wikipedia", "--out", "x"]))
    for key in ("corpus", "preset", "steps", "warmup_steps", "lr", "dropout", "neighbour_steps"):
        assert getattr(full, key) == saved[key], key
    assert with_recipe(["finetune", "--recipe", "wikipedia"]) == [
        "finetune",
        "--recipe",
        "wikipedia",
    ]


def test_unknown_pretrain_recipe_is_refused_with_the_names(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["pretrain", "--recipe", "gpt-5", "--out", "x"])
    assert info.value.code == 2
    assert "wikipedia" in capsys.readouterr().err
