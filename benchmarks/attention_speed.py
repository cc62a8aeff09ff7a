"""Explicit vs fused attention on this machine: forward and forward+backward, medians and ratios.

Compares minibert's explicit ``scaled_dot_product_attention`` (scores, mask, softmax, @ V, the
path that returns the weights) with ``torch.nn.functional.scaled_dot_product_attention`` (fused),
both on the same inputs with a padding mask, batch 8, 4 heads of 64 dims, seq 128 and 512; and the
same comparison for a whole ``MultiHeadSelfAttention`` (``output_attentions=True`` vs False). Calls
are interleaved (explicit, fused, explicit, ...) after a warm-up, so that load from other
processes hits both alike; we report medians and the ratio explicit / fused.

    python benchmarks/attention_speed.py            # writes benchmarks/results/attention_speed.json
    python benchmarks/attention_speed.py --threads 1 --out /tmp/one_thread.json

On a machine shared with other jobs, one thread per process is the steadier measurement: with
several threads, every PyTorch operation ends at a barrier that waits for a descheduled thread,
and the explicit path, which runs more operations, is hurt more than the fused kernel.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

from minibert.attention import MultiHeadSelfAttention, padding_mask, scaled_dot_product_attention

BATCH, HEADS, HEAD_DIM = 8, 4, 64
RESULTS = Path(__file__).resolve().parent / "results" / "attention_speed.json"


def make_inputs(seq: int, grad: bool) -> dict:
    """Random q, k, v (batch, heads, seq, head_dim), hidden states and a mask padding 0-25% of keys."""
    g = torch.Generator().manual_seed(seq)
    q, k, v = (
        torch.randn(BATCH, HEADS, seq, HEAD_DIM, generator=g).requires_grad_(grad) for _ in range(3)
    )
    x = torch.randn(BATCH, seq, HEADS * HEAD_DIM, generator=g).requires_grad_(grad)
    lengths = seq - torch.randint(0, seq // 4 + 1, (BATCH,), generator=g)
    attention_mask = (torch.arange(seq)[None, :] < lengths[:, None]).long()  # (batch, seq)
    return {"q": q, "k": k, "v": v, "x": x, "attention_mask": attention_mask}


def candidates(level: str, inputs: dict) -> dict[str, Callable[[], torch.Tensor]]:
    """The two implementations at one level ('core' or 'module'), each returning the output."""
    q, k, v, x, am = (inputs[n] for n in ("q", "k", "v", "x", "attention_mask"))
    if level == "core":
        mask = padding_mask(am, dtype=q.dtype)  # (batch, 1, 1, seq), as the model builds it
        return {
            "explicit": lambda: scaled_dot_product_attention(q, k, v, mask)[0],
            "fused": lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
        }
    torch.manual_seed(0)
    module = MultiHeadSelfAttention(HEADS * HEAD_DIM, HEADS).eval()
    return {
        "explicit": lambda: module(x, am, output_attentions=True)[0],
        "fused": lambda: module(x, am, output_attentions=False)[0],
    }


def run_once(fn: Callable[[], torch.Tensor], mode: str) -> float:
    """Seconds for one forward (no grad) or one forward + backward."""
    if mode == "forward":
        with torch.no_grad():
            start = time.perf_counter()
            fn()
            return time.perf_counter() - start
    start = time.perf_counter()
    fn().sum().backward()
    return time.perf_counter() - start


def measure(level: str, seq: int, mode: str, repeats: int, warmup: int) -> dict:
    """Interleaved timings of explicit and fused; medians in ms and the ratio explicit / fused."""
    inputs = make_inputs(seq, grad=mode == "forward+backward")
    fns = candidates(level, inputs)
    times: dict[str, list[float]] = {name: [] for name in fns}
    for i in range(warmup + repeats):
        order = list(fns) if i % 2 == 0 else list(reversed(fns))  # alternate who goes first
        for name in order:
            t = run_once(fns[name], mode)
            if i >= warmup:
                times[name].append(t)
    medians = {name: 1000 * statistics.median(ts) for name, ts in times.items()}
    return {
        "level": level,
        "seq": seq,
        "mode": mode,
        "explicit_ms": round(medians["explicit"], 3),
        "fused_ms": round(medians["fused"], 3),
        "ratio": round(medians["explicit"] / medians["fused"], 2),
        "repeats": repeats,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21, help="timed calls per implementation")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls first")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where to write the JSON")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's own choice)"
    )
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    rows = []
    print(f"{'level':7} {'seq':>4} {'mode':17} {'explicit ms':>12} {'fused ms':>9} {'ratio':>6}")
    for level in ("core", "module"):
        for seq in (128, 512):
            for mode in ("forward", "forward+backward"):
                row = measure(level, seq, mode, args.repeats, args.warmup)
                rows.append(row)
                print(
                    f"{level:7} {seq:>4} {mode:17} {row['explicit_ms']:>12.2f} "
                    f"{row['fused_ms']:>9.2f} {row['ratio']:>6.2f}"
                )
    report = {
        "what": "median time of explicit / fused attention (ratio > 1: the fused kernel is faster)",
        "settings": {"batch": BATCH, "heads": HEADS, "head_dim": HEAD_DIM, "dtype": "float32"},
        "machine": {
            "processor": platform.machine(),
            "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "python": platform.python_version(),
        },
        "date": time.strftime("%Y-%m-%d"),
        "results": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, args.out)  # atomic: an interrupted run never leaves half a file
    print(f"wrote {args.out.name} in {args.out.parent.name}/")


if __name__ == "__main__":
    main()
