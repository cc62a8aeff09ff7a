"""minibert's BertModel vs Hugging Face transformers' (sdpa) on the same weights and inputs.

Config: 4 layers, 256 hidden, 4 heads, 1024 intermediate (BERT-mini), batch 32 x 128 tokens.
Modes: train (dropout 0.1) and eval, each forward only and forward + backward. The two models
run interleaved (alternating which goes first), after warm-up; we report medians, the ratio
(minibert's throughput / transformers'; > 1 means minibert is faster), and the share of the
measured fp32 matmul rate of the largest GEMM (tokens x hidden @ hidden x intermediate, timed in
the same interleaved rounds) that each model achieves. Timings on a shared machine are noisy: read the ratios, not the absolute times.

    python benchmarks/model_throughput.py            # writes benchmarks/results/model_throughput.json
    python benchmarks/model_throughput.py --reps 5   # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import transformers  # noqa: E402

from minibert.model import BertModel  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "model_throughput.json"
LAYERS, HIDDEN, HEADS, INTERMEDIATE, VOCAB = 4, 256, 4, 1024, 30522
BATCH, SEQ = 32, 128


def make_models(dropout: float) -> tuple[BertModel, transformers.BertModel]:
    """The same random weights in both implementations."""
    torch.manual_seed(0)
    hf_config = transformers.BertConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        attn_implementation="sdpa",
    )
    theirs = transformers.BertModel(hf_config)
    with tempfile.TemporaryDirectory() as folder:
        theirs.save_pretrained(folder)
        ours = BertModel.from_pretrained(folder)
    return ours, theirs  # ours reads the dropout from the saved config.json


def step_fn(model: torch.nn.Module, inputs: dict, backward: bool) -> Callable[[], None]:
    """One forward (no autograd) or one forward + backward of a scalar made from both outputs."""

    def forward() -> None:
        with torch.no_grad():
            model(**inputs)

    def forward_backward() -> None:
        out = model(**inputs)
        loss = out.last_hidden_state.mean() + out.pooler_output.mean()
        loss.backward()
        model.zero_grad(set_to_none=True)

    return forward_backward if backward else forward


def timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def model_flops(backward: bool) -> float:
    """Matmul FLOPs of one step: projections, feed-forward, attention scores and context, pooler."""
    tokens = BATCH * SEQ
    per_layer = 2 * tokens * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * INTERMEDIATE)
    per_layer += 2 * 2 * BATCH * SEQ * SEQ * HIDDEN  # Q K^T and weights @ V, all heads
    forward = LAYERS * per_layer + 2 * BATCH * HIDDEN * HIDDEN
    return 3 * forward if backward else forward  # backward costs about twice the forward


GEMM_REPEATS = 20  # matmuls per timing, so that one GEMM timing lasts tens of milliseconds
GEMM_FLOPS = GEMM_REPEATS * 2 * BATCH * SEQ * HIDDEN * INTERMEDIATE


def gemm_fn() -> Callable[[], None]:
    """The model's largest GEMM, (tokens, hidden) @ (hidden, intermediate) in fp32, repeated."""
    a, b = torch.randn(BATCH * SEQ, HIDDEN), torch.randn(HIDDEN, INTERMEDIATE)
    c = torch.empty(BATCH * SEQ, INTERMEDIATE)

    def gemm() -> None:
        for _ in range(GEMM_REPEATS):
            torch.mm(a, b, out=c)  # into one buffer: the multiply, not the allocation

    return gemm


def measure(steps: dict[str, Callable[[], None]], reps: int, warmup: int) -> dict[str, list]:
    """Seconds per call of each step: warm-up, then rounds in alternating order."""
    for fn in steps.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {k: [] for k in steps}
    for rep in range(reps):
        for key in list(steps) if rep % 2 == 0 else list(steps)[::-1]:
            times[key].append(timed(steps[key]))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=9, help="timed steps per model and mode")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps per model and mode")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    ours, theirs = make_models(dropout=0.1)
    g = torch.Generator().manual_seed(0)
    input_ids = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    token_type_ids = (torch.arange(SEQ) >= SEQ // 2).long().expand(BATCH, SEQ).contiguous()
    attention_mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    inputs = dict(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask)
    with torch.no_grad():
        diff = ours.eval()(**inputs).last_hidden_state - theirs.eval()(**inputs).last_hidden_state
    max_diff = float(diff.abs().max())
    print(f"same weights, eval outputs differ by at most {max_diff:.2e}")

    modes = {}
    for train in (True, False):
        for backward in (False, True):
            name = f"{'train' if train else 'eval'} {'forward+backward' if backward else 'forward'}"
            for model in (ours, theirs):
                model.train(train)
            steps = {
                "minibert": step_fn(ours, inputs, backward),
                "transformers": step_fn(theirs, inputs, backward),
                "gemm": gemm_fn(),
            }
            times = measure(steps, args.reps, args.warmup)
            medians = {k: statistics.median(v) for k, v in times.items()}
            rate = GEMM_FLOPS / medians.pop("gemm")  # FLOP/s under the same load as the models
            flops = model_flops(backward)
            modes[name] = {
                "median_seconds": medians,
                "tokens_per_second": {k: BATCH * SEQ / t for k, t in medians.items()},
                "ratio_minibert_over_transformers": medians["transformers"] / medians["minibert"],
                "matmul_gflops": rate / 1e9,
                "fraction_of_matmul_rate": {k: flops / t / rate for k, t in medians.items()},
                "all_seconds": times,
            }
            m = modes[name]
            print(
                f"{name:24s} minibert {m['tokens_per_second']['minibert']:6.0f} tok/s  "
                f"transformers {m['tokens_per_second']['transformers']:6.0f} tok/s  "
                f"ratio {m['ratio_minibert_over_transformers']:.3f}  "
                f"GEMM {m['matmul_gflops']:.0f} GFLOP/s, achieved "
                f"{m['fraction_of_matmul_rate']['minibert']:.0%} / "
                f"{m['fraction_of_matmul_rate']['transformers']:.0%}"
            )

    result = {
        "benchmark": "BertModel throughput, minibert vs transformers (sdpa)",
        "note": "2-core CPU shared with other jobs while measuring: compare ratios, not times",
        "config": {
            "layers": LAYERS,
            "hidden": HIDDEN,
            "heads": HEADS,
            "intermediate": INTERMEDIATE,
            "vocab": VOCAB,
            "dropout_in_train_mode": 0.1,
        },
        "batch": BATCH,
        "seq": SEQ,
        "reps": args.reps,
        "warmup": args.warmup,
        "max_abs_output_difference": max_diff,
        "modes": modes,
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor(),
            "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out.name}")


if __name__ == "__main__":
    main()
