"""The data-scale curve on the english corpus: the course-english recipe on a share of its words.

    python benchmarks/english_scale.py pretrain --fractions 0.009 0.073   # one run after another
    python benchmarks/english_scale.py collect                            # measures + figure

Every run is `minibert pretrain --recipe english` (tiny preset, the 30,000-step schedule, 30%
masking, NSP, an 8,000-piece vocabulary trained on the run's own text) on a share of the english
corpus's training words (`--text-fraction`: whole documents in a fixed shuffled order, nested, so
the 50k words are inside the 0.4M, which are inside the 1.5M), paused after --stop-after steps
(4,500 by default: the recipe search's budget; the state is kept, so a later `pretrain` with a
larger --stop-after continues every run to the same step). Every run takes the same steps, so a
smaller share is read more times over: what varies is the text, not the compute.

Measured at the step every run reached, on text no run trained on:
- [MASK] top-1 at the masked positions of the held-out Wikipedia articles (each run's own
  vocabulary cuts them and masks 15% with the same seed), beside the n-gram table counted on the
  same share's words at the same positions; model minus table with its 95% paired bootstrap
  interval over the examples;
- the nine grammatical minimal-pair phenomena of benchmarks/minimal_pairs.py (the same 1,800
  pairs), by pseudo-log-likelihood, beside a word trigram (interpolated absolute discounting,
  d = 0.75) counted on the same share's sentences; a tie is wrong; model minus trigram, and each
  share minus the next smaller one, paired over the pairs.
The course-english checkpoint (all the words, the whole 30,000 steps) is measured the same way and
reported beside the curve, not on it (it took seven times the steps).

Runs live in runs/english-scale/text-F (git-ignored). Writes
benchmarks/results/english_scale.json and english_scale.png. On a 2-core CPU one run of 4,500
steps took 46 to 48 minutes on one thread, two side by side beside other work; `collect` about 3
minutes on two threads.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import torch
from common.english_runs import accuracy, difference, load_paused, mask_hits, ngram_hits

from minibert import assets, corpora, english_corpus, pretraining
from minibert import minimal_pairs as mp
from minibert.model import BertForPreTraining
from minibert.paired_statistics import paired_bootstrap
from minibert.recipes import RUN_FOLDER
from minibert.recipes.pretrain_recipe import share_of_documents
from minibert.teaching.baselines import NgramTable
from minibert.tokenization import BertTokenizer

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "runs" / "english-scale"
RESULTS = Path(__file__).resolve().parent / "results"
FRACTIONS = (0.009, 0.073, 0.27, 1.0)  # about 50k, 0.4M, 1.5M and all 5.5M training words
STOP_AFTER = 4500


def folder_of(fraction: float) -> Path:
    """Where the run on this share lives: runs/english-scale/text-0.009 ..."""
    return RUNS / f"text-{fraction:g}"


def steps_done(fraction: float) -> int:
    """How many steps the run on this share has saved (0 when not started)."""
    state = folder_of(fraction) / RUN_FOLDER / "training_state.pt"
    if not state.is_file():
        return 0
    return len(torch.load(state, weights_only=False)["history"])


def pretrain(fractions: list[float], stop_after: int, threads: int) -> None:
    """Each share's run to stop_after steps, one after another, each resuming what it saved."""
    for fraction in fractions:
        done = steps_done(fraction)
        if done >= stop_after:
            print(f"text {fraction:g}: {done:,} steps saved already", flush=True)
            continue
        command = [
            sys.executable,
            "-m",
            "minibert",
            "pretrain",
            "--recipe",
            "english",
            "--text-fraction",
            f"{fraction:g}",
            "--stop-after",
            str(stop_after),
            "--threads",
            str(threads),
            "--out",
            str(folder_of(fraction)),
        ] + (["--resume"] if done else [])
        print(" ".join(command[1:]), flush=True)
        started = time.perf_counter()
        subprocess.run(command, check=True, env={**os.environ, "OMP_NUM_THREADS": str(threads)})
        print(f"text {fraction:g}: {time.perf_counter() - started:.0f} s", flush=True)


def mask_measures(model, tok: BertTokenizer, docs: list) -> tuple[dict, list]:
    """[MASK] top-1 on the held-out Wikipedia articles beside the n-gram table of docs' words."""
    heldout = pretraining.heldout_dataset(corpora.wikipedia_articles("heldout"), tok, 128, seed=1)
    items = [heldout[i] for i in range(len(heldout))]
    mine = mask_hits(model.eval(), items, tok)
    table = ngram_hits(NgramTable(pretraining.tokenize_documents(docs, tok)), items, tok)
    measures = {
        "examples": len(items),
        "mask_positions": sum(c for _, c in mine),
        "model": round(accuracy(mine), 4),
        "ngram": round(accuracy(table), 4),
        "minus_ngram": difference(table, mine),
    }
    return measures, mine


def pair_measures(score, pairs: list, trigram: list[bool]) -> tuple[dict, list[bool]]:
    """Minimal-pair accuracy per phenomenon, and overall minus the same words' trigram."""
    right = mp.judge(pairs, score)
    summary = mp.summarize(pairs, right)
    return {
        "accuracy": {
            k: [round(v.accuracy, 4), round(v.low, 4), round(v.high, 4)] for k, v in summary.items()
        },
        "minus_trigram": rounded(
            paired_bootstrap([float(x) for x in trigram], [float(x) for x in right])
        ),
    }, right


def rounded(values) -> list[float]:
    return [round(x, 4) for x in values]


def collect(stop_after: int, threads: int) -> dict:
    """Every share's run at stop_after steps (and the course-english checkpoint), measured."""
    torch.set_num_threads(threads)
    train = english_corpus.documents("train")
    extract = corpora.wikipedia_articles("train")
    known = {w for a in extract for p in a.paragraphs for w in mp.words(p)}
    pairs = mp.generate(200, seed=0, vocabulary=known)  # benchmarks/minimal_pairs.py's pairs
    results = {
        "what": "the english recipe on a share of the english corpus's training words, every run "
        f"paused at step {stop_after:,} of the 30,000-step schedule: [MASK] top-1 on the held-out "
        "Wikipedia articles beside the n-gram table of the same words, and minimal-pair accuracy "
        "(PLL, ties wrong) beside a word trigram of the same words; 95% paired bootstrap "
        "intervals",
        "command": "python benchmarks/english_scale.py pretrain; "
        "python benchmarks/english_scale.py collect",
        "stop_after": stop_after,
        "pairs": len(pairs),
        "machine": f"{platform.machine()}, {threads} thread(s), torch {torch.__version__}",
        "runs": {},
    }
    previous = None
    for fraction in FRACTIONS:
        done = steps_done(fraction)
        if done < stop_after:
            print(f"text {fraction:g}: {done:,} of {stop_after:,} steps; not measured", flush=True)
            continue
        folder = folder_of(fraction) / RUN_FOLDER
        tok = BertTokenizer.from_pretrained(folder)
        model = load_paused(folder_of(fraction), tok)
        model = getattr(model, "model", model)  # its BertForPreTraining (guided layer 0 inside)
        docs = share_of_documents(train, fraction) if fraction < 1 else train
        texts = [s for d in docs for s in d.sentences]
        trigram = mp.judge(
            pairs,
            mp.sentence_scorer(mp.WordNgramModel(texts, order=3, discount=0.75).log_probability),
        )
        mask, _ = mask_measures(model, tok, docs)
        pll, right = pair_measures(mp.pll_scorer(model, tok), pairs, trigram)
        row = {
            "fraction": fraction,
            "documents": len(docs),
            "words": sum(len(s.split()) for s in texts),
            "vocab_size": len(tok.vocab),
            "steps": stop_after,
            "mask": mask,
            "minimal_pairs": pll,
            "trigram": mp.summarize(pairs, trigram)["overall"].accuracy,
        }
        if previous is not None:
            row["minimal_pairs"]["minus_smaller_share"] = rounded(
                paired_bootstrap([float(x) for x in previous], [float(x) for x in right])
            )
        previous = right
        results["runs"][f"{fraction:g}"] = row
        print(
            f"text {fraction:g} ({row['words']:,} words): [MASK] {mask['model']:.1%} vs n-gram "
            f"{mask['ngram']:.1%}; pairs {pll['accuracy']['overall'][0]:.1%} vs trigram "
            f"{row['trigram']:.1%}",
            flush=True,
        )
    folder = assets.course_checkpoint("course-english")
    tok = BertTokenizer.from_pretrained(folder)
    model = BertForPreTraining.from_pretrained(folder).eval()
    texts = [s for d in train for s in d.sentences]
    trigram = mp.judge(
        pairs, mp.sentence_scorer(mp.WordNgramModel(texts, order=3, discount=0.75).log_probability)
    )
    mask, _ = mask_measures(model, tok, train)
    pll, _ = pair_measures(mp.pll_scorer(model, tok), pairs, trigram)
    results["checkpoint"] = {
        "name": "course-english",
        "words": sum(len(s.split()) for s in texts),
        "steps": 30000,
        "mask": mask,
        "minimal_pairs": pll,
        "trigram": mp.summarize(pairs, trigram)["overall"].accuracy,
    }
    return results


def plot(results: dict, path: Path) -> None:
    """Left: [MASK] top-1 against words read (log), model and n-gram. Right: minimal pairs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = list(results["runs"].values())
    words = [r["words"] for r in runs]
    full = results["checkpoint"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for axis, model, base, base_name, unit in (
        (
            left,
            [r["mask"]["model"] for r in runs],
            [r["mask"]["ngram"] for r in runs],
            "n-gram table",
            "held-out [MASK] top-1 (%)",
        ),
        (
            right,
            [r["minimal_pairs"]["accuracy"]["overall"][0] for r in runs],
            [r["trigram"] for r in runs],
            "word trigram",
            "minimal pairs right (%)",
        ),
    ):
        axis.plot(
            words, [100 * v for v in model], "o-", label=f"BERT, {results['stop_after']:,} steps"
        )
        axis.plot(
            words, [100 * v for v in base], "s:", color="grey", label=f"{base_name}, same words"
        )
        axis.set_xscale("log")
        axis.set(xlabel="words of training text (log)", ylabel=unit)
    left.plot(
        full["words"],
        100 * full["mask"]["model"],
        "*",
        ms=12,
        color="C3",
        label="course-english, 30,000 steps",
    )
    right.plot(
        full["words"],
        100 * full["minimal_pairs"]["accuracy"]["overall"][0],
        "*",
        ms=12,
        color="C3",
        label="course-english, 30,000 steps",
    )
    right.axhline(50, color="black", lw=0.5, ls="--")
    left.set_title("masked words: more text, the same steps")
    right.set_title("grammatical minimal pairs (50%: chance)")
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("stage", choices=("pretrain", "collect"))
    parser.add_argument("--fractions", type=float, nargs="+", default=list(FRACTIONS))
    parser.add_argument("--stop-after", type=int, default=STOP_AFTER)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS / "english_scale.json")
    args = parser.parse_args()
    if args.stage == "pretrain":
        pretrain(args.fractions, args.stop_after, args.threads)
        return
    results = collect(args.stop_after, args.threads)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    plot(results, args.out.with_suffix(".png"))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
