"""What pretraining buys: Rotten Tomatoes test accuracy, from baselines to fine-tuned MiniLM.

    python benchmarks/finetuning.py                  # the whole table (MiniLM alone takes most of it)
    python benchmarks/finetuning.py --only baselines # majority, bag of words, frozen features
    python benchmarks/finetuning.py --only finetuning --models minilm   # one model's rows

The course's split is by movie (10,233 / 1,247 / 1,272 snippets; label 1 = fresh). Rows:

- the task's baselines: majority label; bag of words (TF-IDF unigrams + bigrams, logistic
  regression, L2 chosen on dev by balanced accuracy);
- frozen features + logistic regression: the course checkpoints and MiniLM, [CLS] and mean pooling;
- full fine-tuning (`minibert.recipes.finetune`, the best dev evaluation kept) from: random weights
  of the course checkpoint's size and vocabulary ("scratch"), the course checkpoint (Wikipedia),
  the course checkpoint continued on the training movies' review text ("course-reviews"), MiniLM,
  and any --candidate NAME=FOLDER (the self-pretrained model of pretraining_candidates.py);
- each of them at --sizes labelled examples and all of them, over --seeds seeds (mean and spread).
  The course's small models get a learning-rate sweep (SWEEP) at every size: seed 0 at each rate,
  the rate with the best *dev* accuracy chosen, the other seeds run at it; test never chooses.
  MiniLM runs at its default, 5e-5 (a sweep would take an hour of its runs);
- in the course checkpoint's own domain: restoring capitalisation of the held-out Wikipedia
  articles (a token task), course checkpoint against scratch, beside the two rules, with the
  sweep's protocol at every size and the paired statistics of ``capitalisation`` below.

Every run keeps the best dev evaluation (at most 3 on a subset, one per epoch on all the data);
subsets train in batches of 16 for at least 100 steps; batches group texts of similar length.
About an hour on a 2-core CPU, 17 minutes of it MiniLM's and 15-21 the capitalisation rows
(`--models` runs some models' rows, `--only` one part).
Runs on all the data keep their test predictions (a string of 0/1, one per test snippet in
corpora.rotten_tomatoes("test") order), for analyses by group of snippet.
Writes benchmarks/results/finetuning.json and finetuning.png (the labelled-examples curve).
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
from common.grid import word_counts  # (tp, fp, fn) of label 1 per sentence

from minibert import assets, corpora, finetuning, recipes, tasks
from minibert.model import BertModel
from minibert.recipes import finetune
from minibert.tokenization import BertTokenizer

RESULTS = Path(__file__).resolve().parent / "results"
MODELS = {  # name -> (model, from random weights)
    "scratch": ("course", True),
    "course": ("course", False),
    "course-reviews": ("course-reviews", False),
    "minilm": ("minilm", False),
}
SWEEP = (1e-4, 3e-4, 1e-3, 3e-3)  # the small models' learning rates, chosen on dev
MINILM_LR = 5e-5  # MiniLM's default (recipes.default_lr), not swept
EPOCHS = {"minilm": 1}  # on all the data (a MiniLM epoch takes ~6 minutes here); others 3
STEPS_AT_LEAST = 100  # a small subset still gets this many steps (more epochs)
SUBSET_BATCH = 16  # a subset's batches: more steps for the same time (64 steps of 32 left
# MiniLM at 1,024 examples below its 256-example score: too few updates at lr 5e-5)
SUBSET_EVALUATIONS = 3  # dev evaluations of a run on a subset (a third of MiniLM's time there)
# capitalisation: training sentences (None: all) -> steps
CAPITALISATION = {64: 150, 256: 150, 1024: 150, None: None}  # None: one epoch (540 steps)


def accuracy(predicted: torch.Tensor, reviews) -> float:
    return float((predicted == torch.tensor([r.label for r in reviews])).float().mean())


def baselines(train, dev, test) -> dict:
    """The task's baselines (majority label, bag of words) and frozen features, scored on test."""
    task = tasks.get("rotten-tomatoes")
    tok = BertTokenizer.from_pretrained(assets.path("minilm"))
    data = task.datasets(tok, 128, None, 0)
    rows = {n: s["accuracy"] for n, s in task.baseline_scores(data, tok).items()}
    for name in ("course", "course-reviews", "minilm"):
        folder = recipes.model_folder(name)
        model, tok = BertModel.from_pretrained(folder), BertTokenizer.from_pretrained(folder)
        by_pooling = [
            finetuning.sentence_features(model, tok, [r.text for r in s], ("cls", "mean"))
            for s in (train, dev, test)
        ]  # one pass over each split gives both poolings
        for k, pooling in enumerate(("cls", "mean")):
            feats = [split[k] for split in by_pooling]
            fits = {
                l2: finetuning.fit_logistic_regression(feats[0], [r.label for r in train], l2=l2)
                for l2 in (1e-4, 1e-3, 1e-2)
            }
            l2 = max(fits, key=lambda k: accuracy(finetuning.predict(fits[k], feats[1]), dev))
            label = f"frozen {name} features ({'[CLS]' if pooling == 'cls' else 'mean'}), logistic regression"
            rows[label] = accuracy(finetuning.predict(fits[l2], feats[2]), test)
    return rows


def fine_tune(name: str, seed: int, examples: int | None, lr: float, work: Path) -> dict:
    """One fine-tuning run; its best-dev dev and test measures and time."""
    model, scratch = MODELS[name]
    n = examples or 10_233
    batch = SUBSET_BATCH if examples else 32
    epochs = max(EPOCHS.get(name, 3), math.ceil(STEPS_AT_LEAST * batch / n))
    result = finetune(
        work / f"{name}-{seed}-{examples}-{lr}",
        model=model,
        scratch=scratch,
        epochs=epochs,
        batch_size=batch,
        lr=lr,
        train_examples=examples,
        seed=seed,
        progress=False,
        overwrite=True,
        evaluations=SUBSET_EVALUATIONS if examples else 10,
    )
    return {
        "seed": seed,
        "examples": n,
        "lr": lr,
        "epochs": epochs,
        "batch_size": batch,
        "test_accuracy": result.test["accuracy"],
        "test_f1": result.test["f1"],
        "dev_accuracy": result.dev["accuracy"],
        "seconds": round(result.seconds, 1),
    } | ({} if examples else {"test_predictions": "".join(map(str, result.test["predictions"]))})


def capitalisation(work: Path, seeds: int) -> dict:
    """The token task in the course checkpoint's domain: course against scratch, and two rules.

    The protocol of #39, as for every small model: at each size the learning rate is swept on seed
    0 (``recipes.sweep``: chosen by dev F1 of the capitalised words, which a model answering
    "lower-case" everywhere scores 0 on; ties by dev loss, then the smaller rate; a winner at the
    grid's edge widens it), the other seeds run at the chosen rate; all the data trains for one
    epoch (540 steps), the subsets for 150 steps. Each run keeps its test predictions (one 0/1 per
    test word, in order), so the course-minus-scratch gap gets a paired bootstrap interval over
    the test sentences (F1 of the summed counts, the seeds averaged) and a permutation p-value.
    """
    tok = BertTokenizer.from_pretrained(assets.course_checkpoint())
    task = tasks.get("capitalisation")
    data = task.datasets(tok, 64, None, 0)
    train, gold = data[0], task.gold(data[2])  # gold: one list of 0/1 per test sentence
    rows: dict = {"rules": task.baseline_scores(data, tok), "protocol": capitalisation.__doc__}
    counts: dict = {}  # (name, size) -> (seeds, sentences, 3) counts of (tp, fp, fn)
    for name in ("scratch", "course"):
        for examples, steps in CAPITALISATION.items():
            size = str(examples or "all")
            options = dict(
                model="course",
                task="capitalisation",
                scratch=name == "scratch",
                max_length=64,
                train_examples=examples,
                progress=False,
                overwrite=True,
                evaluations=SUBSET_EVALUATIONS,
                **({"steps": steps} if steps else {"epochs": 1}),
            )
            swept = recipes.sweep(work / f"caps-{name}-{size}", SWEEP, seed=0, **options)
            lr = swept.chosen.lr
            results = [swept.chosen.result] + [
                finetune(work / f"caps-{name}-{size}-{seed}", lr=lr, seed=seed, **options)
                for seed in range(1, seeds)
            ]
            runs = [
                {
                    "seed": seed,
                    "sentences": examples or len(train),
                    "steps": r.history[-1]["step"] if r.history else steps,
                    "lr": lr,
                    "test_accuracy": r.test["accuracy"],
                    "test_f1": r.test["f1"],
                    "dev_f1": r.selection["value"],
                    "seconds": round(r.seconds, 1),
                    "test_predictions": "".join(str(p) for s in r.test["predictions"] for p in s),
                }
                for seed, r in enumerate(results)
            ]
            counts[name, size] = [word_counts(gold, r.test["predictions"]) for r in results]
            f1 = [r["test_f1"] for r in runs]
            row = rows.setdefault(name, {})[size] = {
                **summary(runs),
                "f1_mean": statistics.mean(f1),
                "f1_std": statistics.stdev(f1) if len(f1) > 1 else 0.0,
                "lr": lr,
                "sweep": swept.as_dict(),
            }
            print(
                f"capitalisation, {name}, {size} sentences: lr {lr:g} (chosen on dev F1), word "
                f"accuracy {row['mean']:.1%}, F1 {row['f1_mean']:.3f}",
                flush=True,
            )
    for size in rows["course"]:
        diff, low, high = finetuning.paired_bootstrap_f1(
            counts["scratch", size], counts["course", size]
        )
        p = finetuning.paired_permutation_test_f1(counts["scratch", size], counts["course", size])
        rows.setdefault("course_minus_scratch", {})[size] = {
            "f1": diff,
            "low": low,
            "high": high,
            "p": p,
            "sentences": len(gold),
        }
        print(
            f"capitalisation, {size} sentences: course - scratch F1 {diff:+.3f} "
            f"[{low:+.3f}, {high:+.3f}], p {p:.3g}",
            flush=True,
        )
    return rows


def starting_point(name: str, examples: int | None, seeds: int, work: Path) -> dict:
    """One model at one training-set size: the lr chosen on dev (small models), then every seed."""
    if name == "minilm":
        runs = [fine_tune(name, seed, examples, MINILM_LR, work) for seed in range(seeds)]
        return {**summary(runs), "lr": MINILM_LR}
    sweep = [fine_tune(name, 0, examples, lr, work) for lr in SWEEP]
    chosen = max(sweep, key=lambda run: run["dev_accuracy"])  # the first best on a tie
    runs = [chosen] + [fine_tune(name, s, examples, chosen["lr"], work) for s in range(1, seeds)]
    return {**summary(runs), "lr": chosen["lr"], "sweep": sweep}


def summary(runs: list[dict]) -> dict:
    values = [r["test_accuracy"] for r in runs]
    return {
        "mean": statistics.mean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="*", default=[64, 256, 1024])
    parser.add_argument(
        "--only", choices=("baselines", "finetuning", "capitalisation"), default=None
    )
    parser.add_argument(
        "--candidate", action="append", default=[], help="NAME=FOLDER: another starting point"
    )
    parser.add_argument("--models", nargs="*", default=None, help="models to fine-tune (all)")
    args = parser.parse_args()
    for spec in args.candidate:
        name, _, folder = spec.partition("=")
        MODELS[name] = (folder, False)
    args.models = args.models or list(MODELS)
    if unknown := set(args.models) - set(MODELS):
        parser.error(
            f"unknown model(s) {sorted(unknown)}: choose from {list(MODELS)} or add --candidate"
        )

    started = time.perf_counter()
    train, dev, test = (corpora.rotten_tomatoes(s) for s in ("train", "dev", "test"))
    out_file = RESULTS / "finetuning.json"
    results = json.loads(out_file.read_text()) if out_file.exists() else {}
    results.update(
        what="Rotten Tomatoes test accuracy (1,272 snippets of movies in neither train nor dev)",
        machine=f"{platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}",
        learning_rates={"sweep (small models, chosen on dev)": SWEEP, "minilm": MINILM_LR},
    )
    if args.only in (None, "baselines"):
        results["baselines"] = baselines(train, dev, test)
        results["baselines_seconds"] = round(time.perf_counter() - started)
        for name, value in results["baselines"].items():
            print(f"{value:.1%}  {name}", flush=True)
    if args.only in (None, "capitalisation"):
        begun = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            results["capitalisation"] = capitalisation(Path(tmp), args.seeds)
        results["capitalisation_seconds"] = round(time.perf_counter() - begun)
        out_file.write_text(json.dumps(results, indent=1) + "\n")
    if args.only in (None, "finetuning"):
        with tempfile.TemporaryDirectory() as tmp:
            curve = results.setdefault("labelled_examples_curve", {})
            for name in args.models:
                begun = time.perf_counter()
                curve[name] = {}
                for examples in [*args.sizes, None]:
                    row = curve[name][str(examples or len(train))] = starting_point(
                        name, examples, args.seeds, Path(tmp)
                    )
                    print(
                        f"{row['mean']:.1%} +- {row['std']:.1%} (lr {row['lr']:g})  {name}, "
                        f"{examples or 'all'} examples",
                        flush=True,
                    )
                    out_file.write_text(json.dumps(results, indent=1) + "\n")
                results.setdefault("model_seconds", {})[name] = round(time.perf_counter() - begun)
                results.setdefault("fine_tuned", {})[name] = curve[name][str(len(train))]
                out_file.write_text(json.dumps(results, indent=1) + "\n")  # after each model
        plot(results, RESULTS / "finetuning.png")
    seconds = round(time.perf_counter() - started)
    if args.only is None and set(args.models) == set(MODELS):  # the whole table's time
        results["seconds"] = seconds
    print(f"{seconds} s in all", flush=True)
    out_file.write_text(json.dumps(results, indent=1) + "\n")


def plot(results: dict, path: Path) -> None:
    """Test accuracy against the number of labelled examples, one line per starting point."""
    import matplotlib

    matplotlib.use("Agg")
    from minibert.teaching import figures

    short = {"majority class": "majority class", "bag of words": "bag of words, all examples"}
    lines = {
        label: value
        for name, value in results.get("baselines", {}).items()
        for prefix, label in short.items()
        if name.startswith(prefix)
    }
    fig = figures.labelled_examples_curve(results["labelled_examples_curve"], lines)
    fig.axes[0].set_title("Rotten Tomatoes: what pretraining is worth")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
