"""minibert.recipes.outputs: one writer per folder, a manifest, atomic replacement, no leftovers.

Each test names the case it checks: overwriting, an interrupted replacement, the lock, abandoned
runs, refusals that leave nothing behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import cli

from minibert import recipes
from minibert.options import build
from minibert.recipes import finetune_recipe, outputs, pretrain_recipe
from minibert.recipes.outputs import LOCK, MANIFEST, RUN_FOLDER, FolderBusy, OutputFolder
from minibert.tokenization import BertTokenizer

WORDS = (
    "the river runs past the old mill and the town grows around its banks . farmers bring grain "
    "to the mill every autumn and the miller keeps a share . a bridge was built in the last "
    "century and the road now carries trucks across the water . children swim there in summer ."
).split(" . ")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A folder of 12 short documents: pretraining on it takes a second or two."""
    folder = tmp_path_factory.mktemp("corpus")
    for i in range(12):
        sentences = [f"{WORDS[(i + j) % len(WORDS)]} number {i} ." for j in range(6)]
        (folder / f"doc{i:02}.txt").write_text("\n\n".join(sentences) + "\n", encoding="utf-8")
    return folder


def pretrain(out, corpus, **changes):
    options = dict(steps=2, preset="tiny", corpus=corpus, vocab_size=120, max_len=32,
                   batch_size=4, dupe_factor=1, eval_batches=1, checkpoint_every=None,
                   objective="none", progress=False)  # fmt: skip
    return recipes.pretrain(out, **{**options, **changes})


def finetune(out, **changes):
    options = dict(model="course", train_examples=64, steps=1, batch_size=32, evaluations=1,
                   progress=False)  # fmt: skip
    return recipes.finetune(out, **{**options, **changes})


@pytest.mark.slow
def test_a_model_lists_its_own_files_in_its_manifest(tmp_path, corpus):
    out = pretrain(tmp_path / "m", corpus).folder
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["by"] == "minibert pretrain"
    assert set(manifest["files"]) == {p.name for p in out.iterdir()} - {MANIFEST}
    assert {"config.json", "model.safetensors", "vocab.txt", "recipe.json"} <= set(
        manifest["files"]
    )
    assert not (out / RUN_FOLDER).exists() and not (out / LOCK).exists()


@pytest.mark.slow
def test_overwrite_never_deletes_a_file_no_run_wrote(tmp_path, corpus):
    notes = tmp_path / "notes"  # a folder holding no model, only the user's files
    notes.mkdir()
    for name in ("README.md", "curves.png", "card.json", "history.json"):
        (notes / name).write_text(f"the user's {name}\n", encoding="utf-8")
    before = {p.name: p.read_bytes() for p in notes.iterdir()}
    with pytest.raises(ValueError, match=r"no minibert run wrote \(README.md, card.json, curves"):
        pretrain(notes, corpus, overwrite=True)
    with pytest.raises(ValueError, match="is not empty"):
        finetune(notes)
    assert {p.name: p.read_bytes() for p in notes.iterdir()} == before
    model = pretrain(tmp_path / "m", corpus).folder  # a model of ours, with a README added later
    (model / "README.md").write_text("my notes on this model\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"no minibert run wrote \(README.md\)"):
        pretrain(model, corpus, overwrite=True, seed=1)
    assert (model / "README.md").read_text() == "my notes on this model\n"


@pytest.mark.slow
def test_overwrite_replaces_the_files_its_manifest_lists(tmp_path, corpus):
    out = pretrain(tmp_path / "m", corpus).folder
    (out / "card.json").write_text("{}\n", encoding="utf-8")  # written beside it by a card script
    outputs.add_to_manifest(out, ["card.json"])
    pretrain(out, corpus, overwrite=True, seed=1)  # the card described the old model: it goes
    assert not (out / "card.json").exists()
    assert json.loads((out / "recipe.json").read_text())["seed"] == 1
    assert json.loads((out / MANIFEST).read_text())["files"] == sorted(
        p.name for p in out.iterdir() if p.name != MANIFEST
    )


@pytest.mark.slow
def test_an_interrupted_replacement_is_completed_on_the_next_start(tmp_path, monkeypatch):
    out = finetune(tmp_path / "rt").folder
    (out / "card.json").write_text("{}\n", encoding="utf-8")
    outputs.add_to_manifest(out, ["card.json"])
    moved, real_replace = [], os.replace

    def killed_after_two(src, dst):  # the process dies in the middle of the moves into place
        if not str(src).endswith(".partial"):  # not a file being written: a move
            if len(moved) == 2:
                raise KeyboardInterrupt
            moved.append(dst)
        real_replace(src, dst)

    monkeypatch.setattr(outputs.os, "replace", killed_after_two)
    with pytest.raises(KeyboardInterrupt):
        finetune(out, overwrite=True, seed=7)
    monkeypatch.setattr(outputs.os, "replace", real_replace)
    assert (out / RUN_FOLDER / "replace.json").is_file()  # the moves were decided, not done
    assert not (out / "card.json").exists()  # the old model's own files went first
    with OutputFolder(out, overwrite=True):  # the next start completes them
        pass
    results = json.loads((out / "results.json").read_text())
    assert results["options"]["seed"] == 7  # the new model, whole
    from minibert.model import BertForSequenceClassification

    BertForSequenceClassification.from_pretrained(out)
    assert not (out / RUN_FOLDER).exists()
    assert set(json.loads((out / MANIFEST).read_text())["files"]) == (
        {p.name for p in out.iterdir()} - {MANIFEST}
    )


@pytest.mark.slow
def test_a_failure_before_the_moves_leaves_the_old_model_whole(tmp_path, monkeypatch):
    out = finetune(tmp_path / "rt").folder
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def full_disk(self, folder):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(BertTokenizer, "save_pretrained", full_disk)
    with pytest.raises(OSError, match="No space left"):
        finetune(out, overwrite=True, seed=1)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # and no .run left


@pytest.mark.slow
def test_a_second_run_into_a_locked_folder_is_refused_naming_the_first(tmp_path):
    out = tmp_path / "rt"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from minibert.recipes.outputs import "
         "OutputFolder; OutputFolder(sys.argv[1]).__enter__(); print('locked', flush=True); "
         "time.sleep(120)", str(out)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(
            FolderBusy, match=rf"being written by another run \(process {holder.pid}"
        ):
            finetune(out)
    finally:
        holder.kill()  # kill -9: the system releases its lock
        holder.wait()
    result = finetune(out, overwrite=True)  # its lock file is left, nothing else: ours
    assert (result.folder / "model.safetensors").is_file() and not (out / LOCK).exists()


@pytest.mark.slow
def test_the_lock_is_held_for_the_whole_run(tmp_path, monkeypatch):
    out = tmp_path / "rt"
    seen = []

    def second_run(*args, **kwargs):  # a second run starts while the first trains
        with pytest.raises(FolderBusy, match="being written by another run"):
            OutputFolder(out).__enter__()
        seen.append(True)
        return real_train(*args, **kwargs)

    real_train = finetune_recipe.train
    monkeypatch.setattr(finetune_recipe, "train", second_run)
    finetune(out)
    assert seen == [True]


@pytest.mark.slow
def test_an_abandoned_run_is_never_read(tmp_path, corpus):
    out = tmp_path / "m"
    (out / RUN_FOLDER).mkdir(parents=True)  # an abandoned run with an 8,000-piece vocabulary
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *(f"w{i}" for i in range(8000))]
    (out / RUN_FOLDER / "vocab.txt").write_text("\n".join(pieces) + "\n", encoding="utf-8")
    pretrain(out, corpus, overwrite=True)
    vocab = (out / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert len(vocab) <= 120 and "w7999" not in vocab
    assert json.loads((out / "config.json").read_text())["vocab_size"] == len(vocab)


def test_vocab_with_vocab_size_is_refused(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n", encoding="utf-8")
    with pytest.raises(ValueError, match="vocab and vocab_size conflict"):
        build(recipes.PretrainOptions, steps=1, vocab=vocab, vocab_size=300)
    with pytest.raises(ValueError, match="init and vocab_size conflict"):
        build(recipes.PretrainOptions, steps=1, init="course", vocab_size=300)
    assert build(recipes.PretrainOptions, steps=1).vocab_size == recipes.VOCAB_SIZE
    assert (
        build(recipes.PretrainOptions, steps=1, vocab=vocab).vocab_size is None
    )  # recorded as such


@pytest.mark.parametrize(
    ("changes", "env", "message"),
    [
        ({"batch_size": 10**9}, {}, "more than the"),
        ({"batch_size": 7}, {"WORLD_SIZE": "2"}, "multiple of the 2 processes"),
    ],
)
@pytest.mark.slow
def test_a_refusal_leaves_nothing_behind(tmp_path, corpus, monkeypatch, changes, env, message):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "runs" / "m"
    with pytest.raises(ValueError, match=message):
        pretrain(out, corpus, **changes)
    assert not (tmp_path / "runs").exists()
    for name in env:
        monkeypatch.delenv(name)
    assert pretrain(out, corpus).folder == out  # a plain re-run is not blocked


@pytest.mark.slow
def test_a_run_failed_before_its_first_checkpoint_leaves_no_run(tmp_path, corpus, monkeypatch):
    existing = tmp_path / "m"
    existing.mkdir()

    def broken(*args, **kwargs):
        raise RuntimeError("the loop broke")

    monkeypatch.setattr(pretrain_recipe, "train", broken)
    with pytest.raises(RuntimeError, match="the loop broke"):
        pretrain(existing, corpus)
    assert existing.is_dir() and not any(existing.iterdir())  # its own folder stays, empty


def test_a_link_to_nothing_is_refused_before_any_work(tmp_path, corpus, monkeypatch):
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "missing")

    def no_work(*args, **kwargs):
        raise AssertionError("the corpus was read before the folder was checked")

    monkeypatch.setattr(pretrain_recipe, "load_corpus", no_work)
    with pytest.raises(ValueError, match="is a link to .*missing, which does not exist"):
        pretrain(link, corpus)
    with pytest.raises(ValueError, match="is a link to"):
        finetune(link)
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(ValueError, match="is a file; give a folder"):
        pretrain(tmp_path / "file", corpus)
    monkeypatch.undo()
    (tmp_path / "real").mkdir()
    other = tmp_path / "other"
    other.symlink_to(tmp_path / "real")  # a link to a folder: the run writes into the folder
    assert pretrain(other, corpus).folder == tmp_path / "real"
    assert (tmp_path / "real" / "model.safetensors").is_file()


def test_a_damaged_recipe_is_one_line_naming_the_file(tmp_path, corpus):
    out = tmp_path / "m"
    paused = pretrain(out, corpus, steps=4, stop_after=2, checkpoint_every=2)
    assert paused.paused
    (out / RUN_FOLDER / "recipe.json").write_text('{"steps": 4,', encoding="utf-8")
    with pytest.raises(ValueError, match=r"recipe.json is not valid JSON"):
        pretrain(out, corpus, steps=4, resume=True)
    with pytest.raises(ValueError, match="corpus must be a name or a path, got None"):
        recipes.pretrain(tmp_path / "x", steps=1, corpus=None)
    with pytest.raises(ValueError, match="model must be a name or a path, got None"):
        recipes.finetune(tmp_path / "x", model=None)
    assert not (tmp_path / "x").exists()


# --- paths read from a manifest or a move record never reach outside the folder -------------------


@pytest.mark.parametrize("entry", ["../victim", "ABSOLUTE", "sub/../../victim", ".."])
def test_overwrite_refuses_a_manifest_naming_a_path_outside_its_folder(tmp_path, entry):
    """A manifest entry "../../victim" (or an absolute path), then --overwrite: rmtree'd it."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("the user's\n", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    entry = str(victim) if entry == "ABSOLUTE" else entry
    (out / MANIFEST).write_text(json.dumps({"files": [entry]}), encoding="utf-8")
    with pytest.raises(ValueError, match="which are not files of the folder"):
        OutputFolder(out, overwrite=True)
    assert (victim / "keep.txt").read_text() == "the user's\n"
    done = cli("finetune", "--model", "course", "--out", str(out), "--overwrite",
               "--train-examples", "64", "--steps", "1")  # fmt: skip
    assert done.returncode == 2 and "not files of the folder" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and (victim / "keep.txt").is_file()


@pytest.mark.parametrize("remove", ["OUTSIDE", "../victim", "notes.txt"])
def test_a_move_record_naming_files_that_are_not_ours_is_refused(tmp_path, remove):
    """A folder holding only .run/replace.json with {"remove": [a folder outside]}: a plain run
    into it deleted the folder before any check. A name inside that no run wrote is refused too."""
    victim = tmp_path / "victim"
    victim.mkdir()
    out = tmp_path / "out"
    (out / RUN_FOLDER).mkdir(parents=True)
    (out / "notes.txt").write_text("the user's notes\n", encoding="utf-8")
    remove = str(victim) if remove == "OUTSIDE" else remove
    record = {"remove": [remove], "move": []}
    (out / RUN_FOLDER / "replace.json").write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(ValueError, match="damaged or not ours"), OutputFolder(out):
        pass
    assert victim.is_dir() and (out / "notes.txt").read_text() == "the user's notes\n"


def test_a_run_folder_that_is_a_link_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "keep").mkdir(parents=True)
    out = tmp_path / "out"
    out.mkdir()
    (out / RUN_FOLDER).symlink_to(elsewhere)
    for resume in (False, True):
        with pytest.raises(ValueError, match="as a link to"), OutputFolder(out, resume=resume):
            pass
    assert (elsewhere / "keep").is_dir()


def test_an_output_path_under_a_file_says_it_is_a_file(tmp_path):
    """`--out afile/sub` said "afile is not writable" when it is a file."""
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ValueError, match="afile is a file, so .*sub cannot be made there"):
        OutputFolder(tmp_path / "afile" / "sub")


def test_resume_while_another_run_holds_the_folder_names_the_holder(tmp_path):
    """`--resume` while a run (before its first checkpoint) held the folder said "holds no
    interrupted run" instead of naming the holder."""
    out = tmp_path / "busy"
    busy = pytest.raises(FolderBusy, match="is being written by another run \\(process")
    with OutputFolder(out), busy:  # a run writing, no checkpoint yet; then --resume
        OutputFolder(out, resume=True)
