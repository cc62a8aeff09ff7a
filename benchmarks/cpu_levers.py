"""The speed levers on this CPU: torch.compile, bfloat16 autocast and threads, on the course's
pretraining step and on a fine-tuning step, each against the plain eager float32 step in one run.

Pretraining: the course checkpoint's size (tiny, 8,000-piece vocabulary, dropout 0), 32 real MLM +
NSP examples of 128 tokens from the Wikipedia training articles, one step = forward (MLM logits at
the masked positions, as `minibert pretrain`), backward, AdamW; transformers' BertForPreTraining
on the same weights and batches gives the ratio the package is held to (at least 1.5x): this file
is the one source of that ratio (the retired pretraining_throughput.py measured it at the mini
size, 4 layers of 256, where the output layer weighs less and skipping the unmasked positions'
MLM logits bought 1.61x, not the course size's 3.2x; with full logits the two steps were equal).
Fine-tuning: the course checkpoint with a new classifier on Rotten Tomatoes, batches of 32 reviews
padded to their longest, one step = forward, backward, AdamW.
The steps run in interleaved rounds (the order alternating), after warm-up rounds that also
compile. A lever is a ratio: the plain step's seconds over the lever's on the same batch (> 1:
faster), the median over the rounds.

    python benchmarks/cpu_levers.py            # writes benchmarks/results/cpu_levers.json (~5 min)
    python benchmarks/cpu_levers.py --rounds 3 --out /tmp/x.json   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from common.steps import pretraining_loss

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from minibert import corpora, finetuning, pretraining, tasks  # noqa: E402
from minibert.model import BertForPreTraining, BertForSequenceClassification  # noqa: E402
from minibert.tokenization import BertTokenizer  # noqa: E402

CHECKPOINT = ROOT / "data" / "course_checkpoint"
RESULTS = ROOT / "benchmarks" / "results" / "cpu_levers.json"
BATCH = 32


def cpu_model() -> dict:
    """The processor's name and the instruction sets that bfloat16 arithmetic can use."""
    flags, name = set(), platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and name in ("", platform.machine()):
                name = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    wanted = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")
    return {"name": name, "bf16_instructions": [f for f in wanted if f in flags]}


def pretraining_batches(tok: BertTokenizer, count: int) -> list[dict]:
    """count batches of the course recipe's examples (128 tokens, dynamic masking)."""
    docs = pretraining.tokenize_documents(corpora.wikipedia_articles("train")[:30], tok)
    data = pretraining.PretrainingDataset.from_tokenizer(
        pretraining.create_examples(docs, 128), tok
    )
    items = [[data[i] for i in range(b * BATCH, (b + 1) * BATCH)] for b in range(count)]
    return [pretraining.collate(batch, tok.pad_token_id) for batch in items]


def review_batches(tok: BertTokenizer, count: int) -> list[dict]:
    """count batches of Rotten Tomatoes training reviews, each padded to its longest."""
    train = tasks.get("rotten-tomatoes").datasets(tok, 128, BATCH * count, 0)[0]
    return [
        finetuning.collate([train[i] for i in range(b * BATCH, (b + 1) * BATCH)], tok.pad_token_id)
        for b in range(count)
    ]


def stepper(model: torch.nn.Module, call: Callable, precision: str, compiled: bool, threads=None):
    """One training step (forward, backward, AdamW) of a model on a batch, with the levers set."""
    net = torch.compile(model) if compiled else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)

    def step(batch: dict) -> None:
        before = torch.get_num_threads()
        if threads:
            torch.set_num_threads(threads)
        try:
            with torch.autocast("cpu", torch.bfloat16, enabled=precision == "bf16"):
                loss = call(net, batch)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        finally:
            torch.set_num_threads(before)

    return step


def pretraining_steps(tok: BertTokenizer) -> dict[str, Callable]:
    """The pretraining step's variants, each on its own copy of the same weights."""
    import transformers

    config = BertForPreTraining.from_pretrained(CHECKPOINT).config.replace(
        hidden_dropout=0.0, attention_dropout=0.0
    )

    def ours(net, batch):
        return pretraining_loss("minibert", net, batch)

    def theirs(net, batch):
        return pretraining_loss("transformers", net, batch)

    def fresh() -> BertForPreTraining:
        torch.manual_seed(0)
        return BertForPreTraining(config).train()

    with tempfile.TemporaryDirectory() as folder:
        fresh().save_pretrained(folder)
        hf = transformers.BertForPreTraining.from_pretrained(folder, attn_implementation="sdpa")
    return {
        "eager fp32": stepper(fresh(), ours, "fp32", False),
        "compiled fp32": stepper(fresh(), ours, "fp32", True),
        "eager bf16": stepper(fresh(), ours, "bf16", False),
        "compiled bf16": stepper(fresh(), ours, "bf16", True),
        "eager fp32, 1 thread": stepper(fresh(), ours, "fp32", False, threads=1),
        "transformers eager fp32": stepper(hf.train(), theirs, "fp32", False),
    }


def finetuning_steps() -> dict[str, Callable]:
    """The fine-tuning step's variants: the course checkpoint with a new 2-label classifier."""

    def call(net, batch):
        return net(**batch).loss

    def fresh() -> BertForSequenceClassification:
        torch.manual_seed(0)
        return BertForSequenceClassification.from_pretrained(CHECKPOINT, num_labels=2).train()

    return {
        "eager fp32": stepper(fresh(), call, "fp32", False),
        "compiled fp32": stepper(fresh(), call, "fp32", True),
        "eager bf16": stepper(fresh(), call, "bf16", False),
        "eager fp32, 1 thread": stepper(fresh(), call, "fp32", False, threads=1),
    }


def interleaved(steps: dict[str, Callable], batches: list[dict], warmup: int) -> dict:
    """Median seconds per step of each variant, rounds interleaved; the first `warmup` rounds
    (which compile) are timed apart."""
    times: dict[str, list[float]] = {name: [] for name in steps}
    first: dict[str, float] = {name: 0.0 for name in steps}
    for r, batch in enumerate(batches):
        for name in list(steps) if r % 2 == 0 else reversed(list(steps)):
            start = time.perf_counter()
            steps[name](batch)
            seconds = time.perf_counter() - start
            if r < warmup:
                first[name] += seconds
            else:
                times[name].append(seconds)
    median = {name: statistics.median(t) for name, t in times.items()}
    base = times["eager fp32"]  # each round's batch differs: ratios are taken round by round
    return {
        "median_seconds": median,
        "speed_vs_eager_fp32": {
            name: round(statistics.median(b / s for b, s in zip(base, t)), 3)
            for name, t in times.items()
        },
        "warmup_seconds": {name: round(s, 1) for name, s in first.items()},
        "all_seconds": times,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds per variant")
    parser.add_argument("--warmup", type=int, default=3, help="untimed rounds first (compiling)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    tok = BertTokenizer.from_pretrained(CHECKPOINT)
    count = args.rounds + args.warmup
    result: dict = {
        "benchmark": "levers on the CPU: torch.compile, bf16 autocast, threads; vs eager fp32",
        "machine": {
            "cpu": cpu_model(),
            "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "python": platform.python_version(),
        },
        "load_average_before": [round(x, 2) for x in os.getloadavg()],  # other work on the CPU
        "rounds": args.rounds,
        "warmup": args.warmup,
    }
    for name, steps, batches in (
        ("pretraining", pretraining_steps(tok), pretraining_batches(tok, count)),
        ("finetuning", finetuning_steps(), review_batches(tok, count)),
    ):
        print(f"{name}: {len(steps)} variants x {count} rounds", flush=True)
        result[name] = interleaved(steps, batches, args.warmup)
        for variant, ratio in result[name]["speed_vs_eager_fp32"].items():
            print(f"  {variant:>26}: {ratio:.2f}x eager fp32", flush=True)
    result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    pre = result["pretraining"]["median_seconds"]
    result["pretraining"]["minibert_vs_transformers"] = round(
        pre["transformers eager fp32"] / pre["eager fp32"], 3
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(
        f"minibert's pretraining step: {result['pretraining']['minibert_vs_transformers']:.2f}x "
        f"transformers'; written to {args.out}"
    )


if __name__ == "__main__":
    main()
