"""minibert's BertTokenizer vs transformers' pure-Python and Rust BERT tokenizers: medians, ratios.

Three implementations encode the same texts in the same process, with the bert-base-uncased
vocabulary (the MiniLM asset): minibert's ``BertTokenizer``; transformers' pure-Python tokenizer
(``BertTokenizerLegacy`` in transformers 5, ``BertTokenizer`` in transformers 4); and the Rust
tokenizer from the ``tokenizers`` library (``BertTokenizer`` in transformers 5), called once per
text like the others and, separately, once for the whole list (its batch API runs on all cores),
both through transformers and directly (``backend_tokenizer``, without transformers' Python
wrapper, which costs more than the tokenization itself for short texts).

Workloads: every Wikipedia sentence, one call each (input_ids, token_type_ids, attention_mask);
and whole Wikipedia articles, one call each, no truncation (what pretraining data preparation
does). Rounds are interleaved (ours, Python, Rust, ...) after a warm-up, so load from other
processes hits all alike; we report medians and ratios. minibert caches the WordPiece result of
each word: "warm" reuses one tokenizer across rounds (the normal case), "cold" builds a fresh one
for every round (an empty cache each time).

    python benchmarks/tokenizer_speed.py           # writes benchmarks/results/tokenizer_speed.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

import tokenizers  # noqa: E402
import transformers  # noqa: E402

try:  # transformers 5 renamed the pure-Python tokenizer; BertTokenizer is now the Rust one
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy
except ImportError:  # transformers 4: BertTokenizer is the pure-Python one
    from transformers import BertTokenizer as BertTokenizerLegacy

from minibert import assets, corpora  # noqa: E402
from minibert.tokenization import BertTokenizer  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "tokenizer_speed.json"


def implementations(folder: Path) -> dict[str, Callable[[list[str]], list[list[int]]]]:
    """Name -> function that encodes a list of texts and returns their input_ids."""
    warm = BertTokenizer.from_pretrained(folder)
    python_ref = BertTokenizerLegacy.from_pretrained(folder)
    rust_ref = transformers.BertTokenizerFast.from_pretrained(folder)
    backend = rust_ref.backend_tokenizer  # the tokenizers.Tokenizer inside, without transformers

    def ours_cold(texts: list[str]) -> list[list[int]]:
        fresh = BertTokenizer(warm.ids_to_tokens)  # same vocabulary, empty word cache
        return [fresh(t).input_ids for t in texts]

    return {
        "minibert (warm cache)": lambda texts: [warm(t).input_ids for t in texts],
        "minibert (cold cache)": ours_cold,
        "transformers pure Python": lambda texts: [python_ref(t)["input_ids"] for t in texts],
        "transformers Rust, per text": lambda texts: [rust_ref(t)["input_ids"] for t in texts],
        "transformers Rust, batch": lambda texts: rust_ref(texts)["input_ids"],
        "tokenizers (Rust) direct, per text": lambda texts: [backend.encode(t).ids for t in texts],
        "tokenizers (Rust) direct, batch": lambda texts: [
            e.ids for e in backend.encode_batch(texts)
        ],
    }


def measure(texts: list[str], fns: dict, rounds: int) -> dict[str, float]:
    """Median seconds per implementation over interleaved rounds, after one warm-up round."""
    outputs = {name: fn(texts) for name, fn in fns.items()}  # warm-up, and a correctness check
    reference = outputs["transformers pure Python"]
    for name, ids in outputs.items():
        if name.startswith("minibert") and ids != reference:
            raise RuntimeError(f"{name} disagrees with the pure-Python reference")
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn(texts)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    transformers.logging.set_verbosity_error()  # "sequence longer than 512" notices for articles

    articles = corpora.wikipedia_articles("all")
    workloads = {
        "Wikipedia sentences": [s for a in articles for s in a.sentences],
        "Wikipedia articles": [a.text for a in articles],
    }
    fns = implementations(assets.path("minilm"))
    results = []
    for workload, texts in workloads.items():
        medians = measure(texts, fns, args.rounds)
        python_s = medians["transformers pure Python"]
        rows = {
            name: {
                "median_s": round(s, 3),
                "texts_per_s": round(len(texts) / s),
                "speed_vs_pure_python": round(python_s / s, 2),
            }
            for name, s in medians.items()
        }
        ours = medians["minibert (warm cache)"]
        summary = {
            "minibert_vs_pure_python": round(python_s / ours, 2),
            "minibert_cold_cache_vs_pure_python": round(
                python_s / medians["minibert (cold cache)"], 2
            ),
            # > 1: that Rust path is faster than minibert; < 1: slower
            "rust_speed_vs_minibert": {
                name: round(ours / s, 2) for name, s in medians.items() if "Rust" in name
            },
        }
        results.append(
            {"workload": workload, "texts": len(texts), "implementations": rows, **summary}
        )
        print(f"\n{workload}: {len(texts)} texts, median of {args.rounds} interleaved rounds")
        for name, row in rows.items():
            print(
                f"  {name:36s} {row['median_s']:8.3f} s  {row['texts_per_s']:8d} texts/s  "
                f"{row['speed_vs_pure_python']:6.2f}x the pure-Python tokenizer"
            )
        print("  " + ", ".join(f"{k} = {v}" for k, v in summary.items()))

    report = {
        "what": "encoding speed with the bert-base-uncased vocabulary; speed_vs_pure_python > 1: "
        "faster than the pure-Python reference; rust_speed_vs_minibert > 1: that Rust path is "
        "faster than minibert (warm cache)",
        "machine": {
            "processor": platform.machine(),
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
        },
        "date": datetime.date.today().isoformat(),
        "rounds": args.rounds,
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out.name}")


if __name__ == "__main__":
    main()
