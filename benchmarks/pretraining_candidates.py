"""What pretraining buys on reviews: candidate starting points for the course's small model.

    python benchmarks/pretraining_candidates.py --candidate adapted=runs/adapted \
        --models scratch course adapted --sizes 1024 all --lrs 1e-4 3e-4 1e-3 3e-3

A first look (one seed) before the full protocol of benchmarks/finetuning.py: each candidate is
fine-tuned on Rotten Tomatoes (split by movie) at each learning rate and training-set size, with
the recipe's defaults otherwise (3 epochs; subsets in batches of 16 for at least 100 steps; the
best dev evaluation kept), and its dev and test accuracy recorded. The learning rate to report is
the one with the best *dev* accuracy of the seed-0 sweep; test is never used to choose.
`--at-best --seed 1` then runs another seed at that rate, and `at_best_lr` in the results gives
the mean and spread over the seeds run there.

Candidates, each made by `minibert pretrain` (1 thread, 2-core CPU, about 20 minutes each):

- scratch: random weights of the course checkpoint's size and vocabulary;
- course: the course checkpoint (Wikipedia, MLM + NSP);
- adapted: the course checkpoint continued on the review text of the training movies, MLM only
  (task-adaptive pretraining, Gururangan et al. 2020):
  `minibert pretrain --init course --corpus reviews --objective none --steps 6000 --lr 1e-3
  --dropout 0 --threads 1 --eval-every 500 --out runs/adapted`;
- self: the same architecture pretrained on the review text only, with a vocabulary trained on
  it (self-pretraining, Krishna et al. 2023): `minibert pretrain --preset tiny --corpus reviews
  --objective none --vocab-size 8000 --steps 6000 --neighbour-steps 1000 --lr 2e-3
  --warmup-steps 500 --dropout 0 --threads 1 --eval-every 500 --out runs/self`.

The folders are not committed (runs/ is scratch): re-create them with the commands above.

`--mlm --models course adapted self` measures [MASK] top-1 on the held-out movies' review text
(training movies only, held out by title) beside an n-gram table fitted on the rest of it and the
most frequent token, at the same positions (each model with its own vocabulary).

Writes (and adds to) benchmarks/results/pretraining_candidates.json.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch

from minibert.recipes import finetune

RESULTS = Path(__file__).resolve().parent / "results" / "pretraining_candidates.json"
TRAIN_SNIPPETS = 10_233
BUILT_IN = {"scratch": ("course", True), "course": ("course", False)}


def run(model: str, scratch: bool, examples: int | None, lr: float, seed: int, work: Path) -> dict:
    """One fine-tuning run with the benchmark's protocol; its dev and test accuracy."""
    batch = 16 if examples else 32
    epochs = max(3, math.ceil(100 * batch / (examples or TRAIN_SNIPPETS)))
    started = time.perf_counter()
    result = finetune(
        work / "run", model=model, scratch=scratch, epochs=epochs, batch_size=batch, lr=lr,
        train_examples=examples, seed=seed, progress=False, overwrite=True,
        evaluations=3 if examples else 10, threads=torch.get_num_threads(),
    )  # fmt: skip
    return {
        "examples": examples or TRAIN_SNIPPETS,
        "lr": lr,
        "seed": seed,
        "dev_accuracy": result.dev["accuracy"],
        "test_accuracy": result.test["accuracy"],
        "seconds": round(time.perf_counter() - started, 1),
    }


def best_by_dev(rows: list[dict], sweep_seed: int = 0) -> dict:
    """Per (candidate, examples): the sweep's run with the best dev accuracy, and its lr."""
    best: dict = {}
    for row in rows:
        if row["seed"] != sweep_seed:
            continue
        key = f"{row['candidate']} {row['examples']}"
        if key not in best or row["dev_accuracy"] > best[key]["dev_accuracy"]:
            best[key] = row
    return best


def at_best(rows: list[dict], best: dict) -> dict:
    """Per (candidate, examples): test accuracy over every seed run at the lr chosen on dev."""
    summary = {}
    for key, chosen in best.items():
        tests = [
            r["test_accuracy"]
            for r in rows
            if f"{r['candidate']} {r['examples']}" == key and r["lr"] == chosen["lr"]
        ]
        summary[key] = {
            "lr": chosen["lr"],
            "seeds": len(tests),
            "mean": statistics.mean(tests),
            "std": statistics.stdev(tests) if len(tests) > 1 else 0.0,
        }
    return summary


def mlm_on_reviews(folder: str) -> dict:
    """[MASK] top-1 on the held-out movies' review text, with baselines at the same positions."""
    from minibert import pretraining
    from minibert.model import BertForPreTraining
    from minibert.recipes import load_corpus, model_folder
    from minibert.tokenization import BertTokenizer
    from minibert.training import evaluate

    train, heldout = load_corpus("reviews")  # training movies only; held out by title
    source = model_folder(folder)
    tok, model = BertTokenizer.from_pretrained(source), BertForPreTraining.from_pretrained(source)
    data = pretraining.heldout_dataset(heldout, tok, 128, objective="none", seed=1)
    items = [data[i] for i in range(len(data))]
    collate = lambda batch: pretraining.collate(batch, tok.pad_token_id)  # noqa: E731
    measured = evaluate(model, data, 64, collate, metrics_fn=pretraining.metrics_for(tok))
    baselines = pretraining.mlm_baselines(items, pretraining.tokenize_documents(train, tok), tok)
    return {
        "mask_positions": sum(i == tok.mask_token_id for item in items for i in item["input_ids"]),
        "model": {"top1": measured["mask_accuracy"], "top5": measured["mask_top5"]},
        "ngram_table": baselines["ngram"]["mask_accuracy"],
        "most_frequent": baselines["most_frequent"]["mask_accuracy"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--candidate", action="append", default=[], help="NAME=FOLDER to add")
    parser.add_argument("--models", nargs="+", required=True, help="candidates to run")
    parser.add_argument("--sizes", nargs="+", default=["1024", "all"])
    parser.add_argument("--lrs", nargs="+", type=float, default=[1e-4, 3e-4, 1e-3, 3e-3])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--at-best",
        action="store_true",
        help="run --seed at the lr the seed-0 sweep chose on dev (instead of at every --lrs)",
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--mlm",
        action="store_true",
        help="instead: [MASK] top-1 of each model on held-out review text, beside an n-gram table "
        "and the most frequent token at the same positions",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    candidates = dict(BUILT_IN)
    for spec in args.candidate:
        name, _, folder = spec.partition("=")
        candidates[name] = (folder, False)
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"runs": []}
    results["machine"] = (
        f"{platform.machine()}, {args.threads} thread(s), torch {torch.__version__}"
    )
    if args.mlm:
        mlm = results.setdefault("mlm_heldout_reviews", {})
        for name in args.models:
            mlm[name] = mlm_on_reviews(candidates[name][0])
            print(name, json.dumps(mlm[name]), flush=True)
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")
        return
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            model, scratch = candidates[name]
            for size in args.sizes:
                examples = TRAIN_SNIPPETS if size == "all" else int(size)
                chosen = results.get("best_by_dev", {}).get(f"{name} {examples}")
                for lr in [chosen["lr"]] if args.at_best else args.lrs:
                    row = {"candidate": name, "model": model, "scratch": scratch}
                    row |= run(
                        model,
                        scratch,
                        None if size == "all" else int(size),
                        lr,
                        args.seed,
                        Path(tmp),
                    )
                    print(json.dumps(row), flush=True)
                    results["runs"] = [
                        r for r in results["runs"]
                        if (r["candidate"], r["examples"], r["lr"], r["seed"])
                        != (name, row["examples"], lr, args.seed)
                    ] + [row]  # fmt: skip
                    results["best_by_dev"] = best_by_dev(results["runs"])
                    results["at_best_lr"] = at_best(results["runs"], results["best_by_dev"])
                    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    for key, row in sorted(results["at_best_lr"].items()):
        print(
            f"{key:>22}: lr {row['lr']:g}, test {row['mean']:.1%} +- {row['std']:.1%}, {row['seeds']} seed(s)"
        )


if __name__ == "__main__":
    main()
