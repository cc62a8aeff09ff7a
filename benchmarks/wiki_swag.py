"""wiki-swag, the BERT paper's multiple choice on the course's Wikipedia: fine-tuned models against
the task's baselines at the same held-out items, with paired 95% intervals.

Fine-tunes, on every training item of wiki-swag (``minibert.tasks.swag``), MiniLM (the target: at
least 10 points above the better of the two baselines the task names, shared words and the course
checkpoint's NSP head, with the paired interval above zero), the course checkpoint and random
weights of the course checkpoint's size (what pretraining buys). Each run keeps its best
evaluation by dev accuracy, as ``minibert finetune`` does; test is measured once, at the end. The
baselines (the task's own, ``Task.baselines``) answer the same test items, and every comparison
is a paired bootstrap over those items (``minibert.paired_statistics``). One seed per model.

    OMP_NUM_THREADS=1 python benchmarks/wiki_swag.py            # about 40 minutes on one core
    python benchmarks/wiki_swag.py --smoke                      # a minute: the plumbing only

Writes benchmarks/results/wiki_swag.json (not with --smoke).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import torch

import minibert
from minibert import assets, paired_statistics, recipes, tasks
from minibert.tasks.swag import wiki_swag_splits
from minibert.tokenization import BertTokenizer

OUT = Path(__file__).resolve().parent / "results" / "wiki_swag.json"
SEED = 0
TARGET_POINTS = 10  # MiniLM above the better of the two named baselines
NAMED_BASELINES = ("shared words", "course NSP head")  # the target's two
RUNS = {  # name -> finetune's options (the rest are its defaults: lr by model size, ...)
    # batch 16, as the BERT paper fine-tuned SWAG; MiniLM's one epoch fits the CPU time; the
    # small runs first (minutes), MiniLM's last (most of the time)
    "course": {"model": "course", "epochs": 3, "batch_size": 16},
    "course, random weights": {"model": "course", "scratch": True, "epochs": 3, "batch_size": 16},
    "minilm": {"model": "minilm", "epochs": 1, "batch_size": 16},
}


def machine() -> dict:
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
        model = next(
            line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")
        )
    except (OSError, StopIteration):
        model = platform.processor() or platform.machine()
    return {
        "processor": model,
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "platform": platform.platform(),
    }


def paired(a: list[int], b: list[int]) -> dict:
    """b's accuracy minus a's on the same items, with its 95% paired bootstrap interval."""
    diff, low, high = paired_statistics.paired_bootstrap(a, b, resamples=10000, seed=SEED)
    p = paired_statistics.paired_sign_flip_test(a, b, seed=SEED)
    return {"difference": diff, "low": low, "high": high, "p": p}


def baselines(gold: list[int]) -> dict:
    """Each baseline's answers and accuracy on the test items (the task's own baselines)."""
    task = tasks.get("wiki-swag")
    tok = BertTokenizer.from_pretrained(assets.course_checkpoint("course"))
    data = task.datasets(tok, task.max_length, None, SEED)
    found = {}
    for baseline in task.baselines:
        started = time.perf_counter()
        answers = baseline.predict(*data, tok)
        right = [int(a == g) for a, g in zip(answers, gold)]
        found[baseline.name] = {
            "accuracy": sum(right) / len(right),
            "right": right,
            "seconds": round(time.perf_counter() - started, 1),
        }
        print(f"baseline {baseline.name}: {found[baseline.name]['accuracy']:.4f}", flush=True)
    return found


def fine_tuned(root: Path, gold: list[int], smoke: bool) -> dict:
    """Each run's dev and test accuracy, its per-item right answers, steps, rate and seconds."""
    found = {}
    for name, options in RUNS.items():
        extra = {"train_examples": 64, "steps": 2, "evaluations": 1} if smoke else {}
        folder = root / name.replace(", ", "-").replace(" ", "-")
        saved = _finished(folder, {**options, **extra})
        if saved is None:  # not run yet with these options
            recipes.finetune(
                folder,
                task="wiki-swag",
                seed=SEED,
                progress=False,
                overwrite=True,
                **options,
                **extra,
            )
            saved = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        right = [int(a == g) for a, g in zip(saved["test"]["predictions"], gold)]
        found[name] = {
            "options": options,
            "dev_accuracy": saved["dev"]["accuracy"],
            "accuracy": saved["test"]["accuracy"],
            "right": right,
            "steps": saved["options"]["steps"],
            "lr": saved["options"]["lr"],
            "kept_step": saved["selection"]["step"],
            "dev_values": saved["selection"]["values"],
            "train_items": saved["train_size"],
            "seconds": saved["seconds"],
        }
        print(f"{name}: test {found[name]['accuracy']:.4f} ({saved['seconds']:.0f} s)", flush=True)
    return found


def _finished(folder: Path, options: dict) -> dict | None:
    """A run folder's results.json when it finished with these options and seed (a rerun reads
    it rather than training again), else None."""
    try:
        saved = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ran = saved.get("options", {})
    same = all(ran.get(k) == v for k, v in options.items() if k not in ("model", "scratch"))
    model = saved.get("model") == options["model"] and saved.get("scratch") == options.get(
        "scratch", False
    )
    return saved if same and model and ran.get("seed") == SEED else None


def comparisons(runs: dict, rules: dict) -> dict:
    """The paired differences the claims rest on."""
    named = max(NAMED_BASELINES, key=lambda name: rules[name]["accuracy"])
    every = max(rules, key=lambda name: rules[name]["accuracy"])
    minilm = runs["minilm"]["right"]
    out = {
        "minilm vs the better named baseline": {
            "baseline": named,
            **paired(rules[named]["right"], minilm),
        },
        "minilm vs the best baseline": {"baseline": every, **paired(rules[every]["right"], minilm)},
        "course vs random weights": paired(
            runs["course, random weights"]["right"], runs["course"]["right"]
        ),
    }
    gap = out["minilm vs the better named baseline"]
    out["target_met"] = gap["difference"] >= TARGET_POINTS / 100 and gap["low"] > 0
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny runs; writes nothing")
    parser.add_argument("--runs", type=Path, default=None, help="folder for the fine-tuned runs")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    train, dev, test = wiki_swag_splits()
    gold = [item.label for item in test]
    rules = baselines(gold)
    with tempfile.TemporaryDirectory() as scratch:
        runs = fine_tuned(args.runs or Path(scratch), gold, args.smoke)
    result = {
        "what": "wiki-swag (multiple choice, the BERT paper's SWAG on the course's Wikipedia): "
        "test accuracy on the held-out articles' items, fine-tuned models and baselines at the "
        "same items, paired 95% bootstrap intervals over the items (one seed per model)",
        "date": date.today().isoformat(),
        "machine": machine(),
        "minibert": minibert.__version__,
        "settings": {
            "seed": SEED,
            "items": {"train": len(train), "dev": len(dev), "test": len(test)},
            "choices": 4,
            "chance": 0.25,
            "target_points": TARGET_POINTS,
            "named_baselines": list(NAMED_BASELINES),
            "runs": RUNS,
            "smoke": args.smoke,
        },
        "baselines": rules,
        "runs": runs,
        "comparisons": comparisons(runs, rules),
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(result["comparisons"], indent=1))
    if not args.smoke:
        OUT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
