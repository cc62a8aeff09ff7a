"""The data-scale curve: what pretraining buys against how much text it read.

The course recipe (the course checkpoint's command: tiny preset, 30,000 steps of 32 examples,
AdamW lr 2e-3, 1,000 warm-up steps, dropout 0, neighbour guidance for the first 3,000 steps,
seed 0) pretrained on 1/8, 1/4, 1/2 and all of the Wikipedia training articles' words
(`minibert pretrain --text-fraction F`: whole articles in a fixed shuffled order, nested, the
vocabulary trained on the same share). Every run takes the same number of steps, so a smaller
share is read more times over (1/8: about 40 passes over its examples; all: 5); what varies is
the text, not the compute. Each model is then fine-tuned on an in-domain task at 256 labelled
items, beside random weights of its own size and vocabulary, with the sweep's
protocol (the learning rate chosen on dev by the task's balance-insensitive measure); the gain
over random weights is measured on the same test items with a paired bootstrap interval.

    python benchmarks/pretraining_scale.py pretrain --fractions 0.125 0.25 0.5   # one at a time
    python benchmarks/pretraining_scale.py pretrain --fractions 0.125 0.25 0.5 --parallel 3 \
        --device cuda
    python benchmarks/pretraining_scale.py collect               # held-out curves: results + figure
    python benchmarks/pretraining_scale.py finetune              # the gain curve: results + figure

All of the text is the course checkpoint itself (data/course_checkpoint: this recipe, run on this
CPU), so three runs are new. A run already finished is read, a run interrupted resumes (its state
is saved every 500 steps). On a 2-core CPU one run takes about 100 minutes; on a lent H200 the
three side by side took 11 minutes. Runs live in runs/scale/ (git-ignored). `collect` writes
benchmarks/results/pretraining_scale.json and pretraining_scale.png; `finetune` (99 runs of
7 to 10 s on 2 CPU cores, each cached in runs/scale/finetune, so it resumes; beside other work set
OMP_NUM_THREADS=1: two threads on a shared core ran up to 20 times slower) adds the gain to the
JSON and draws pretraining_scale_gain.png. Where gensim is missing (a GPU machine), `export
FILE.json` here and `pretrain --corpus FILE.json` there read the same articles in the same order
(`minibert pretrain --corpus` reads a file that `corpora.write_articles` wrote, and splits it as
the course extract). The runs in the results read the same articles on the GPU machine through a
stand-in for `corpora.wikipedia_articles` that this script used to install; only that route has
changed. The fine-tuning half uses ten seeds, not three (see finetune_curve).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import course_recipe, grid

from minibert.recipes.outputs import RUN_FOLDER

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "runs" / "scale"
RESULTS = Path(__file__).resolve().parent / "results"
FRACTIONS = (0.125, 0.25, 0.5, 1.0)
RECIPE = course_recipe.flags()  # the course checkpoint's recipe.json, as pretrain's flags
SMOKE = [
    "--steps",
    "40",
    "--warmup-steps",
    "4",
    "--neighbour-steps",
    "8",
    "--eval-every",
    "20",
    "--checkpoint-every",
    "20",
]  # a check that the stage runs, not a result


def run_folder(fraction: float, runs: Path = RUNS) -> Path:
    """Where the run on this share of the text lives (runs/scale/text-0.125 ...); all of it is
    the course checkpoint, unless a run of it was made here."""
    folder = runs / f"text-{fraction:g}"
    if fraction == 1 and not (folder / RUN_FOLDER).exists() and not finished(folder):
        from minibert.recipes.shared import model_folder

        return model_folder("course")
    return folder


def finished(folder: Path) -> bool:
    """Whether the run in folder has saved its model (not only a state to resume)."""
    return (folder / "model.safetensors").exists() and (folder / "history.json").exists()


def export(file: Path) -> None:
    """Write the course's Wikipedia articles (training and held-out), in the corpus's order, as
    one JSON file that `pretrain --corpus FILE.json` reads where gensim is missing."""
    from minibert import corpora

    articles = corpora.wikipedia_articles("all")
    corpora.write_articles(articles, file)
    print(f"{len(articles)} articles written to {file}")


def pretrain_all(
    corpus: str,
    runs: Path,
    parallel: int,
    device: str | None,
    threads: int,
    smoke: bool = False,
    fractions=FRACTIONS,
) -> None:
    """The runs not finished yet, `parallel` at a time, each resuming what it had saved."""
    recipe = RECIPE if not smoke else [*RECIPE, *SMOKE]  # later flags win
    pending = [f for f in fractions if not finished(run_folder(f, runs))]
    print(f"to run: {', '.join(f'{f:g}' for f in pending) or 'none'}")
    running: list[tuple[float, subprocess.Popen, float]] = []
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(f"stopped: {len(running)} run(s) ended"))
    try:
        _run_all(pending, running, recipe, corpus, runs, parallel, device, threads)
    finally:  # stopped (a time limit, Ctrl-C): end the runs; each resumes from its last save
        for _, process, _ in running:
            process.terminate()
        for _, process, _ in running:
            process.wait()


def _run_all(pending, running, recipe, corpus, runs, parallel, device, threads) -> None:
    """Start runs while fewer than `parallel` are going; note each one's wall time as it ends."""
    while pending or running:
        while pending and len(running) < parallel:
            fraction = pending.pop(0)
            out = run_folder(fraction, runs)
            command = [
                sys.executable,
                "-m",
                "minibert",
                "pretrain",
                *recipe,
                "--corpus",
                corpus,
                "--text-fraction",
                f"{fraction:g}",
                "--out",
                str(out),
                "--threads",
                str(threads),
            ]
            if device:
                command += ["--device", device]
            if (out / RUN_FOLDER).exists():
                command.append("--resume")
            out.parent.mkdir(parents=True, exist_ok=True)
            print(" ".join(command[1:]), flush=True)
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            with open(runs / f"text-{fraction:g}.log", "a") as log:  # the run keeps its copy
                process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
            running.append((fraction, process, time.perf_counter()))
        time.sleep(2)
        for item in list(running):
            fraction, process, started = item
            if process.poll() is not None:
                running.remove(item)
                seconds = time.perf_counter() - started
                print(
                    f"text {fraction:g}: exit {process.returncode} after {seconds:.0f} s",
                    flush=True,
                )
                if process.returncode == 0:
                    folder = run_folder(fraction, runs)
                    (folder / "wall.json").write_text(
                        json.dumps(
                            {
                                "seconds": round(seconds, 1),
                                "device": device or "default",
                                "parallel": parallel,
                                "threads": threads,
                                "corpus": corpus,
                                "machine": platform.machine(),
                                "python": platform.python_version(),
                            }
                        )
                        + "\n"
                    )


def history_of(folder: Path) -> tuple[list[dict], str]:
    """(history, status) of a run: finished, paused in its state, or brought back as partial.json
    (the history alone, from a machine whose time ran out before the run ended)."""
    if finished(folder):
        return json.loads((folder / "history.json").read_text()), "finished"
    for source in (folder / RUN_FOLDER / "training_state.pt", folder / "partial.json"):
        if source.exists():
            if source.suffix == ".pt":
                import torch

                history = torch.load(source, weights_only=False)["history"]
            else:
                history = json.loads(source.read_text())["history"]
            return (
                history,
                f"stopped at step {len(history):,} of {int(RECIPE[RECIPE.index('--steps') + 1]):,}",
            )
    return [], "not started"


def collect(corpus: str, runs: Path) -> dict:
    """The held-out curve of each run so far, beside the trivial predictors at the same [MASK]
    positions (each run's own vocabulary, its own share of the training text)."""
    from minibert import pretraining
    from minibert.recipes.pretrain_recipe import share_of_documents
    from minibert.recipes.shared import load_corpus
    from minibert.teaching.baselines import mlm_baselines
    from minibert.tokenization import BertTokenizer

    train, heldout = load_corpus(corpus)  # the runs' own order: the same held-out masks
    results = {
        "what": "the course recipe pretrained on a share of the Wikipedia training text: held-out "
        "top-1 accuracy at the [MASK] positions every 500 steps, beside the n-gram table and the "
        "most frequent token at the same positions (each run's vocabulary and share of the text)",
        "recipe": " ".join(RECIPE),
        "corpus": corpus,
        "runs": {},
    }
    for fraction in FRACTIONS:
        folder = run_folder(fraction, runs)
        history, status = history_of(folder)
        if not history:
            continue
        vocab = folder if finished(folder) else folder / RUN_FOLDER
        tok = BertTokenizer.from_pretrained(vocab)
        docs = share_of_documents(train, fraction) if fraction < 1 else train
        data = pretraining.heldout_dataset(heldout, tok, 128, seed=1)
        base = mlm_baselines(data, pretraining.tokenize_documents(docs, tok), tok)
        evals = [h for h in history if "eval_mask_accuracy" in h]
        wall = (
            json.loads((folder / "wall.json").read_text())
            if (folder / "wall.json").exists()
            else {}
        )
        results["runs"][f"{fraction:g}"] = {
            "fraction": fraction,
            "documents": len(docs),
            "words": sum(len(s.split()) for d in docs for s in d.sentences),
            "status": status,
            "heldout_examples": len(data),
            "train_loss_last_500": round(
                statistics.fmean(h["train_loss"] for h in history[-500:]), 4
            ),
            "seconds": round(history[-1].get("seconds", 0.0)),
            "wall": wall,
            "ngram_mask_accuracy": round(base["ngram"]["mask_accuracy"], 4),
            "most_frequent_mask_accuracy": round(base["most_frequent"]["mask_accuracy"], 4),
            "curve": [
                {
                    "step": h["step"],
                    "mask_accuracy": round(h["eval_mask_accuracy"], 4),
                    "mask_top5": round(h["eval_mask_top5"], 4),
                    "mlm_loss": round(h["eval_mlm_loss"], 4),
                    "nsp_accuracy": round(h["eval_nsp_accuracy"], 4),
                }
                for h in evals
            ],
        }
    return results


def plot(results: dict, path: Path) -> None:
    """Left: held-out [MASK] accuracy by step, one line per share (the n-gram table dotted).
    Right: at the last step every run reached, against words read (log axis)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = results["runs"]
    common = min(r["curve"][-1]["step"] for r in runs.values())
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for (name, run), colour in zip(runs.items(), plt.cm.viridis([0.1, 0.4, 0.65, 0.9])):
        steps = [c["step"] for c in run["curve"]]
        left.plot(
            steps,
            [100 * c["mask_accuracy"] for c in run["curve"]],
            color=colour,
            label=f"{name} of the text ({run['words']:,} words)",
        )
        left.axhline(100 * run["ngram_mask_accuracy"], color=colour, ls=":", lw=1)
    left.set(
        xlabel="pretraining step",
        ylabel="held-out top-1 at [MASK] (%)",
        title="the same steps, less text (dotted: n-gram table)",
    )
    left.legend(fontsize=8)
    words = [r["words"] for r in runs.values()]
    at = [next(c for c in r["curve"] if c["step"] == common) for r in runs.values()]
    right.plot(words, [100 * a["mask_accuracy"] for a in at], "o-", label="course recipe")
    right.plot(
        words,
        [100 * r["ngram_mask_accuracy"] for r in runs.values()],
        "s:",
        color="grey",
        label="n-gram table, same positions",
    )
    right.set_xscale("log")
    right.set(
        xlabel="words of training text (log)",
        ylabel="held-out top-1 at [MASK] (%)",
        title=f"at step {common:,}",
    )
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


TASK, SIZE = "wiki-mentions", 256  # an in-domain task, at 256 labelled items
PUBLISHED = (  # placed beside the curve, labelled as published (not measured here)
    (1e6, "MiniBERTas: 1M words, perplexity > 130"),
    (1e8, "Zhang et al. 2021: NLU needs >> 10-100M"),
    (3.3e9, "BERT, BERT-Tiny: 3.3B (Tiny: SST-2 83.2)"),
)


def finetune_curve(runs: Path, seeds: int, jobs: int) -> dict:
    """Each share's model and random weights of its own size and vocabulary fine-tuned on TASK at
    SIZE items by the grid's sweep (``common.grid``: the rate chosen on dev with seed 0; here, as
    when this curve was measured, every seed reported, seed 0 among them, and no restarts; each
    run cached in runs/finetune); the gain with its paired interval. Ten seeds
    by default, not three: a run takes seconds here, and one seed in three can fall far below
    the others (0.094 against 0.197 and 0.230), which an interval over the items alone hides."""
    cache = runs / "finetune"
    cache.mkdir(parents=True, exist_ok=True)
    models: dict[str, grid.Model] = {}
    for fraction in FRACTIONS:
        folder = run_folder(fraction, runs)
        if not finished(folder):
            print(f"text {fraction:g}: not finished; left out")
            continue
        name = f"text-{fraction:g}"
        models[name] = grid.Model(name, str(folder), partner=f"{name}-scratch")
        models[f"{name}-scratch"] = grid.Model(f"{name}-scratch", str(folder), scratch=True)
    work = Path(tempfile.mkdtemp())
    # this curve's protocol: seed 0 chooses the rate and is reported with the others, no restarts
    jobs_ = [
        grid.Job(TASK, model, SIZE, cache, work, reported_seeds=tuple(range(seeds)), restarts=0)
        for model in models.values()
    ]
    if jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            done = pool.map(grid.cell, jobs_)
    else:
        done = [grid.cell(job) for job in jobs_]
    shutil.rmtree(work, ignore_errors=True)
    rows, all_runs = {}, {}
    for job, (row, made) in zip(jobs_, done, strict=True):
        rows[job.model.name] = row
        all_runs.update(made)
    table = {
        "table": {TASK: {name: {str(SIZE): row} for name, row in rows.items()}},
        "runs": all_runs,
    }
    items = grid.TestItems(table, TASK, {name: model.source for name, model in models.items()})
    gains = {}
    for fraction in FRACTIONS:
        name = f"text-{fraction:g}"
        if name not in rows:
            continue
        pre, rand = items.row(name, str(SIZE)), items.row(f"{name}-scratch", str(SIZE))
        gains[f"{fraction:g}"] = {
            "pretrained": _row(rows[name]),
            "random": _row(rows[f"{name}-scratch"]),
            "gain": grid.paired(TASK, rand, pre, resample_seeds=True),
            "gain_items_only": grid.paired(TASK, rand, pre),
        }
    return {
        "what": f"{TASK} test span F1 at {SIZE} training sentences, {seeds} seeds (mean, sample sd), the "
        "rate chosen on dev with seed 0 (finetuning_shapes.py's protocol); gain: pretrained minus "
        "random weights of the same size and vocabulary, 95% paired bootstrap interval drawing the "
        "seeds (a model's seed s with the other's: the same training subset) and the test "
        "sentences, and a paired permutation test; gain_items_only: the interval over the test "
        "sentences alone (the seeds' mean)",
        "by_fraction": gains,
    }


def _row(row: dict) -> dict:
    return {k: row[k] for k in ("lr", "mean", "std", "values")} | {
        "sweep": row["sweep"]["trials"],
        "ties": row["sweep"]["ties"],
    }


def plot_gain(results: dict, path: Path) -> None:
    """Left: every seed's test F1, pretrained and random weights, against words of pretraining
    text (log axis). Right: the gain with its interval, the published amounts of text marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fine = results["finetune"]["by_fraction"]
    words = [results["runs"][f]["words"] for f in fine]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    for k, (row, colour) in enumerate((("pretrained", "C0"), ("random", "C2"))):
        for w, f in zip(words, fine.values()):
            values = f[row]["values"]
            left.scatter(
                [w * (1.06 if k else 1 / 1.06)] * len(values),
                values,
                s=12,
                color=colour,
                alpha=0.6,
                label=row if w == words[0] else None,
            )
        left.plot(
            [w * (1.06 if k else 1 / 1.06) for w in words],
            [f[row]["mean"] for f in fine.values()],
            color=colour,
            lw=1,
        )
    left.set_xscale("log")
    left.set(
        xlabel="words of pretraining text (log)",
        ylabel=f"{TASK} test span F1",
        title=f"each seed at {SIZE} labelled sentences (line: mean)",
    )
    left.legend(fontsize=8)
    gain = [fine[f]["gain"] for f in fine]
    right.errorbar(
        words,
        [g["difference"] for g in gain],
        yerr=[
            [g["difference"] - g["low"] for g in gain],
            [g["high"] - g["difference"] for g in gain],
        ],
        marker="o",
        capsize=4,
        label="measured here: the course recipe, 30,000 steps",
    )
    right.axhline(0, color="grey", lw=1)
    for x, label in PUBLISHED:
        right.axvline(x, color="C3", ls=":", lw=1)
        right.text(
            x,
            0.02,
            "published: " + label,
            transform=right.get_xaxis_transform(),
            fontsize=7,
            ha="right",
            va="bottom",
            rotation=90,
            color="C3",
        )
    right.set_xscale("log")
    right.set_xlim(2e4, 1e10)
    right.set(
        xlabel="words of pretraining text (log)",
        ylabel="F1: pretrained - random",
        title="the gain, 95% interval over seeds and sentences",
    )
    right.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="stage", required=True)
    ex = sub.add_parser("export", help="the Wikipedia articles as one JSON file")
    ex.add_argument("file", type=Path)
    pre = sub.add_parser("pretrain", help="the four pretraining runs (resumable)")
    pre.add_argument(
        "--corpus",
        default="wikipedia",
        help="'wikipedia', a dump, a folder, or the .json file `export` wrote (no gensim there)",
    )
    pre.add_argument("--runs", type=Path, default=RUNS)
    pre.add_argument("--parallel", type=int, default=1, help="runs side by side")
    pre.add_argument("--device", default=None, help="cpu or cuda (default: the GPU if present)")
    pre.add_argument("--threads", type=int, default=2, help="torch threads per run")
    pre.add_argument("--smoke", action="store_true", help="40 steps: check the stage runs")
    pre.add_argument(
        "--fractions",
        type=float,
        nargs="+",
        default=FRACTIONS,
        help="the shares to run (default: all four)",
    )
    col = sub.add_parser("collect", help="the runs' held-out curves and baselines: results")
    col.add_argument("--corpus", default="wikipedia", help="the corpus the runs read")
    col.add_argument("--runs", type=Path, default=RUNS)
    col.add_argument("--machine", default=None, help="where the runs ran (default: this machine)")
    fin = sub.add_parser("finetune", help="the gain over random weights: results + figure")
    fin.add_argument("--runs", type=Path, default=RUNS)
    fin.add_argument("--seeds", type=int, default=10)
    fin.add_argument("--jobs", type=int, default=1, help="models fine-tuned side by side")
    args = parser.parse_args(argv)
    if args.stage == "export":
        export(args.file)
    elif args.stage == "pretrain":
        pretrain_all(
            args.corpus,
            args.runs,
            args.parallel,
            args.device,
            args.threads,
            args.smoke,
            args.fractions,
        )
    elif args.stage == "collect":
        machine = args.machine or f"{platform.machine()}, {os.cpu_count()} CPUs, no GPU"
        results = {
            **collect(args.corpus, args.runs),
            "machine": machine,
            "date": time.strftime("%Y-%m-%d"),
        }
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "pretraining_scale.json").write_text(json.dumps(results, indent=1) + "\n")
        plot(results, RESULTS / "pretraining_scale.png")
        for name, run in results["runs"].items():
            last = run["curve"][-1]
            print(
                f"text {name:>5} ({run['words']:>7,} words): {run['status']}; step {last['step']:,}: "
                f"[MASK] top-1 {last['mask_accuracy']:.1%} (n-gram {run['ngram_mask_accuracy']:.1%}), "
                f"training loss {run['train_loss_last_500']:.2f}, held-out MLM loss {last['mlm_loss']:.2f}"
            )
    elif args.stage == "finetune":
        path = RESULTS / "pretraining_scale.json"
        results = json.loads(path.read_text())
        results["finetune"] = finetune_curve(args.runs, args.seeds, args.jobs)
        path.write_text(json.dumps(results, indent=1) + "\n")
        plot_gain(results, RESULTS / "pretraining_scale_gain.png")
        for fraction, f in results["finetune"]["by_fraction"].items():
            g, pre, rand = f["gain"], f["pretrained"], f["random"]
            print(
                f"text {fraction:>5} ({results['runs'][fraction]['words']:>7,} words): "
                f"pretrained {pre['mean']:.3f} (sd {pre['std']:.3f}, lr {pre['lr']:g}), random "
                f"{rand['mean']:.3f} (sd {rand['std']:.3f}, lr {rand['lr']:g}); gain "
                f"{g['difference']:+.3f} [{g['low']:+.3f}, {g['high']:+.3f}] p={g['p']:.4f}"
            )


if __name__ == "__main__":
    main()
