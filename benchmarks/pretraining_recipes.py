"""Which pretraining recipe escapes the MLM plateau on a CPU budget? Short runs, one held-out measure.

Each candidate is `minibert pretrain` with the same 30,000-step schedule (tiny preset, AdamW lr 2e-3,
1,000 warm-up steps, then linear decay; dropout 0; seed 0), paused after --stop-after steps
(`stop_after`: the state is kept, so the winner could continue with --resume). So the candidates
are compared on the first steps of the very schedule the course checkpoint trains with. The
measure is the course's headline: top-1 accuracy at the [MASK] positions of the held-out
articles (never trained on), with the n-gram table at the same positions as the bar.

    python benchmarks/pretraining_recipes.py                 # about 12 minutes per candidate
    python benchmarks/pretraining_recipes.py --only plain    # one candidate
    python benchmarks/pretraining_recipes.py --collect       # tabulate the runs so far

Runs live in runs/recipes/NAME (git-ignored); a candidate already run that far is read, not
re-run. Writes benchmarks/results/pretraining_recipes.json and pretraining_recipes.png.
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import torch
from common import course_recipe
from common.run_history import run_history

from minibert import corpora, pretraining
from minibert.recipes import RUN_FOLDER, pretrain
from minibert.teaching.baselines import mlm_baselines
from minibert.tokenization import BertTokenizer

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "runs" / "recipes"
RESULTS = Path(__file__).resolve().parent / "results"
SCHEDULE = course_recipe.options()  # the course checkpoint's schedule, from its recipe.json
CANDIDATES = {  # name -> (what it is, the options beside SCHEDULE)
    "plain": ("plain BERT (c)", {}),
    "neighbours": (
        "layer-0 heads guided to the neighbours for 3,000 steps: +8 score bonus and auxiliary "
        "loss, both annealed to 0 (a)",
        {"neighbour_steps": 3000},
    ),
    "neighbours_mask40": (
        "guided heads as (a), 40% of tokens masked in training (Wettig et al. 2023)",
        {"neighbour_steps": 3000, "mask_rate": 0.4},
    ),
}


def history_of(name: str) -> list[dict]:
    """The candidate's history so far: from its paused run, or its finished folder."""
    return run_history(RUNS / name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stop-after", type=int, default=3000, help="steps per candidate")
    parser.add_argument("--only", choices=sorted(CANDIDATES), action="append", default=None)
    parser.add_argument("--threads", type=int, default=None, help="torch threads per run")
    parser.add_argument(
        "--collect", action="store_true", help="run nothing: tabulate and plot the runs so far"
    )
    args = parser.parse_args()

    for name in [] if args.collect else args.only or CANDIDATES:
        done = len(history_of(name))
        if done >= args.stop_after:
            continue
        print(f"candidate {name}: {CANDIDATES[name][0]}")
        pretrain(
            RUNS / name,
            **SCHEDULE,
            **CANDIDATES[name][1],
            stop_after=args.stop_after,
            resume=done > 0,
            threads=args.threads,
        )

    # the bar: the n-gram table at the held-out [MASK] positions, with any candidate's vocabulary
    some = next(n for n in CANDIDATES if history_of(n))
    tok = BertTokenizer.from_pretrained(RUNS / some / RUN_FOLDER)
    heldout = pretraining.heldout_dataset(corpora.wikipedia_articles("heldout"), tok, 128, seed=1)
    train_docs = pretraining.tokenize_documents(corpora.wikipedia_articles("train"), tok)
    baselines = mlm_baselines(heldout, train_docs, tok)

    results = {
        "what": "held-out top-1/top-5 accuracy at the [MASK] positions and NSP accuracy, every "
        "500 steps of the first --stop-after steps of a 30,000-step schedule",
        "schedule": SCHEDULE,
        "stop_after": args.stop_after,
        "machine": f"{platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}",
        "baselines_at_mask": {
            "ngram": baselines["ngram"]["mask_accuracy"],
            "most_frequent": baselines["most_frequent"]["mask_accuracy"],
        },
        "candidates": {},
    }
    for name, (what, options) in CANDIDATES.items():
        evals = [h for h in history_of(name) if "eval_loss" in h and h["step"] <= args.stop_after]
        if not evals:
            continue
        results["candidates"][name] = {
            "what": what,
            "options": options,
            "steps_run": evals[-1]["step"],
            "curve": [
                {
                    "step": h["step"],
                    "seconds": round(h.get("seconds", 0.0)),
                    **{k: round(h[f"eval_{k}"], 4) for k in ("mask_accuracy", "mask_top5")},
                    "nsp_accuracy": round(h["eval_nsp_accuracy"], 4),
                    "mlm_loss": round(h["eval_mlm_loss"], 4),
                }
                for h in evals
            ],
        }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "pretraining_recipes.json").write_text(json.dumps(results, indent=1) + "\n")
    plot(results, RESULTS / "pretraining_recipes.png")
    for name, c in results["candidates"].items():
        last = c["curve"][-1]
        print(
            f"{name:>22}: step {last['step']:,}: [MASK] top-1 {last['mask_accuracy']:.1%}, "
            f"top-5 {last['mask_top5']:.1%}, NSP {last['nsp_accuracy']:.1%}"
        )
    print(f"{'n-gram table':>22}: [MASK] top-1 {results['baselines_at_mask']['ngram']:.1%}")


def plot(results: dict, path: Path) -> None:
    """[MASK] top-1 and NSP accuracy against the step, one line per candidate, n-gram bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (mlm, clock, nsp) = plt.subplots(1, 3, figsize=(14, 3.6))
    for name, c in results["candidates"].items():
        steps = [p["step"] for p in c["curve"]]
        mlm.plot(steps, [p["mask_accuracy"] for p in c["curve"]], "o-", ms=3, label=name)
        minutes = [p["seconds"] / 60 for p in c["curve"]]
        clock.plot(minutes, [p["mask_accuracy"] for p in c["curve"]], "o-", ms=3, label=name)
        nsp.plot(steps, [p["nsp_accuracy"] for p in c["curve"]], "o-", ms=3, label=name)
    mlm.axhline(results["baselines_at_mask"]["ngram"], color="grey", ls="--", label="n-gram table")
    mlm.axhline(results["baselines_at_mask"]["most_frequent"], color="grey", ls=":", label='"the"')
    mlm.set_title("held-out top-1 accuracy at [MASK]")
    clock.set_title("the same against training time")
    nsp.set_title("held-out NSP accuracy")
    for ax in (mlm, clock, nsp):
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    clock.set_xlabel("minutes (two runs sharing the 2 cores, one thread each)")
    mlm.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
