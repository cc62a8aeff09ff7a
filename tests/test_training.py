"""minibert.training: the loop, its schedule, checkpoints, exact resume, interrupts, NaN guard."""

import functools
import re

import pytest
import torch
from conftest import SYNTHETIC_VOCAB, make_tiny_config, synthetic_documents

from minibert import pretraining as P
from minibert import set_seed
from minibert.model import BertForPreTraining, BertForSequenceClassification
from minibert.run_state import STATE_FILE, TrainingError
from minibert.training import (
    TrainOptions,
    evaluate,
    linear_schedule,
    make_optimizer,
    train,
)

VOCAB = SYNTHETIC_VOCAB  # ids 0-4 special ([PAD] [UNK] [CLS] [SEP] [MASK]), 5.. ordinary


def tiny_model(seed: int = 0) -> BertForPreTraining:
    set_seed(seed)
    return BertForPreTraining(make_tiny_config(vocab_size=VOCAB))


@pytest.fixture(scope="module")
def data():
    examples = P.create_examples(synthetic_documents(), max_len=32, seed=0)
    split = len(examples) * 4 // 5
    make = lambda ex: P.PretrainingDataset(ex, 2, 3, 4, list(range(5, VOCAB)), seed=0)  # noqa: E731
    return make(examples[:split]), make(examples[split:])


def run(data, out_dir=None, steps=12, **kwargs):
    train_data, eval_data = data
    model = tiny_model()
    history = train(
        model,
        train_data,
        eval_data,
        steps=steps,
        batch_size=4,
        lr=3e-3,
        eval_every=4,
        collate_fn=P.collate,
        metrics_fn=functools.partial(P.pretraining_metrics, mask_token_id=4),
        out_dir=out_dir,
        progress=False,
        **kwargs,
    )
    return model, history


def test_loop_fits_one_fixed_batch(data):
    # one batch of 8 examples with static masks, seen every step: the loss must collapse
    examples = data[0].examples[:8]
    fixed = P.PretrainingDataset(examples, 2, 3, 4, list(range(5, VOCAB)), dynamic=False, seed=0)
    history = train(
        tiny_model(),
        fixed,
        steps=30,
        batch_size=8,
        lr=1e-2,
        warmup_steps=3,
        collate_fn=P.collate,
        progress=False,
    )
    assert len(history) == 30 and history[-1]["step"] == 30
    assert history[-1]["train_loss"] < 0.5 * history[0]["train_loss"]


def test_history_has_the_metrics(data):
    _, history = run(data, steps=12)
    assert [h["step"] for h in history] == list(range(1, 13))
    assert {"train_loss", "lr", "grad_norm", "examples"} <= set(history[0])
    evals = [h for h in history if "eval_loss" in h]
    assert [h["step"] for h in evals] == [4, 8, 12]
    measures = {"eval_mask_accuracy", "eval_mask_top5", "eval_chosen_accuracy", "eval_nsp_accuracy"}
    assert measures <= set(evals[-1])
    assert 0.0 <= evals[-1]["eval_mask_accuracy"] <= evals[-1]["eval_mask_top5"] <= 1.0


def test_schedule_warms_up_then_decays_to_zero():
    multipliers = [linear_schedule(s, 10, 100) for s in range(100)]
    assert multipliers[0] == pytest.approx(0.1) and multipliers[9] == pytest.approx(1.0)
    assert multipliers[10] == pytest.approx(1.0) and multipliers[99] == pytest.approx(1 / 90)
    assert all(a >= b for a, b in zip(multipliers[9:], multipliers[10:]))


def test_no_weight_decay_on_biases_and_layer_norm():
    model = tiny_model()
    optimizer = make_optimizer(model, lr=1e-3, weight_decay=0.01)
    decay, no_decay = optimizer.param_groups
    assert decay["weight_decay"] == 0.01 and no_decay["weight_decay"] == 0.0
    names = {id(p): n for n, p in model.named_parameters()}
    assert all(p.ndim == 2 for p in decay["params"])
    no_decay_names = [names[id(p)] for p in no_decay["params"]]
    assert any("bias" in n for n in no_decay_names)
    assert any("norm" in n.lower() for n in no_decay_names)
    assert not any("norm" in names[id(p)].lower() for p in decay["params"])
    every = {id(p) for g in optimizer.param_groups for p in g["params"]}
    assert every == {id(p) for p in model.parameters()}  # nothing left out, nothing twice


def test_gradient_accumulation_matches_a_bigger_batch():
    # a per-example mean loss (classification): 2 micro-batches of 4 = one batch of 8
    g = torch.Generator().manual_seed(0)
    items = [
        {"input_ids": torch.randint(5, VOCAB, (12,), generator=g), "labels": torch.tensor(i % 2)}
        for i in range(16)
    ]
    stack = lambda batch: {k: torch.stack([b[k] for b in batch]) for k in batch[0]}  # noqa: E731
    results = []
    for batch_size, accum in ((8, 1), (4, 2)):
        set_seed(0)
        config = make_tiny_config(
            vocab_size=VOCAB,
            num_layers=1,
            max_position_embeddings=16,
            hidden_dropout=0.0,
            attention_dropout=0.0,
        )
        model = BertForSequenceClassification(config)
        train(
            model,
            items,
            steps=2,
            batch_size=batch_size,
            grad_accum_steps=accum,
            lr=1e-2,
            collate_fn=stack,
            progress=False,
            warmup_steps=1,
        )
        results.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    # the examples of each step are the same in both runs: the epoch's shuffle depends on the seed
    torch.testing.assert_close(results[0], results[1], atol=1e-5, rtol=1e-4)


def test_accumulation_weights_every_masked_token_once_like_one_big_batch(data):
    """MLM + NSP: micro-batches hold different numbers of masked tokens, so 2 x 8 accumulated must
    weight each token by 1/(the step's tokens), not each micro-batch by 1/2 (the old bug)."""
    train_data, _ = data
    batches = [P.collate([train_data[i] for i in range(j, j + 8)]) for j in (0, 8, 16, 24)]
    counts = [int((b["mlm_labels"] != -100).sum()) for b in batches]
    assert len(set(counts)) > 1  # the micro-batches differ in masked tokens: the test can fail
    results = []
    for batch_size, accum in ((16, 1), (8, 2), (4, 4)):
        set_seed(0)
        model = BertForPreTraining(
            make_tiny_config(vocab_size=VOCAB, hidden_dropout=0.0, attention_dropout=0.0)
        )
        history = train(
            model, train_data, steps=3, batch_size=batch_size, grad_accum_steps=accum, lr=3e-3,
            collate_fn=P.collate, progress=False, warmup_steps=1,
        )  # fmt: skip
        weights = torch.cat([p.detach().flatten() for p in model.parameters()])
        results.append(([h["train_loss"] for h in history], weights))
    (loss, weights), *others = results
    for other_loss, other_weights in others:  # the same to float32 round-off
        assert other_loss == pytest.approx(loss, rel=1e-6, abs=1e-6)
        torch.testing.assert_close(other_weights, weights, atol=2e-6, rtol=1e-5)


def test_resume_continues_exactly(data, tmp_path):
    _, uninterrupted = run(data, out_dir=tmp_path / "full", steps=12)
    # the same 12 steps with a checkpoint every 5, interrupted (Ctrl-C) while evaluating step 8
    train_data, eval_data = data
    model = tiny_model()

    def stop_at_step_eight(history):
        if history[-1]["step"] >= 8:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(
            model,
            train_data,
            eval_data,
            steps=12,
            batch_size=4,
            lr=3e-3,
            eval_every=4,
            collate_fn=P.collate,
            out_dir=tmp_path / "part",
            checkpoint_every=5,
            progress=False,
            on_eval=stop_at_step_eight,
        )
    state = torch.load(tmp_path / "part" / STATE_FILE, weights_only=True)
    assert state["step"] == 8  # the interrupt saved the last finished step
    assert len(state["history"]) == 8
    set_seed(123)  # a different global state: resume must restore its own
    model = tiny_model(seed=99)  # different weights: resume must load them
    resumed = train(
        model,
        train_data,
        eval_data,
        steps=12,
        batch_size=4,
        lr=3e-3,
        eval_every=4,
        collate_fn=P.collate,
        out_dir=tmp_path / "part",
        resume=True,
        progress=False,
    )
    assert [h["step"] for h in resumed] == list(range(1, 13))
    for a, b in zip(uninterrupted, resumed):
        assert a["train_loss"] == pytest.approx(b["train_loss"], abs=1e-6), a["step"]
        if "eval_loss" in a and a["step"] != 8:  # step 8's evaluation was interrupted
            assert a["eval_loss"] == pytest.approx(b["eval_loss"], abs=1e-6)


def test_stop_after_pauses_and_resume_finishes_the_same_run(data, tmp_path):
    _, uninterrupted = run(data, out_dir=tmp_path / "full", steps=12)
    _, first = run(data, out_dir=tmp_path / "part", steps=12, stop_after=6)
    assert [h["step"] for h in first] == list(range(1, 7))
    assert torch.load(tmp_path / "part" / STATE_FILE, weights_only=True)["step"] == 6
    _, resumed = run(data, out_dir=tmp_path / "part", steps=12, resume=True)
    assert [h["step"] for h in resumed] == list(range(1, 13))
    for a, b in zip(uninterrupted, resumed):
        assert a["train_loss"] == pytest.approx(b["train_loss"], abs=1e-6), a["step"]
    with pytest.raises(ValueError, match="stop_after"):
        run(data, out_dir=tmp_path / "bad", steps=12, stop_after=13)


def test_resume_with_other_settings_is_refused(data, tmp_path):
    run(data, out_dir=tmp_path, steps=4)
    with pytest.raises(TrainingError, match=r"steps=8 \(the checkpoint has 4\)"):
        run(data, out_dir=tmp_path, steps=8, resume=True)


def test_nan_loss_stops_with_the_step(data):
    train_data, _ = data
    model = tiny_model()
    with torch.no_grad():
        model.bert.embeddings.word_embeddings.weight[5:] = float("nan")
    with pytest.raises(TrainingError, match="at step 1"):
        train(model, train_data, steps=3, batch_size=4, collate_fn=P.collate, progress=False)


def test_checkpoint_writes_are_atomic(data, tmp_path):
    run(data, out_dir=tmp_path, steps=6, checkpoint_every=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == [STATE_FILE]


def test_bad_arguments(data):
    train_data, _ = data
    with pytest.raises(ValueError, match="steps"):
        train(tiny_model(), train_data, steps=0)
    with pytest.raises(ValueError, match="out_dir"):
        train(tiny_model(), train_data, steps=2, batch_size=4, resume=True)
    with pytest.raises(ValueError, match="fewer than one batch"):
        train(tiny_model(), train_data, steps=2, batch_size=10_000)


def test_mlm_loss_ignores_extra_padding(data):
    # d2l issue 2582: averaging before weighting made the loss mask ineffective
    train_data, _ = data
    model = tiny_model().eval()
    items = [train_data[i] for i in range(6)]
    batch = P.collate(items)
    longer = P.collate(
        items
        + [
            {
                "input_ids": [2] + [5] * 60 + [3],
                "token_type_ids": [0] * 62,
                "mlm_labels": [-100] * 62,
                "next_sentence_label": -100,
            }
        ]
    )
    longer = {k: v[:6] for k, v in longer.items()}  # the same 6 rows, padded to 62 tokens
    assert longer["input_ids"].shape[1] > batch["input_ids"].shape[1]
    with torch.no_grad():
        a = model(**batch).mlm_loss
        b = model(**longer).mlm_loss
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_both_nsp_labels_contribute_to_the_loss(data):
    # codertimo/BERT-pytorch: one NLLLoss(ignore_index=0) for MLM and NSP dropped label 0
    model = tiny_model().eval()
    batch = P.collate([data[0][i] for i in range(8)])
    with torch.no_grad():
        logits = model(**batch).nsp_logits
    for label in (0, 1):
        labels = torch.full((8,), label)
        with torch.no_grad():
            loss = model(**{**batch, "next_sentence_label": labels}).nsp_loss
        expected = torch.nn.functional.cross_entropy(logits, labels)
        torch.testing.assert_close(loss, expected)
        assert loss > 0


def test_evaluate_counts_only_labelled_positions(data):
    _, eval_data = data
    model = tiny_model()
    metrics = evaluate(
        model, eval_data, batch_size=4, collate_fn=P.collate, metrics_fn=P.pretraining_metrics
    )
    # without the [MASK] id only the all-chosen-positions accuracy can be measured
    assert set(metrics) == {"loss", "mlm_loss", "nsp_loss", "chosen_accuracy", "nsp_accuracy"}
    assert metrics["loss"] == pytest.approx(metrics["mlm_loss"] + metrics["nsp_loss"])
    assert model.training  # evaluate restores the mode it found
    assert set(evaluate(model, eval_data, batch_size=4, collate_fn=P.collate)) == {"loss"}


def test_training_curves_plot(data):
    from minibert.teaching.viz import training_curves

    _, history = run(data, steps=8)
    fig = training_curves(history, title="tiny")
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["loss", "held-out accuracy", "learning rate"]
    loss_lines = {line.get_label() for line in fig.axes[0].get_lines()}
    assert loss_lines == {"train_loss", "held-out loss"}
    assert len(fig.axes[0].get_lines()[0].get_xdata()) == 8
    with pytest.raises(ValueError, match="empty"):
        training_curves([])


def test_group_by_length_keeps_each_epoch_a_permutation_and_pads_less():
    from minibert.training import GROUP, _batch_order

    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(3, 60, (1000,), generator=g).tolist()
    plain = _batch_order(1000, 0, 0)
    grouped = _batch_order(1000, 0, 0, lengths, batch_size=8)
    assert sorted(grouped) == list(range(1000))  # every example once per epoch
    assert grouped != _batch_order(1000, 1, 0, lengths, batch_size=8)  # a new order each epoch
    size = GROUP * 8
    for start in range(0, 1000, size):  # each group: the same examples, longest first
        assert sorted(grouped[start : start + size]) == sorted(plain[start : start + size])
        group_lengths = [lengths[i] for i in grouped[start : start + size]]
        assert group_lengths == sorted(group_lengths, reverse=True)

    def padded(order):  # tokens in batches of 8 padded to their longest
        return sum(8 * max(lengths[i] for i in order[s : s + 8]) for s in range(0, 1000, 8))

    assert padded(grouped) < 0.7 * padded(plain)


def test_group_by_length_trains_and_resumes_exactly(data, tmp_path):
    _, full = run(data, out_dir=tmp_path / "full", steps=12, group_by_length=True)
    _, plain = run(data, steps=12)
    assert [h["train_loss"] for h in full] != [h["train_loss"] for h in plain]
    run(data, out_dir=tmp_path / "part", steps=12, stop_after=6, group_by_length=True)
    with pytest.raises(TrainingError, match="group_by_length=False"):
        run(data, out_dir=tmp_path / "part", steps=12, resume=True)
    _, resumed = run(data, out_dir=tmp_path / "part", steps=12, resume=True, group_by_length=True)
    for a, b in zip(full, resumed):
        assert a["train_loss"] == pytest.approx(b["train_loss"], abs=1e-6), a["step"]


def test_bf16_autocast_trains_close_to_float32(data):
    """--precision bf16: the forward in bfloat16 under autocast (here on the CPU), the weights and
    the optimizer in float32; the losses follow the float32 run's to bfloat16's precision."""
    train_data, _ = data
    losses = {}
    for precision in ("fp32", "bf16"):
        model = tiny_model()
        history = train(model, train_data, steps=4, batch_size=8, lr=3e-3, collate_fn=P.collate,
                        progress=False, precision=precision)  # fmt: skip
        assert all(p.dtype == torch.float32 for p in model.parameters())
        losses[precision] = [h["train_loss"] for h in history]
    assert losses["bf16"] != losses["fp32"]  # autocast did run in bfloat16
    assert losses["bf16"] == pytest.approx(losses["fp32"], abs=0.05)
    with pytest.raises(ValueError, match="precision must be one of 'fp32', 'bf16'"):
        train(tiny_model(), train_data, steps=1, batch_size=8, precision="fp16")


# --- damaged inputs and huge options --------------------------------------------------------------


def test_accumulation_streams_micro_batches(data):
    """grad_accum_steps=10,000 of batch 1: the first forward comes after one collate, not 10,000
    (each micro-batch is built just before its forward; the labels are counted from the examples)."""
    train_data, _ = data
    calls = {"collate": 0}

    def counting_collate(items):
        calls["collate"] += 1
        return P.collate(items)

    class FirstForward(Exception):
        pass

    def first_forward(**batch):
        calls["at_first_forward"] = calls["collate"]
        raise FirstForward

    model = tiny_model()
    model.forward = first_forward
    with pytest.raises(FirstForward):
        train(model, train_data, steps=1, batch_size=1, grad_accum_steps=10_000,
              collate_fn=counting_collate, progress=False)  # fmt: skip
    assert calls["at_first_forward"] == 1


def test_a_collate_that_changes_the_label_count_is_refused(data):
    # the step's label count is taken from the examples: a collate_fn that drops labels would
    # weight them wrongly, so the loop says so instead of training on
    train_data, _ = data

    def dropping_collate(items):
        batch = P.collate(items)
        batch["mlm_labels"][:, 1:] = -100
        return batch

    with pytest.raises(TrainingError, match="collate_fn may only pad labels"):
        train(tiny_model(), train_data, steps=1, batch_size=4, grad_accum_steps=2,
              collate_fn=dropping_collate, progress=False)  # fmt: skip


def _damage(path, how):
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "bit-flipped":  # one bit in the middle of the tensors' data
        flipped = bytearray(data)
        flipped[len(data) // 2] ^= 0x10
        path.write_bytes(bytes(flipped))
    elif how == "another format":
        path.write_text("step,loss\n1,2.5\n")
    elif how == "a torch file of something else":
        torch.save({"weights": torch.zeros(3)}, path)
    else:
        torch.save([1, 2, 3], path)


@pytest.mark.parametrize(
    "how",
    ["truncated", "empty", "bit-flipped", "another format", "a torch file of something else",
     "a torch file of a list"],
)  # fmt: skip
def test_damaged_training_state_is_one_clear_line(data, tmp_path, how):
    run(data, out_dir=tmp_path, steps=8, stop_after=4)
    state = tmp_path / STATE_FILE
    _damage(state, how)
    with pytest.raises(ValueError) as caught:
        run(data, out_dir=tmp_path, steps=8, resume=True)
    message = str(caught.value)
    assert str(state) in message and "\n" not in message
    assert re.search(r"is damaged|is not a minibert training state", message)
    assert "start again without resume" in message


def test_a_training_state_of_another_model_is_one_clear_line(data, tmp_path):
    run(data, out_dir=tmp_path, steps=8, stop_after=4)
    train_data, _ = data
    bigger = BertForPreTraining(make_tiny_config(vocab_size=VOCAB, hidden_size=64, num_heads=2))
    with pytest.raises(ValueError, match=r"training_state.pt does not fit this run") as caught:
        train(bigger, train_data, steps=8, batch_size=4, lr=3e-3, eval_every=4, out_dir=tmp_path,
              collate_fn=P.collate, resume=True, progress=False)  # fmt: skip
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("seed", [-1, 2**32, 10**20, 1.5, True])
def test_seed_out_of_range_is_refused_by_the_options(seed):
    with pytest.raises(ValueError, match=r"seed must be an int in \[0, 2\*\*32 - 1\]"):
        TrainOptions(steps=1, seed=seed)
    TrainOptions(steps=1, seed=2**32 - 1)  # the largest seed every generator accepts
