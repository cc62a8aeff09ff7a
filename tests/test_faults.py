"""Faults a student or a teacher hits: interrupts, bad arguments, damaged files, shared folders.

Each test reproduces one fault and states the behaviour that fixes it. Interrupts are
injected in-process (a hook raises KeyboardInterrupt, or sends the process a real SIGINT), never
with sleeps.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import cli as in_process
from conftest import make_tiny_config

from minibert import pretraining as P
from minibert import recipes, set_seed
from minibert.assets import path as asset_path
from minibert.model import BertForMaskedLM, BertForPreTraining
from minibert.run_state import TrainingError
from minibert.tokenization import BertTokenizer
from minibert.training import evaluate, train
from minibert.utils import atomic_write

VOCAB = 40


def minibert(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "minibert.cli", *args], capture_output=True, text=True
    )


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(0)
    docs = [
        [(5 + (d * 3) % 20 + torch.randint(0, 8, (6,), generator=g)).tolist() for _ in range(12)]
        for d in range(30)
    ]
    examples = P.create_examples(docs, max_len=24, seed=0)
    make = lambda ex: P.PretrainingDataset(ex, 2, 3, 4, list(range(5, VOCAB)), seed=0)  # noqa: E731
    return make(examples[:-40]), make(examples[-40:])


def run(data, out_dir, resume=False, steps=10, **kwargs):
    """A tiny BERT with dropout ON (0.1), trained for `steps`, evaluated every 3 steps."""
    set_seed(0)
    model = BertForPreTraining(make_tiny_config(vocab_size=VOCAB))
    history = train(
        model,
        *data,
        steps=steps,
        batch_size=4,
        lr=3e-3,
        eval_every=3,
        collate_fn=P.collate,
        metrics_fn=P.pretraining_metrics,
        out_dir=out_dir,
        checkpoint_every=2,
        resume=resume,
        progress=False,
        **kwargs,
    )
    return model, history


@pytest.fixture(scope="module")
def uninterrupted(data, tmp_path_factory):
    return run(data, tmp_path_factory.mktemp("whole"))


def same_run(a, b):
    (model_a, history_a), (model_b, history_b) = a, b
    for (name, x), y in zip(model_a.state_dict().items(), model_b.state_dict().values()):
        assert torch.equal(x, y), name
    strip = lambda h: [{k: v for k, v in r.items() if k != "seconds"} for r in h]  # noqa: E731
    assert strip(history_a) == strip(history_b)


def interrupt_forward(model_calls: int, training: bool):
    """A forward hook on layer 1 that raises after `model_calls` calls in the given mode."""
    seen = {"n": 0}

    def hook(module, args, output):
        if module.training == training:
            seen["n"] += 1
            if seen["n"] == model_calls:
                raise KeyboardInterrupt

    return hook


@pytest.mark.parametrize(
    "where",
    ["mid-step", "mid-update, after the optimizer moved", "mid-evaluation", "ctrl-c signal"],
)
def test_resume_after_an_interrupt_is_exact_with_dropout_on(data, uninterrupted, tmp_path, where):
    # defect 2: the rng was saved after the interrupted step drew dropout, a finished update was
    # saved under the previous step, and an evaluation's metrics and the clock were lost
    patches = pytest.MonkeyPatch()
    original_init = BertForPreTraining.__init__

    def with_hook(self, config):
        original_init(self, config)
        layer = self.bert.encoder.layers[1]
        if where == "mid-step":  # the 7th training step: layer 0's dropout has already drawn
            layer.register_forward_hook(interrupt_forward(7, training=True))
        elif where == "mid-evaluation":  # inside the second evaluation (step 6)
            layer.register_forward_hook(interrupt_forward(12, training=False))
        elif where == "ctrl-c signal":  # a real SIGINT in the middle of step 5

            def hook(module, args, output, seen={"n": 0}):  # noqa: B006
                seen["n"] += module.training
                if seen["n"] == 5 and module.training:
                    os.kill(os.getpid(), signal.SIGINT)

            layer.register_forward_hook(hook)

    patches.setattr(BertForPreTraining, "__init__", with_hook)
    if where.startswith("mid-update"):
        real_step, calls = torch.optim.AdamW.step, {"n": 0}

        def step_then_stop(self, *args, **kwargs):
            result = real_step(self, *args, **kwargs)
            calls["n"] += 1
            if calls["n"] == 5:
                raise KeyboardInterrupt  # the update is done, the step counter not yet
            return result

        patches.setattr(torch.optim.AdamW, "step", step_then_stop)
    with pytest.raises(KeyboardInterrupt):
        run(data, tmp_path)
    patches.undo()
    state = torch.load(tmp_path / "training_state.pt", weights_only=True)
    expected_step = {"mid-step": 6, "mid-evaluation": 6, "ctrl-c signal": 5}.get(where, 5)
    assert state["step"] == expected_step
    assert state["eval_pending"] == (where == "mid-evaluation")
    assert state["seconds"] > 0  # the clock goes on from where it stopped
    resumed = run(data, tmp_path, resume=True)
    same_run(resumed, uninterrupted)
    assert not list(tmp_path.glob(".*.partial"))  # no partial files left


def test_resume_without_a_state_is_an_error_that_says_what_is_there(data, tmp_path):
    # defect 6: --resume silently started over
    (tmp_path / ".training_state.pt.x1.partial").write_bytes(b"half")
    with pytest.raises(TrainingError, match=r"no training_state.pt.*holds: \.training_state"):
        run(data, tmp_path, resume=True)


def test_resume_with_another_lr_or_seed_is_refused_by_name(data, tmp_path):
    run(data, tmp_path, steps=4)
    with pytest.raises(TrainingError, match=r"lr=0.001 \(the checkpoint has 0.003\)"):
        train(
            BertForPreTraining(make_tiny_config(vocab_size=VOCAB)),
            data[0],
            steps=4,
            batch_size=4,
            lr=1e-3,
            collate_fn=P.collate,
            out_dir=tmp_path,
            resume=True,
            progress=False,
        )


def test_files_get_the_mode_a_plain_open_gives(tmp_path):
    # defect 3: every file was 0600, unreadable in a teacher's shared folder
    old = os.umask(0o002)
    try:
        atomic_write(tmp_path / "a.txt", "shared")
        BertForMaskedLM(make_tiny_config()).save_pretrained(tmp_path / "model")
        with open(tmp_path / "plain.txt", "w") as f:
            f.write("x")
    finally:
        os.umask(old)
    plain = stat.S_IMODE((tmp_path / "plain.txt").stat().st_mode)
    assert plain == 0o664
    for file in (tmp_path / "a.txt", tmp_path / "model" / "model.safetensors"):
        assert stat.S_IMODE(file.stat().st_mode) == plain, file


def test_a_small_corpus_gets_a_heldout_part(tmp_path):
    # defect 5: crc32(name) % 10 == 2 held out 0 of 12 chapter files
    for i in range(12):
        (tmp_path / f"chapter{i:02d}.txt").write_text(f"Chapter {i} begins. It ends here.\n")
    train_docs, heldout = recipes.load_corpus(tmp_path)
    assert len(heldout) >= 1 and len(train_docs) + len(heldout) == 12
    assert not {a.title for a in heldout} & {a.title for a in train_docs}


def test_an_empty_evaluation_set_and_zero_predictions_are_refused(data):
    model = BertForPreTraining(make_tiny_config(vocab_size=VOCAB))
    with pytest.raises(ValueError, match="evaluation set is empty"):
        evaluate(model, [], collate_fn=P.collate)
    with pytest.raises(ValueError, match="eval_data is empty"):
        train(model, data[0], [], steps=1, batch_size=4, collate_fn=P.collate, progress=False)
    with pytest.raises(ValueError, match="max_predictions must be at least 1"):
        P.mask_tokens([2, 7, 8, 3], [1, 0, 0, 1], 4, [5, 6], None, max_predictions=0)


@pytest.fixture(scope="module")
def course_model(tmp_path_factory):
    """A copy of the committed course checkpoint, as a teacher's existing model folder."""
    from minibert.assets import course_checkpoint

    folder = tmp_path_factory.mktemp("existing") / "m"
    shutil.copytree(course_checkpoint("course"), folder)
    return folder


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.slow
def test_a_failed_pretrain_leaves_the_model_in_out_untouched(course_model):
    # defect 1: the vocabulary was written before the arguments were checked
    before = snapshot(course_model)
    with pytest.raises(ValueError):  # steps 0, checked before anything is written
        recipes.pretrain(course_model, steps=0, vocab=asset_path("minilm"))
    with pytest.raises(ValueError, match="--overwrite"):  # a valid run into another model
        recipes.pretrain(course_model, steps=1, vocab=asset_path("minilm"))
    assert snapshot(course_model) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--steps", "0"], "--steps: must be a positive int, got 0"),
        (["--steps", "-3"], "--steps"),
        (["--batch-size", "0"], "--batch-size"),
        (["--grad-accum-steps", "0"], "--grad-accum-steps"),
        (["--lr", "nan"], "--lr"),
        (["--lr", "-1"], "--lr"),
        (["--threads", "-1"], "--threads"),
        (["--dupe-factor", "0"], "--dupe-factor"),
        (["--eval-every", "0"], "--eval-every"),
        (["--max-predictions", "0"], "--max-predictions"),
        (["--device", "tpu"], "--device"),
    ],
)
def test_pretrain_arguments_are_checked_first_in_one_line(tmp_path, args, message):
    # defect 7: bad arguments failed after ~15 s of corpus loading, with a traceback
    base = {"--steps": "5", "--out": str(tmp_path / "m")}
    base.update(dict(zip(args[::2], args[1::2])))
    done = in_process("pretrain", *[x for kv in base.items() for x in kv])
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "m").exists()


def test_cuda_on_a_machine_without_one_is_one_line(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU: --device cuda is valid here")
    done = in_process("pretrain", "--steps", "5", "--out", str(tmp_path / "m"), "--device", "cuda")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        "argument --device: must be a device this machine has (it has no CUDA GPU)" in done.stderr
    )


def test_fill_mask_on_a_folder_that_is_not_a_model_is_one_line(tmp_path):
    done = in_process("fill-mask", str(tmp_path), "the [MASK] .")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert str(tmp_path) in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_fill_mask_takes_a_masked_lm_folder(tmp_path):
    # its help says save_pretrained folders work; a BertForMaskedLM one was refused
    tok = BertTokenizer.from_pretrained(asset_path("minilm"))
    BertForMaskedLM(make_tiny_config(vocab_size=len(tok))).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    done = in_process("fill-mask", str(tmp_path), "the [MASK] of france is paris .", "--top-k", "2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("[MASK] 1:")


def test_damaged_files_are_named_in_the_error(tmp_path):
    # defect 8: errors that did not name the file
    model = BertForMaskedLM(make_tiny_config())
    model.save_pretrained(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"config.json is not valid JSON"):
        BertForMaskedLM.from_pretrained(tmp_path)
    model.save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(ValueError, match=r"model.safetensors cannot be read"):
        BertForMaskedLM.from_pretrained(tmp_path)


def test_tokenizer_files_that_lie_are_caught(tmp_path):
    tok = BertTokenizer.from_pretrained(asset_path("minilm"))
    tok.save_pretrained(tmp_path)
    vocab = (tmp_path / "vocab.txt").read_text(encoding="utf-8")
    (tmp_path / "vocab.txt").write_text("\ufeff" + vocab, encoding="utf-8")  # a byte-order mark
    assert BertTokenizer.from_pretrained(tmp_path).vocab == tok.vocab
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config | {"do_lower_case": "false"}))
    with pytest.raises(ValueError, match=r"do_lower_case must be true or false.*'false'"):
        BertTokenizer.from_pretrained(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text("{")
    with pytest.raises(ValueError, match=r"tokenizer_config.json is not valid JSON"):
        BertTokenizer.from_pretrained(tmp_path)


def test_an_infinite_layer_norm_eps_is_refused():
    with pytest.raises(ValueError, match="layer_norm_eps must be a positive finite number"):
        make_tiny_config(layer_norm_eps=float("inf"))


def test_an_empty_batch_is_refused_by_the_tokenizer():
    tok = BertTokenizer.from_pretrained(asset_path("minilm"))
    with pytest.raises(ValueError, match="batch is empty"):
        tok.encode_batch([])


@pytest.mark.slow
def test_assets_list_into_a_closed_pipe_is_quiet():
    done = subprocess.run(
        f"{sys.executable} -m minibert assets list | head -n 1",
        shell=True,
        capture_output=True,
        text=True,
    )
    assert done.stdout.startswith("cache:") and "Broken pipe" not in done.stderr


@pytest.mark.slow
def test_assets_list_calls_a_damaged_asset_corrupt(tmp_path, monkeypatch):
    from minibert import assets
    from minibert.commands import asset_cache

    monkeypatch.setattr(assets, "verify", lambda name: ["x: SHA-256 does not match"])
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        asset_cache._print_list()
    assert "corrupt" in buffer.getvalue() and "missing" not in buffer.getvalue()


@pytest.mark.slow
def test_the_explorer_truncates_long_text_and_says_so():
    # defect 9: a text longer than the positions failed silently in JupyterLab's log
    pytest.importorskip("ipywidgets")
    from minibert.teaching.explorer import explore

    tok = BertTokenizer.from_pretrained(asset_path("minilm"))
    model = BertForMaskedLM(make_tiny_config(vocab_size=len(tok), max_position_embeddings=16))
    explorer = explore(model, tok, "a short text")
    assert explorer.note.value == ""
    explorer.text.value = " ".join(["word"] * 40)
    assert len(explorer.tokens) == 16 and "truncated to the model's 16 positions" in (
        explorer.note.value
    )
    explorer.model = BertForMaskedLM(make_tiny_config(vocab_size=100))  # ids out of its range
    explorer.text.value = "a zebra"  # the error shows in the widget, the old figure goes
    assert "cannot show this text" in explorer.note.value and "[0, 100)" in explorer.note.value
    assert explorer.output.outputs == ()


def test_an_article_without_sentences_does_not_count_as_a_document(tmp_path):
    (tmp_path / "a.txt").write_text("One sentence here.\n")
    (tmp_path / "b.txt").write_text("\n")
    with pytest.raises(ValueError, match="non-empty document"):
        recipes.load_corpus(tmp_path)
