"""Grammatical minimal pairs: which sentence of a pair does each model prefer?

    python benchmarks/minimal_pairs.py                                   # the course checkpoint
    python benchmarks/minimal_pairs.py --model english=runs/english/base # and a run (or folder)

Nine BLiMP phenomena, 200 pairs each (`minibert.minimal_pairs`), built from words that the course
extract's training articles contain (so every model here has read every word). The BERTs score a
sentence by pseudo-log-likelihood (Salazar et al., 2020); the word trigram models (interpolated absolute discounting, d = 0.75) by
log-probability, each trained on the same words as a BERT: the extract's 0.39M training words,
and the english corpus's 5.5M. A pair is right when the good sentence scores strictly higher (a
tie is wrong). Each model minus each n-gram and minus the course checkpoint, with the 95% paired
bootstrap interval over the pairs. Writes benchmarks/results/minimal_pairs.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch
from common.english_runs import RUNS, VOCAB, load_state

from minibert import assets, corpora, english_corpus
from minibert import minimal_pairs as mp
from minibert.model import BertForPreTraining
from minibert.paired_statistics import paired_bootstrap
from minibert.tokenization import BertTokenizer

RESULTS = Path(__file__).resolve().parent / "results" / "minimal_pairs.json"


def bert(spec: str):
    """(model, tokenizer) of a finished folder, or of a paused run under runs/english/NAME."""
    folder = Path(spec)
    if (folder / "model.safetensors").is_file():
        return BertForPreTraining.from_pretrained(folder).eval(), BertTokenizer.from_pretrained(
            folder
        )
    tok = BertTokenizer.from_pretrained(VOCAB)
    return load_state(folder.relative_to(RUNS).as_posix(), tok), tok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", action="append", default=[], help="NAME=FOLDER or run")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    extract = corpora.wikipedia_articles("train")
    known = {w for a in extract for p in a.paragraphs for w in mp.words(p)}
    pairs = mp.generate(200, seed=0, vocabulary=known)
    scorers, seconds = {}, {}
    for name, texts in (
        ("trigram, extract (0.39M words)", [s for a in extract for s in a.sentences]),
        (
            "trigram, english (5.5M words)",
            [s for d in english_corpus.documents("train") for s in d.sentences],
        ),
    ):
        started = time.perf_counter()
        scorers[name] = mp.sentence_scorer(
            mp.WordNgramModel(texts, order=3, discount=0.75).log_probability
        )
        seconds[name] = round(time.perf_counter() - started, 1)
    models = {"course checkpoint (extract, 0.39M words)": str(assets.course_checkpoint("course"))}
    models |= dict(spec.partition("=")[::2] for spec in args.model)
    for name, spec in models.items():
        model, tok = bert(spec)
        scorers[name] = mp.pll_scorer(model, tok)
    right, results = {}, {"pairs": len(pairs), "models": {}}
    for name, score in scorers.items():
        started = time.perf_counter()
        right[name] = mp.judge(pairs, score)
        summary = mp.summarize(pairs, right[name])
        results["models"][name] = {
            "source": models.get(name, "word trigram, interpolated absolute discounting 0.75"),
            "seconds": seconds.get(name, 0) + round(time.perf_counter() - started, 1),
            "accuracy": {
                k: [round(v.accuracy, 4), round(v.low, 4), round(v.high, 4)]
                for k, v in summary.items()
            },
        }
        print(f"== {name}\n{mp.table(summary)}", flush=True)
    baselines = [n for n in scorers if n.startswith("trigram")]
    baselines.append("course checkpoint (extract, 0.39M words)")
    for name in models:
        gaps = {}
        for other in baselines:
            if other != name:
                a = [float(x) for x in right[other]]
                b = [float(x) for x in right[name]]
                gaps[other] = [round(x, 4) for x in paired_bootstrap(a, b)]
        results["models"][name]["minus"] = gaps
    results["machine"] = (
        f"{platform.machine()}, {args.threads} thread(s), torch {torch.__version__}"
    )
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
