"""benchmarks/gpu_suite.py on the CPU (--smoke), its FLOPs count, and training compiled (#56)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import gpu_suite  # noqa: E402

from minibert.config import BertConfig  # noqa: E402
from minibert.model import BertForPreTraining, EncoderLayer  # noqa: E402
from minibert.training import train  # noqa: E402


def test_one_layers_flops_are_the_hand_count():
    # H=4, I=16, S=3: Q, K, V, output 4 x (2 x 4 x 4) = 128; feed-forward 2 x (2 x 4 x 16) = 256;
    # scores 2 x 3 x 4 = 24 and weighted values 24: 432 per token, 1,296 for the 3 tokens
    assert gpu_suite.layer_flops(4, 16, 3) == 432
    config = BertConfig(
        vocab_size=10,
        hidden_size=4,
        num_layers=1,
        num_heads=2,
        intermediate_size=16,
        hidden_dropout=0.0,
        attention_dropout=0.0,
    )
    layer = EncoderLayer(config).eval()
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        layer(torch.randn(1, 3, 4), None, True)  # the explicit attention: plain matmuls
    assert counter.get_total_flops() == 3 * 432  # PyTorch's own count of the matrix products


def test_training_flops_add_the_heads_and_the_backward():
    config = BertConfig.preset("tiny", vocab_size=1000)
    forward = 2 * gpu_suite.layer_flops(128, 512, 64)
    assert gpu_suite.flops_per_token(config, 64, train=False) == forward
    heads = 0.15 * (2 * 128 * 128 + 2 * 128 * 1000) + (2 * 128 * 128 + 4 * 128) / 64
    assert gpu_suite.flops_per_token(config, 64, train=True) == pytest.approx(3 * (forward + heads))


def test_the_data_sheet_peak_is_read_from_the_cards_name():
    assert gpu_suite.peaks_for("NVIDIA H100 80GB HBM3")["bf16"] == 989.4
    assert gpu_suite.peaks_for("NVIDIA H100 PCIe")["bf16"] == 756.0
    assert gpu_suite.peaks_for("NVIDIA H200")["tf32"] == 494.7
    assert gpu_suite.peaks_for("a card nobody listed") is None


def test_padding_share_counts_every_batch():
    assert gpu_suite.padding_share([4, 4, 2, 2], 2, grouped=True) == 0.0
    assert gpu_suite.padding_share([4, 2, 4, 2], 2, grouped=False) == pytest.approx(4 / 16)
    assert gpu_suite.padding_share([4, 4, 4], 2, grouped=False) == 0.0  # a partial last batch


def test_training_compiled_equals_training_eager():
    """train(compile=True) takes the same steps as eager training, to float round-off."""
    config = BertConfig(
        vocab_size=50,
        hidden_size=16,
        num_layers=1,
        num_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
        hidden_dropout=0.0,
        attention_dropout=0.0,
    )
    g = torch.Generator().manual_seed(0)
    data = []
    for _ in range(8):
        ids = torch.randint(5, 50, (12,), generator=g)
        labels = torch.full((12,), -100)
        labels[[2, 7]] = ids[[2, 7]]
        data.append(
            {
                "input_ids": ids,
                "mlm_labels": labels,
                "next_sentence_label": torch.tensor(int(ids[0]) % 2),
            }
        )

    def collate(items):
        return {k: torch.stack([item[k] for item in items]) for k in items[0]}

    weights = []
    for compiled in (False, True):
        torch.manual_seed(0)
        model = BertForPreTraining(config)
        history = train(
            model,
            data,
            steps=2,
            batch_size=4,
            lr=1e-2,
            eval_every=10,
            progress=False,
            collate_fn=collate,
            compile=compiled,
        )
        weights.append((torch.cat([p.detach().flatten() for p in model.parameters()]), history))
    (eager, eager_history), (compiled, compiled_history) = weights
    assert [h["train_loss"] for h in compiled_history] == pytest.approx(
        [h["train_loss"] for h in eager_history], rel=1e-5
    )
    assert torch.allclose(compiled, eager, atol=1e-5), (compiled - eager).abs().max()
    torch.manual_seed(0)
    start = torch.cat([p.detach().flatten() for p in BertForPreTraining(config).parameters()])
    assert not torch.allclose(eager, start, atol=1e-4)  # the steps moved the weights


def test_smoke_runs_every_part_on_the_cpu(tmp_path):
    """--smoke: every part of the suite at toy sizes, no part skipped, no error (about a minute on
    an idle 2-core CPU; the time is printed, not asserted: a shared machine runs slower)."""
    started = time.perf_counter()
    code = gpu_suite.main(["--smoke", "--out", str(tmp_path), "--budget", "600"])
    seconds = time.perf_counter() - started
    result = json.loads((tmp_path / "gpu_suite.json").read_text())
    assert code == 0 and result["errors"] == [] and result["skipped"] == []
    assert result["bf16_equivalence"]["holds"] and result["compile_equivalence"]["holds"]
    rows = result["rows"]
    assert {r["impl"] for r in rows} == {"minibert", "transformers"}
    assert {r["precision"] for r in rows} == {"fp32", "tf32", "bf16"}
    assert {r["mode"] for r in rows} == {"train", "infer"}
    assert {r["attention"] for r in rows} == {"sdpa", "explicit"}
    assert any(r["compiled"] for r in rows)
    assert all(r["tokens_per_s"] > 0 and r["flops_per_token"] > 0 for r in rows)
    assert set(result["recipe"]) == {"card", "plain steps", "plain steps, --precision bf16"}
    assert all(run["exit"] == 0 and run["steps_done"] == 1 for run in result["recipe"].values())
    assert result["recipe_estimate_s"] > 0 and result["finetune"]["exit"] == 0
    assert set(result["mask_lever"]) >= {"mask passed", "no mask"}
    assert set(result["adamw_lever"]["update_ms"]) == {"for-each", "fused"}
    assert 0 <= result["host_share"]["padding_share_random_batches"] < 0.05
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "docs" / "site"))
    import results as site_results  # the site's results page renders the suite's file

    text = site_results.section_text("gpu_suite.json", result)
    assert f"{rows[0]['tokens_per_s']:,.0f}" in text and "holds" in text
    png = gpu_suite.plot(tmp_path / "gpu_suite.json")
    assert png.stat().st_size > 10_000
    print(f"the smoke run took {seconds:.0f} s; its parts: {result['part_seconds']}")


def test_a_smoke_run_never_skips_a_part_or_shortens_a_run_for_time(tmp_path):
    """--smoke on a busy machine: "59 s left, needs ~60" skipped a part and the test failed. A
    smoke run checks that every part works; its budget cannot run out."""
    suite = gpu_suite.Suite(gpu_suite.SMOKE_PLAN, torch.device("cpu"), tmp_path, 0.0, smoke=True)
    ran = []
    suite.part("a part that needs a minute", lambda: ran.append(True), needs=60)
    assert ran == [True] and suite.result["skipped"] == []
    assert suite.run_limit(100) == gpu_suite.SMOKE_RUN_SECONDS  # not the budget's 0 s
    timed = gpu_suite.Suite(gpu_suite.SMOKE_PLAN, torch.device("cpu"), tmp_path, 0.0, smoke=False)
    timed.part("a part that needs a minute", lambda: ran.append(False), needs=60)
    assert ran == [True] and len(timed.result["skipped"]) == 1  # a measured run still skips


def test_a_mask_that_keeps_every_token_is_not_sent(tiny_config):
    """Training drops an all-ones attention_mask (SDPA's fastest kernels take none) and keeps a
    mask with padding."""
    from minibert.model import BertForSequenceClassification

    config, seen = tiny_config(), []

    class Recording(BertForSequenceClassification):
        def forward(self, **batch):
            seen.append("attention_mask" in batch)
            return super().forward(**batch)

    ids = torch.randint(5, config.vocab_size, (4, 6))
    full = {
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "labels": torch.zeros(4).long(),
    }
    padded = full | {"attention_mask": torch.tensor([[1] * 6] * 3 + [[1] * 4 + [0] * 2])}
    for batch, expected in ((full, False), (padded, True)):
        seen.clear()
        train(
            Recording(config),
            [batch],
            steps=1,
            batch_size=1,
            lr=1e-3,
            eval_every=10,
            progress=False,
            collate_fn=lambda items: items[0],
        )
        assert seen == [expected]


def test_a_failed_run_reports_no_steps_even_where_an_earlier_run_left_its_history(tmp_path):
    """The recipe's variants share one folder: a variant whose command fails must not report the
    steps and pace of the run before it (it did: `steps_done: 1` for a run that exited 2)."""
    folder = tmp_path / "recipe_run"
    folder.mkdir()
    (folder / "history.json").write_text(json.dumps([{"step": 7, "seconds": 3.0}]))
    report = gpu_suite.run_and_extrapolate(["pretrain", "--no-such-flag"], folder, 100, 60)
    assert report["exit"] != 0
    assert report["steps_done"] is None and "ms_per_step" not in report
