"""Tokens per second of a pretraining step: minibert vs transformers' BertForPreTraining.

Both models: the course checkpoint's size and pretraining dropout by default (read from its
card; `--preset mini --dropout 0.1` for another), the course's 8,000-piece vocabulary, the same
weights, the same batches (32 real MLM + NSP examples of up to 128 tokens from the Wikipedia
training articles, built by minibert.pretraining). One step =
forward, loss, backward, AdamW update, zero_grad. minibert runs as `minibert pretrain` does (MLM
logits only at the masked positions, `sparse_mlm=True`) and, for a like-for-like view, with full
logits as transformers computes them. Interleaved rounds, warm-up, medians; ratio > 1 means
minibert is faster. Read the ratios; absolute times on a shared 2-core machine are noisy.

    python benchmarks/pretraining_throughput.py      # writes benchmarks/results/pretraining_throughput_PRESET.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import transformers  # noqa: E402

from minibert import corpora, pretraining  # noqa: E402
from minibert.config import BertConfig  # noqa: E402
from minibert.model import BertForPreTraining  # noqa: E402
from minibert.tokenization import BertTokenizer  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
CHECKPOINT = Path(__file__).resolve().parent.parent / "data" / "course_checkpoint"
BATCH = 32


def batches(tok: BertTokenizer, count: int) -> list[dict[str, torch.Tensor]]:
    docs = pretraining.tokenize_documents(corpora.wikipedia_articles("train")[:30], tok)
    data = pretraining.PretrainingDataset.from_tokenizer(
        pretraining.create_examples(docs, 128), tok
    )
    return [
        pretraining.collate([data[i] for i in range(b * BATCH, (b + 1) * BATCH)], tok.pad_token_id)
        for b in range(count)
    ]


def make_models(config: BertConfig):
    torch.manual_seed(0)
    fields = {k: v for k, v in config.to_hf_config().items() if k != "model_type"}
    config = transformers.BertConfig(**fields, attn_implementation="sdpa")
    theirs = transformers.BertForPreTraining(config)
    with tempfile.TemporaryDirectory() as folder:
        theirs.save_pretrained(folder)
        ours = BertForPreTraining.from_pretrained(folder)
    return ours.train(), theirs.train()


def make_step(name, model, optimizer):
    def step(batch):
        if name == "transformers":
            loss = model(
                input_ids=batch["input_ids"],
                token_type_ids=batch["token_type_ids"],
                attention_mask=batch["attention_mask"],
                labels=batch["mlm_labels"],
                next_sentence_label=batch["next_sentence_label"],
            ).loss
        else:
            loss = model(**batch, sparse_mlm=name == "minibert (sparse MLM)").loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=9, help="timed rounds per implementation")
    parser.add_argument("--warmup", type=int, default=2, help="untimed rounds first")
    recipe = json.loads((CHECKPOINT / "card.json").read_text())["recipe"]
    parser.add_argument(
        "--preset", default=recipe["preset"], help="model size (default: the course checkpoint's)"
    )
    parser.add_argument(
        "--dropout",
        type=float,
        default=recipe["dropout"],
        help="hidden and attention dropout (default: the course checkpoint's pretraining dropout)",
    )
    args = parser.parse_args()
    tok = BertTokenizer.from_pretrained(CHECKPOINT)
    data = batches(tok, args.reps + args.warmup)
    config = BertConfig.preset(
        args.preset,
        vocab_size=len(tok.vocab),
        max_position_embeddings=128,
        hidden_dropout=args.dropout,
        attention_dropout=args.dropout,
    )
    ours, theirs = make_models(config)
    ours_full, _ = make_models(config)
    steps = {
        "minibert (sparse MLM)": make_step(
            "minibert (sparse MLM)", ours, torch.optim.AdamW(ours.parameters())
        ),
        "minibert (full logits)": make_step(
            "minibert (full logits)", ours_full, torch.optim.AdamW(ours_full.parameters())
        ),
        "transformers": make_step("transformers", theirs, torch.optim.AdamW(theirs.parameters())),
    }
    times: dict[str, list[float]] = {name: [] for name in steps}
    for r, batch in enumerate(data):
        order = list(steps) if r % 2 == 0 else list(reversed(steps))
        for name in order:
            start = time.perf_counter()
            steps[name](batch)
            if r >= args.warmup:
                times[name].append(time.perf_counter() - start)
    tokens = statistics.mean(float(b["attention_mask"].sum()) for b in data[args.warmup :])
    median = {name: statistics.median(t) for name, t in times.items()}
    result = {
        "benchmark": "pretraining step tokens/s, minibert vs transformers BertForPreTraining (sdpa)",
        "config": {
            "preset": args.preset,
            "layers": config.num_layers,
            "hidden": config.hidden_size,
            "heads": config.num_heads,
            "intermediate": config.intermediate_size,
            "vocab": len(tok.vocab),
            "dropout": args.dropout,
            "batch": BATCH,
            "max_len": 128,
        },
        "machine": {
            "processor": platform.machine(),
            "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        },
        "reps": args.reps,
        "tokens_per_batch": tokens,
        "median_seconds": median,
        "tokens_per_second": {name: tokens / s for name, s in median.items()},
        "ratio_vs_transformers": {name: median["transformers"] / s for name, s in median.items()},
        "all_seconds": times,
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"pretraining_throughput_{args.preset}_dropout{args.dropout:g}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{args.preset}, dropout {args.dropout:g}; written to {path.name}")
    for name, s in median.items():
        print(
            f"{name:>24}: {s:.3f} s/step, {tokens / s:,.0f} tokens/s, "
            f"{median['transformers'] / s:.2f}x transformers"
        )


if __name__ == "__main__":
    main()
