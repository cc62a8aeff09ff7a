"""Which recipe should the course checkpoint use on the few million words of `english_corpus`?

Short runs of candidates from the small-data literature, one change each against a base, ranked
on held-out text with paired intervals; the winner then runs once at full budget.

    python benchmarks/english_recipes.py --stop-after 1500 --threads 1 --only base mlm_only
    python benchmarks/english_recipes.py --collect      # measure and tabulate the runs so far

Every candidate is `minibert pretrain` on `--corpus english` with the course checkpoint's
30,000-step schedule (tiny preset, AdamW lr 2e-3, 1,000 warm-up steps then linear decay, dropout
0, seed 0, layer-0 heads guided to their neighbours for the first 3,000 steps) and one vocabulary
for all (8,000 WordPiece pieces trained once on the corpus's training text, runs/english/vocab),
paused after --stop-after steps: the state is kept, so the winner continues with --resume. One
vocabulary makes the candidates' masked positions the same, so their [MASK] top-1 accuracies
pair position by position. The measures, each candidate's final state on the same masked
examples (one fixed 15% mask): the held-out Wikipedia articles (the course's headline, with the
n-gram table trained on the same words at the same positions) and each source's held-out slice;
each candidate minus the base with its 95% interval (paired bootstrap over the examples).

Runs live in runs/english/NAME (git-ignored). Writes benchmarks/results/english_recipes.json (at
the search's 1,500 steps; a run continued further, --stop-after N --only NAME, then --collect
--stop-after N, writes english_recipes_N.json for the runs that reached N). A collect measures
each run's latest saved state: collect the search before continuing any of its runs.
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import torch
from common import course_recipe
from common.english_runs import (
    RUNS,
    VOCAB,
    accuracy,
    difference,
    heldout_sets,
    load_state,
    mask_hits,
    ngram_hits,
)
from common.run_history import run_history

from minibert import english_corpus, pretraining
from minibert.recipes import pretrain
from minibert.teaching.baselines import NgramTable
from minibert.tokenization import BertTokenizer
from minibert.wordpiece_trainer import train_wordpiece

RESULTS = Path(__file__).resolve().parent / "results"
SEARCH_STEPS = 1500  # the search's budget: english_recipes.json; a longer look at some candidates
# (runs continued with a larger --stop-after) goes to english_recipes_STEPS.json
SCHEDULE = {**course_recipe.options(), "neighbour_steps": 3000, "corpus": "english"}
CANDIDATES = {  # name -> (what it is, the options beside SCHEDULE)
    "base": ("BERT's recipe: MLM (15%, 80-10-10) + NSP, 128 tokens", {}),
    "mlm_only": ("MLM only, no sentence task (RoBERTa; BabyBERTa)", {"objective": "none"}),
    "sop": ("sentence order prediction instead of NSP (ALBERT)", {"objective": "sop"}),
    "mask30": ("30% of tokens masked (Wettig et al. 2023)", {"mask_rate": 0.3}),
    "whole_word": ("whole-word masking", {"whole_word": True}),
    "modern": (
        "without the archaic Gutenberg texts (the Bible, Shakespeare, Milton, Blake)",
        {"corpus": "english-modern"},
    ),
    "mini": (
        "the mini preset (4 layers x 256) at about the base's wall time: a "
        "5,000-step schedule (a mini step costs about six tiny ones), stopped at a sixth of "
        "--stop-after",
        {
            "preset": "mini",
            "steps": 5000,
            "warmup_steps": 167,
            "neighbour_steps": 500,
            "eval_every": 125,
        },
    ),
}
SHARE = {"mini": 1 / 6}  # of --stop-after, for a candidate on a shorter schedule


def stop_of(name: str, stop_after: int) -> int:
    return round(stop_after * SHARE.get(name, 1))


def vocabulary() -> Path:
    """The candidates' shared vocabulary: trained once on the corpus's training text."""
    if not (VOCAB / "vocab.txt").is_file():
        texts = [p for d in english_corpus.documents("train") for p in d.paragraphs]
        BertTokenizer(train_wordpiece(texts, 8000)).save_pretrained(VOCAB)
    return VOCAB


def history_of(name: str) -> list[dict]:
    """The candidate's history so far: from its paused run, or its finished folder."""
    return run_history(RUNS / name)


def run(names: list[str], stop_after: int, threads: int | None) -> None:
    vocab = vocabulary()
    for name in names:
        done = len(history_of(name))
        if done >= stop_of(name, stop_after):
            continue
        print(f"candidate {name}: {CANDIDATES[name][0]}", flush=True)
        pretrain(
            RUNS / name,
            **{**SCHEDULE, **CANDIDATES[name][1]},
            vocab=vocab,
            checkpoint_every=500,
            stop_after=stop_of(name, stop_after),
            resume=done > 0,
            threads=threads,
        )


def collect(stop_after: int) -> None:
    """Measure every candidate run so far and write the results file."""
    tok = BertTokenizer.from_pretrained(vocabulary())
    sets = heldout_sets(tok)
    train_docs = pretraining.tokenize_documents(english_corpus.documents("train"), tok)
    table = NgramTable(train_docs)
    ngram = {name: ngram_hits(table, data, tok) for name, data in sets.items()}
    ran = [n for n in CANDIDATES if len(history_of(n)) >= stop_of(n, stop_after)]
    hits = {n: {s: mask_hits(load_state(n, tok), d, tok) for s, d in sets.items()} for n in ran}
    results = {
        "what": "top-1 accuracy at the [MASK] positions of held-out text after --stop-after "
        "steps of the 30,000-step schedule, one vocabulary for all; each candidate minus the base "
        "with its 95% paired bootstrap interval over the examples",
        "schedule": SCHEDULE,
        "stop_after": stop_after,
        "machine": f"{platform.machine()}, 1 thread per run, two or three runs at once beside other work, "
        f"torch {torch.__version__}",
        "heldout_examples": {s: len(d) for s, d in sets.items()},
        "mask_positions": {s: sum(c for _, c in ngram[s]) for s in sets},
        "ngram": {s: round(accuracy(h), 4) for s, h in ngram.items()},
        "candidates": {},
    }
    for name in ran:
        stop = stop_of(name, stop_after)
        history = [h for h in history_of(name) if "eval_loss" in h and h["step"] <= stop]
        row = {
            "what": CANDIDATES[name][0],
            "options": CANDIDATES[name][1],
            "seconds": round(history[-1].get("seconds", 0.0)),
            "accuracy": {s: round(accuracy(h), 4) for s, h in hits[name].items()},
            "curve": [
                {"step": h["step"], "mask_accuracy": round(h["eval_mask_accuracy"], 4)}
                for h in history
            ],
        }
        if name != "base" and "base" in hits:
            row["minus_base"] = {s: difference(hits["base"][s], hits[name][s]) for s in sets}
        row["minus_ngram"] = {s: difference(ngram[s], hits[name][s]) for s in sets}
        results["candidates"][name] = row
    name = "english_recipes" + ("" if stop_after == SEARCH_STEPS else f"_{stop_after}")
    (RESULTS / f"{name}.json").write_text(json.dumps(results, indent=1) + "\n")
    modern = [s for s in sets if s != "gutenberg-archaic"]
    print(f"{'':>12} " + " ".join(f"{s[:10]:>10}" for s in sets))
    print(f"{'n-gram':>12} " + " ".join(f"{results['ngram'][s]:>10.1%}" for s in sets))
    for name, row in results["candidates"].items():
        print(f"{name:>12} " + " ".join(f"{row['accuracy'][s]:>10.1%}" for s in sets))
        for s, (d, lo, hi) in row.get("minus_base", {}).items():
            if s in modern:
                print(f"{'':>14}{s}: {d:+.3f} [{lo:+.3f}, {hi:+.3f}] against base")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stop-after", type=int, default=SEARCH_STEPS, help="steps per candidate")
    parser.add_argument("--only", choices=sorted(CANDIDATES), action="append", default=None)
    parser.add_argument("--threads", type=int, default=None, help="torch threads per run")
    parser.add_argument("--collect", action="store_true", help="run nothing: measure the runs")
    args = parser.parse_args()
    if not args.collect:
        run(args.only or list(CANDIDATES), args.stop_after, args.threads)
        return
    collect(args.stop_after)


if __name__ == "__main__":
    main()
