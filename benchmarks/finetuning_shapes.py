"""The three shapes beyond one sentence: wiki-mentions (a label per word), wiki-qnli (a sentence
pair) and wiki-qa (a span of a context), each from MiniLM, the course checkpoint and random weights
of the course checkpoint's size, at several training sizes, beside the task's baselines.

    python benchmarks/finetuning_shapes.py                       # everything (hours on 2 cores)
    python benchmarks/finetuning_shapes.py --tasks wiki-qa --models minilm --sizes all
    nohup python benchmarks/finetuning_shapes.py > shapes.log &  # resumable: runs done are kept

Protocol: for each task, model and training size, the learning rate is chosen on dev with seed 0
(the task's own dev measure: span F1, balanced accuracy, exact spans in the windows that hold the
answer; the evaluation kept within a run is chosen by the same measure), then seeds 1 and 2 run at
that rate; test never chooses anything. Each run is written to benchmarks/results/
finetuning_shapes.json as soon as it ends, and a run already there is not run again, so an
interrupted benchmark resumes. The baselines are scored on the same test items. The figure
finetuning_shapes.png draws each task's test score against the training size.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch

from minibert import assets, recipes, tasks
from minibert.tokenization import BertTokenizer

RESULTS = Path(__file__).resolve().parent / "results"
OUT = RESULTS / "finetuning_shapes.json"
MODELS = {"minilm": ("minilm", False), "course": ("course", False), "scratch": ("course", True)}
RATES = {"minilm": (3e-5, 1e-4), "course": (3e-4, 1e-3, 3e-3), "scratch": (3e-4, 1e-3, 3e-3)}
HEADLINE = {"wiki-mentions": "f1", "wiki-qnli": "accuracy", "wiki-qa": "f1"}  # test's number
SIZES = {"wiki-mentions": (64, 256, 1024, None), "wiki-qnli": (64, 256, None),
         "wiki-qa": (64, 256, None)}  # fmt: skip
EPOCHS, SMALL_STEPS = 3, 100  # a small subset still gets this many steps (more epochs)


def run_key(task: str, model: str, size: int | None, lr: float, seed: int) -> str:
    return f"{task}/{model}/{size or 'all'}/{lr:g}/{seed}"


def fine_tune(task: str, model: str, size: int | None, lr: float, seed: int, work: Path) -> dict:
    """One run: the kept evaluation's dev measure, its test scores, its time."""
    name, scratch = MODELS[model]
    batch = 16
    steps = None if size is None else max(SMALL_STEPS, EPOCHS * size // batch)
    result = recipes.finetune(
        work / run_key(task, model, size, lr, seed).replace("/", "_"),
        model=name, task=task, scratch=scratch, lr=lr, seed=seed, train_examples=size,
        batch_size=batch, steps=steps, epochs=EPOCHS, evaluations=3, progress=False,
        overwrite=True,
    )  # fmt: skip
    test = {k: v for k, v in result.test.items() if k != "predictions"}
    return {
        "dev_selection": result.selection["value"],
        "test": test,
        "test_predictions": result.test["predictions"],
        "seconds": round(result.seconds, 1),
    }


def cell(task: str, model: str, size: int | None, seeds: int, work: Path, done: dict) -> dict:
    """One model at one size: the rate chosen on dev (seed 0), then the other seeds at it."""

    def get(lr: float, seed: int) -> dict:
        key = run_key(task, model, size, lr, seed)
        if key not in done["runs"]:
            done["runs"][key] = fine_tune(task, model, size, lr, seed, work)
            OUT.write_text(json.dumps(done, indent=1) + "\n")
            print(f"{key}: test {HEADLINE[task]} {done['runs'][key]['test'][HEADLINE[task]]:.3f}"
                  f" ({done['runs'][key]['seconds']:.0f} s)", flush=True)  # fmt: skip
        return done["runs"][key]

    sweep = {lr: get(lr, 0) for lr in RATES[model]}
    lr = max(sweep, key=lambda r: sweep[r]["dev_selection"])  # the first best on a tie
    runs = [get(lr, seed) for seed in range(seeds)]
    values = [r["test"][HEADLINE[task]] for r in runs]
    return {"lr": lr, "mean": statistics.mean(values),
            "std": statistics.stdev(values) if len(values) > 1 else 0.0, "values": values}  # fmt: skip


def baselines(task_name: str) -> dict:
    """The task's baselines on its test items (tokenised as MiniLM reads them)."""
    task = tasks.get(task_name)
    tok = BertTokenizer.from_pretrained(assets.path("minilm"))
    data = task.datasets(tok, task.max_length, None, 0)
    return {n: s[HEADLINE[task_name]] for n, s in task.baseline_scores(data, tok).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="*", default=list(HEADLINE), choices=list(HEADLINE))
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--sizes", nargs="*", default=None, help="training sizes ('all')")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    done = json.loads(OUT.read_text()) if OUT.exists() else {"runs": {}}
    done["machine"] = f"{platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}"  # fmt: skip
    table = done.setdefault("table", {})
    with tempfile.TemporaryDirectory() as tmp:
        for task in args.tasks:
            table.setdefault(task, {})["baselines"] = baselines(task)
            sizes = SIZES[task] if args.sizes is None else [
                None if s == "all" else int(s) for s in args.sizes]  # fmt: skip
            for model in args.models:
                for size in sizes:
                    started = time.perf_counter()
                    row = cell(task, model, size, args.seeds, Path(tmp), done)
                    table[task].setdefault(model, {})[str(size or "all")] = row
                    OUT.write_text(json.dumps(done, indent=1) + "\n")
                    print(f"{task} {model} {size or 'all'}: {row['mean']:.3f} +- {row['std']:.3f}"
                          f" (lr {row['lr']:g}, {time.perf_counter() - started:.0f} s)", flush=True)  # fmt: skip
    plot(done, RESULTS / "finetuning_shapes.png")


def plot(done: dict, path: Path) -> None:
    """Each task's test score against the training size, a line per model, baselines dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = done["table"]
    fig, axes = plt.subplots(1, len(table), figsize=(5 * len(table), 4), squeeze=False)
    for ax, (task, rows) in zip(axes[0], table.items()):
        for model, by_size in rows.items():
            if model == "baselines":
                for i, (name, value) in enumerate(by_size.items()):
                    ax.axhline(value, ls="--", color=f"C{7 + i}", label=name)
                continue
            sizes = list(by_size)
            ax.errorbar(range(len(sizes)), [by_size[s]["mean"] for s in sizes],
                        yerr=[by_size[s]["std"] for s in sizes], marker="o", label=model)  # fmt: skip
            ax.set_xticks(range(len(sizes)), sizes)
        ax.set_title(f"{task}: test {HEADLINE[task]}")
        ax.set_xlabel("training items")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
