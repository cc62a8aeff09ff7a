"""The data-scale curve: what pretraining buys against how much text it read.

The course recipe (the course checkpoint's command: tiny preset, 30,000 steps of 32 examples,
AdamW lr 2e-3, 1,000 warm-up steps, dropout 0, neighbour guidance for the first 3,000 steps,
seed 0) pretrained on 1/8, 1/4, 1/2 and all of the Wikipedia training articles' words
(`minibert pretrain --text-fraction F`: whole articles in a fixed shuffled order, nested, the
vocabulary trained on the same share). Every run takes the same number of steps, so a smaller
share is read more times over (1/8: about 40 passes over its examples; all: 5); what varies is
the text, not the compute. Each model is then fine-tuned on an in-domain task at 256 labelled
items with three seeds, beside random weights of its own size and vocabulary, with the sweep's
protocol (the learning rate chosen on dev by the task's balance-insensitive measure); the gain
over random weights is measured on the same test items with a paired bootstrap interval.

    python benchmarks/pretraining_scale.py pretrain              # the four runs, one at a time
    python benchmarks/pretraining_scale.py pretrain --parallel 4 --device cuda --corpus FOLDER
    python benchmarks/pretraining_scale.py export FOLDER         # the articles as .txt files
    python benchmarks/pretraining_scale.py finetune              # the curve: results + figure

A run already finished is read, a run interrupted resumes (its state is saved every 500 steps).
On a 2-core CPU one run takes about 100 minutes; `export` writes the articles as text files
(the same Articles, read back by `--corpus FOLDER`) for a GPU machine without gensim, where the
four runs go side by side. Runs live in runs/scale/ (git-ignored); `finetune` writes
benchmarks/results/pretraining_scale.json and pretraining_scale.png.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from minibert.recipes.outputs import RUN_FOLDER

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "runs" / "scale"
RESULTS = Path(__file__).resolve().parent / "results"
FRACTIONS = (0.125, 0.25, 0.5, 1.0)
RECIPE = [  # the course checkpoint's command (data/course_checkpoint/README.md), less --out
    "--preset", "tiny", "--steps", "30000", "--warmup-steps", "1000", "--lr", "2e-3",
    "--dropout", "0", "--neighbour-steps", "3000", "--eval-every", "500",
    "--checkpoint-every", "500", "--seed", "0",
]  # fmt: skip
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
]  # fmt: skip  (a check that the stage runs, not a result)


def run_folder(fraction: float, runs: Path = RUNS) -> Path:
    """Where the run on this share of the text lives (runs/scale/text-0.125 ...)."""
    return runs / f"text-{fraction:g}"


def finished(folder: Path) -> bool:
    """Whether the run in folder has saved its model (not only a state to resume)."""
    return (folder / "model.safetensors").exists() and (folder / "history.json").exists()


def export(folder: Path) -> None:
    """Write the course's Wikipedia articles (training and held-out) as FOLDER/TITLE.txt."""
    from minibert import corpora

    folder.mkdir(parents=True, exist_ok=True)
    articles = corpora.wikipedia_articles("all")
    for article in articles:
        (folder / f"{article.title}.txt").write_text(article.text + "\n", encoding="utf-8")
    back = {a.title: a for a in corpora.read_text_files(folder)}
    assert all(back[a.title].paragraph_sentences == a.paragraph_sentences for a in articles)
    print(f"{len(articles)} articles written to {folder}; read back, each the same")


def pretrain_all(corpus: str, runs: Path, parallel: int, device: str | None, threads: int,
                 smoke: bool = False) -> None:  # fmt: skip
    """The runs not finished yet, `parallel` at a time, each resuming what it had saved."""
    recipe = RECIPE if not smoke else [*RECIPE, *SMOKE]  # later flags win
    pending = [f for f in FRACTIONS if not finished(run_folder(f, runs))]
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
            command = [sys.executable, "-m", "minibert", "pretrain", *recipe, "--corpus", corpus,
                       "--text-fraction", f"{fraction:g}", "--out", str(out),
                       "--threads", str(threads)]  # fmt: skip
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
                print(f"text {fraction:g}: exit {process.returncode} after {seconds:.0f} s",
                      flush=True)  # fmt: skip
                if process.returncode == 0:
                    folder = run_folder(fraction, runs)
                    (folder / "wall.json").write_text(json.dumps({
                        "seconds": round(seconds, 1), "device": device or "default",
                        "parallel": parallel, "threads": threads, "corpus": corpus,
                        "machine": platform.machine(), "python": platform.python_version(),
                    }) + "\n")  # fmt: skip


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
        "corpus": corpus
        if corpus == "wikipedia"
        else "the course's Wikipedia articles, exported "
        "as text files (pretraining_scale.py export)",
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
            ],  # fmt: skip
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
        left.plot(steps, [100 * c["mask_accuracy"] for c in run["curve"]], color=colour,
                  label=f"{name} of the text ({run['words']:,} words)")  # fmt: skip
        left.axhline(100 * run["ngram_mask_accuracy"], color=colour, ls=":", lw=1)
    left.set(xlabel="pretraining step", ylabel="held-out top-1 at [MASK] (%)",
             title="the same steps, less text (dotted: n-gram table)")  # fmt: skip
    left.legend(fontsize=8)
    words = [r["words"] for r in runs.values()]
    at = [next(c for c in r["curve"] if c["step"] == common) for r in runs.values()]
    right.plot(words, [100 * a["mask_accuracy"] for a in at], "o-", label="course recipe")
    right.plot(words, [100 * r["ngram_mask_accuracy"] for r in runs.values()], "s:",
               color="grey", label="n-gram table, same positions")  # fmt: skip
    right.set_xscale("log")
    right.set(xlabel="words of training text (log)", ylabel="held-out top-1 at [MASK] (%)",
              title=f"at step {common:,}")  # fmt: skip
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="stage", required=True)
    ex = sub.add_parser("export", help="the Wikipedia articles as .txt files")
    ex.add_argument("folder", type=Path)
    pre = sub.add_parser("pretrain", help="the four pretraining runs (resumable)")
    pre.add_argument("--corpus", default="wikipedia", help="'wikipedia' or an exported folder")
    pre.add_argument("--runs", type=Path, default=RUNS)
    pre.add_argument("--parallel", type=int, default=1, help="runs side by side")
    pre.add_argument("--device", default=None, help="cpu or cuda (default: the GPU if present)")
    pre.add_argument("--threads", type=int, default=2, help="torch threads per run")
    pre.add_argument("--smoke", action="store_true", help="40 steps: check the stage runs")
    col = sub.add_parser("collect", help="the runs' held-out curves and baselines: results")
    col.add_argument("--corpus", default="wikipedia", help="the corpus the runs read")
    col.add_argument("--runs", type=Path, default=RUNS)
    col.add_argument("--machine", default=None, help="where the runs ran (default: this machine)")
    args = parser.parse_args(argv)
    if args.stage == "export":
        export(args.folder)
    elif args.stage == "pretrain":
        pretrain_all(args.corpus, args.runs, args.parallel, args.device, args.threads, args.smoke)
    elif args.stage == "collect":
        machine = args.machine or f"{platform.machine()}, {os.cpu_count()} CPUs, no GPU"
        results = {**collect(args.corpus, args.runs), "machine": machine,
                   "date": time.strftime("%Y-%m-%d")}  # fmt: skip
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


if __name__ == "__main__":
    main()
