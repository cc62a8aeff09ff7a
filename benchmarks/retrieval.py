"""wiki-search: BM25, TF-IDF and each encoder's pooling on one table, with paired intervals against
BM25, wall times, the hybrid chosen on dev, anisotropy per layer and a query's latency.

    nice python benchmarks/retrieval.py            # about an hour on 2 busy cores
    python benchmarks/retrieval.py --timing-only   # MiniLM over the corpus again, when quiet
    python benchmarks/retrieval.py --only ict      # a self-supervised row (ICT or SimCSE) added
    python benchmarks/retrieval.py --only distill  # the row distilled from MiniLM added
    python benchmarks/retrieval.py --only hard-course  # contrastive with a BM25 negative added
    python benchmarks/retrieval.py --end-to-end    # mb.ask's answers, the reader trained once

The haystack is every paragraph of the course's Wikipedia (7,396 of 106 articles); the queries are
wiki-qa's test questions (the held-out articles), each with the one paragraph it was written about.
Every retriever ranks the whole haystack; recall@1/5/20 and MRR@10 are the field's. Each row's
difference from BM25 is paired over the test queries: 2,000 bootstrap resamples of them, both rows
scored on each (random weights: 3 seeds, averaged within each resample), and a sign-flip p-value.
The hybrid's weight is chosen on the dev questions (never on test) by a rule stated in the file; so
is the learning rate of the contrastive row (the course checkpoint trained on the training
questions' pairs with in-batch negatives), at a seed not among the three reported. Every trained
row is trained by the recipe users run, through the package: `minibert finetune --task
wiki-search` (recipes.finetune), `--task wiki-ict` or `--task wiki-simcse` for the
self-supervised rows (the course checkpoint trained on the training articles' text alone), and
`minibert distill` for the distilled row; one function (chosen_rate) tries each row's rates on
dev. ICT's rate chosen on dev by `minibert finetune --task wiki-ict`, SimCSE's here
on dev, each at seed 0; the row reports seeds 1-3 (--seeds; a seed --out's row already holds at the
same settings is read back, not trained again); --only adds one to the table in --out, compared as
the others. So is the distilled row (recipes.distill: the course checkpoint regressing MiniLM's
mean-pooled vectors of the training articles' sentences and paragraphs; its rate chosen on dev at
LR_SEED, then 3 seeds; the teacher's vectors and the students' folders kept in --cache), and the
hard-negative rows (--only hard-course, hard-minilm: the contrastive recipe with one BM25 negative
per question beside the in-batch ones, `--hard-negatives 1`, from the course checkpoint and from
MiniLM, each compared with where it started too: the contrastive row, MiniLM off the shelf).
--end-to-end fine-tunes a MiniLM wiki-qa reader once (kept in --cache) and measures open_qa.Asker
on the test questions against the reader given the gold paragraph (SQuAD exact match and F1).
Passage vectors are kept in --cache by encoder fingerprint, so a
rerun re-encodes nothing; the timings are those of the run that encoded. A fine-tuning that an
earlier run finished with the same settings is read back from --cache (``trained_before``), so an
interrupted row resumes at its first unfinished run. Writes
benchmarks/results/retrieval.json and retrieval.png.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import statistics
import time
from datetime import date
from pathlib import Path

import torch

from minibert import (
    assets,
    corpora,
    inference,
    open_qa,
    paired_statistics,
    recipes,
    retrieval,
    squad,
)
from minibert import retrieval_distill as distillation
from minibert import retrieval_encoders as encoders
from minibert import retrieval_index as index
from minibert import retrieval_selfsup as selfsup

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "retrieval.json"
MEASURES = ("recall@1", "recall@5", "recall@20", "mrr@10")
SEEDS = (0, 1, 2)  # random weights of the course's size
WEIGHTS = [round(0.05 * i, 2) for i in range(21)]  # the hybrid's dense weight, chosen on dev
LRS = (3e-4, 1e-3, 3e-3)  # contrastive training's rates, one chosen on dev with LR_SEED
LR_SEED = 100  # not among SEEDS: the seed that chooses the rate is not reported
STEPS, BATCH, TEMPERATURE = 100, 32, 0.05  # about 5 epochs of the 592 training questions
# self-supervised from the training articles alone (no question): 6-11 minutes a run on one
# thread; ICT's rate chosen on dev by `minibert finetune --task wiki-ict` (the same steps and
# batches) at seed 0, SELFSUP_TRIALS; SimCSE's chosen here on dev at seed 0 among SIMCSE_LRS; the
# row reports SELFSUP_SEEDS (not the seed that chose), each its own ICT pairs and batches
SELFSUP = {"steps": 1200, "batch_size": 32, "temperature": TEMPERATURE}
SELFSUP_LR = {"ict": 3e-4}  # chosen by finetune --task wiki-ict (SELFSUP_TRIALS)
SELFSUP_SEEDS, SELFSUP_LR_SEED = (1, 2, 3), 0
# 1e-4 tried because 3e-4 was at the grid's edge: the best is inside the grid
SELFSUP_TRIALS = [{"lr": 1e-3, "mrr@10": 0.440}, {"lr": 3e-4, "mrr@10": 0.464}, {"lr": 1e-4, "mrr@10": 0.445}]  # fmt: skip
SIMCSE_LRS = (1e-4, 3e-4, 1e-3)
SELFSUP_ROWS = {"ict": "course mean, ICT on the articles", "simcse": "course mean, SimCSE on the articles"}  # fmt: skip
# distilled from MiniLM (recipes.distill, about 5 minutes a run on one thread): the rate chosen on
# dev at LR_SEED among DISTILL_LRS (as the contrastive row's), then SEEDS at it
DISTILL = {"steps": 2000, "batch_size": 64, "units": "both"}
DISTILL_LRS = (1e-3, 3e-3, 1e-2)
DISTILL_ROW = "course mean, distilled from MiniLM"
# hard negatives (DPR's one BM25 negative per question beside the in-batch ones: `minibert finetune
# --task wiki-search --hard-negatives 1`), from the course checkpoint (the contrastive row's steps,
# batches and rates) and from MiniLM (its own rates, around finetune's 5e-5 for its size); each
# rate chosen on dev at LR_SEED, then SEEDS; each row also compared with where it started
HARD = 1
MINILM_LRS = (1e-5, 3e-5, 1e-4)
HARD_ROWS = {
    "hard-course": ("course mean, contrastive with a BM25 negative", "course mean, contrastive on train"),
    "hard-minilm": ("MiniLM mean, contrastive with a BM25 negative", "MiniLM mean"),
}  # fmt: skip
ADDED_ROWS = SELFSUP_ROWS | {"distill": DISTILL_ROW} | {k: v[0] for k, v in HARD_ROWS.items()}
# end to end: a MiniLM wiki-qa reader (`minibert finetune --model minilm --task wiki-qa`, the rate
# finetuning_shapes.json's wiki-qa MiniLM row chose on dev; the recipe's defaults otherwise), one
# seed, reading the top open_qa.DEFAULT_TOP_K paragraphs of each retriever (open_qa.Asker)
READER = {"model": "minilm", "task": "wiki-qa", "lr": 0.000333, "seed": 1}
E2E_RETRIEVERS = ("hybrid", "bm25")
E2E_TARGET = 0.6  # a bar: end-to-end F1 at least 60% of the F1 with the gold paragraph
HYBRID_RULE = (
    "the dense weight w in 0, 0.05, ..., 1 with the highest dev MRR@10; a tie goes to the higher "
    "dev recall@5, then the smaller w (score = (1 - w) z(BM25) + w z(cosine), z standardising "
    "each query's scores over the passages)"
)


def load() -> float:
    """The 1-minute load average: other work on the CPU while this ran."""
    return round(os.getloadavg()[0], 2)


def dense_scores(queries: torch.Tensor, passages: torch.Tensor) -> torch.Tensor:
    """(queries, passages) cosines."""
    unit = torch.nn.functional.normalize
    return unit(queries.float(), dim=-1) @ unit(passages.float(), dim=-1).T


class Vectors:
    """Passage vectors by (encoder, pooling), encoded once and kept in the cache folder."""

    def __init__(self, cache: Path, passages: list, version: str, course: str = "course"):
        self.cache, self.passages, self.version = cache, passages, version
        self.course = course  # the course checkpoint every "course" row starts from (--course)
        cache.mkdir(parents=True, exist_ok=True)

    def passages_of(
        self, encoder: encoders.Encoder, pooling: str, fresh: bool = False
    ) -> tuple[torch.Tensor, dict]:
        """(passages, hidden) vectors and how long encoding them took (seconds, load before/after);
        fresh: encoded again (and kept) even when the cache has them."""
        key = f"{encoder.fingerprint()}-{pooling}-{self.version}"
        file = self.cache / f"{key}.pt"
        if file.is_file() and not fresh:
            kept = torch.load(file, weights_only=True)
            return kept["vectors"], json.loads(kept["timing"])
        before, start = load(), time.perf_counter()
        vectors = encoders.encode(encoder, [p.text for p in self.passages], pooling)
        timing = {
            "seconds": time.perf_counter() - start,
            "load_before": before,
            "load_after": load(),
            "threads": torch.get_num_threads(),
        }
        torch.save({"vectors": vectors, "timing": json.dumps(timing)}, file)
        return vectors, timing


def ranks(scores: torch.Tensor, queries: list) -> torch.Tensor:
    """(queries,) the rank of each query's paragraph (1 best)."""
    return retrieval.ranks_of(scores, [q.passage for q in queries])


def per_query(scores: torch.Tensor, queries: list) -> dict[str, torch.Tensor]:
    """Each query's 1/0 recall@k and reciprocal rank, (queries,) each."""
    return retrieval.per_query(ranks(scores, queries))


def against(a: torch.Tensor, b: torch.Tensor) -> dict:
    """b's measures minus a's, paired over the test queries: ranks (seeds, queries) each -> measure
    -> difference, 95% interval, p (rows of different seeds: each its seeds' mean per query)."""
    a, b = retrieval.per_query(a), retrieval.per_query(b)  # measure -> (seeds, queries)
    out = {}
    for m in MEASURES:
        x, y = a[m], b[m]
        if x.shape[0] != y.shape[0]:
            x, y = x.mean(0, keepdim=True), y.mean(0, keepdim=True)
        diff, low, high = paired_statistics.paired_bootstrap(x, y)
        p = paired_statistics.paired_sign_flip_test(x, y)
        out[m] = {"difference": diff, "low": low, "high": high, "p": p}
    return out


def compared(rows: dict, base: str = "BM25", course_best: str | None = None) -> None:
    """Each row's test values and its paired difference from the base row per measure
    (difference, 95% interval, sign-flip p-value); trained rows also against course_best. The
    ranks (seeds, queries) are kept as lists, for any other comparison."""
    for name, row in rows.items():
        found = retrieval.per_query(row["ranks"])  # measure -> (seeds, queries)
        row["test"] = {m: float(found[m].mean()) for m in MEASURES}
        row["vs_bm25"] = against(rows[base]["ranks"], row["ranks"]) if name != base else {}
        if "training" in row and course_best is not None:
            row["vs_course_best"] = {"row": course_best}
            row["vs_course_best"] |= against(rows[course_best]["ranks"], row["ranks"])
    for row in rows.values():
        row["ranks"] = row["ranks"].tolist()


def lexical_rows(passages: list, test: list, dev: list) -> tuple[dict, dict]:
    """BM25 and TF-IDF: their rows, and their (dev, test) score matrices by name."""
    docs = [retrieval.words(p.text) for p in passages]
    rows, scores = {}, {}
    for name, make in (("BM25", retrieval.BM25), ("TF-IDF", retrieval.TfIdf)):
        start = time.perf_counter()
        model = make(docs)
        built = time.perf_counter() - start
        start = time.perf_counter()
        test_scores = model.score_matrix([retrieval.words(q.text) for q in test])
        per = (time.perf_counter() - start) / len(test)
        scores[name] = (model.score_matrix([retrieval.words(q.text) for q in dev]), test_scores)
        rows[name] = {
            "kind": "lexical",
            "settings": "k1 1.2, b 0.75 (Lucene's)" if name == "BM25" else "smoothed idf, cosine",
            "ranks": ranks(test_scores, test)[None],  # (1, queries)
            "seconds": {"index": built, "per_query_ms": 1000 * per},
        }
    return rows, scores


def dense_row(vectors: Vectors, encoder: encoders.Encoder, pooling: str, queries: dict) -> dict:
    """One encoder and pooling: passage and query vectors, its test items, (dev, test) scores."""
    passage_vectors, timing = vectors.passages_of(encoder, pooling)
    start = time.perf_counter()
    test_vectors = encoders.encode(encoder, [q.text for q in queries["test"]], pooling)
    per = (time.perf_counter() - start) / len(queries["test"])
    dev_vectors = encoders.encode(encoder, [q.text for q in queries["dev"]], pooling)
    return {
        "passages": passage_vectors,
        "dev": dev_vectors,
        "test": test_vectors,
        "seconds": {
            "passages": timing["seconds"],
            "load_average": [timing["load_before"], timing["load_after"]],
            "threads": timing.get("threads"),
            "per_query_ms": 1000 * per,
        },
    }


def dense_rows(vectors: Vectors, queries: dict) -> tuple[dict, dict]:
    """Every encoder and pooling of the table: rows, and (dev, test) cosines by name."""
    minilm, course = encoders.load_encoder("minilm"), encoders.load_encoder(vectors.course)
    plan = [
        ("MiniLM mean", minilm, "mean", False),
        ("MiniLM [CLS]", minilm, "cls", False),
        ("MiniLM mean, whitened", minilm, "mean", True),
        ("course [CLS]", course, "cls", False),
        ("course mean", course, "mean", False),
        ("course mean, whitened", course, "mean", True),
    ]
    rows, scores = {}, {}
    for name, encoder, pooling, whiten in plan:
        print(f"{name}: encoding (load {load()})", flush=True)
        got = dense_row(vectors, encoder, pooling, queries)
        p, dev, test = got["passages"], got["dev"], got["test"]
        if whiten:  # Su et al., 2021: fitted on the passages' vectors
            white = encoders.Whitening.fit(p)
            p, dev, test = white(p), white(dev), white(test)
        scores[name] = (dense_scores(dev, p), dense_scores(test, p))
        rows[name] = {"kind": "dense", "pooling": pooling, "whitened": whiten}
        rows[name] |= {"ranks": ranks(scores[name][1], queries["test"])[None]}
        rows[name]["seconds"] = got["seconds"]
    rows["random course-size mean"] = random_row(vectors, course, queries)
    return rows, scores


def random_row(vectors: Vectors, course: encoders.Encoder, queries: dict) -> dict:
    """Random weights of the course checkpoint's size (and vocabulary), mean pooling, 3 seeds."""
    found, seconds = [], []
    for seed in SEEDS:
        got = dense_row(vectors, encoders.random_encoder(course, seed), "mean", queries)
        found.append(ranks(dense_scores(got["test"], got["passages"]), queries["test"]))
        seconds.append(got["seconds"])
    return {
        "kind": "dense",
        "pooling": "mean",
        "seeds": list(SEEDS),
        "ranks": torch.stack(found),  # (seeds, queries)
        "seconds": seconds[0],
    }


def widened(trials: list[dict], trial) -> dict:
    """The best trial by dev MRR@10 (a tie to the smaller rate), after widening a grid whose best
    rate is at its edge by one step beyond it, twice at most; trial(lr) appends to trials."""
    best = lambda: max(trials, key=lambda t: (t["mrr@10"], -t["lr"]))  # noqa: E731
    for _ in range(2):
        rates = sorted(t["lr"] for t in trials)
        if best()["lr"] not in (rates[0], rates[-1]):
            break
        step = rates[1] / rates[0]  # the grid's step
        edge = best()["lr"]
        trial(float(f"{edge * step if edge == rates[-1] else edge / step:.1e}"))
    return best()


def chosen_rate(
    label: str,
    rates: tuple,
    queries: dict,
    run,
    done: dict | None = None,
    seconds: bool = False,
) -> tuple[dict, list[dict]]:
    """The rate a trained row uses, chosen on dev: each of rates tried (run(lr) trains at the
    rate-choosing seed and measures: dense_row's fields), its dev measures kept in trials (with
    seconds, its training time too), then widened (a best rate at the grid's edge adds the next
    beyond it, twice at most). done: rate -> a trial --out already holds at the same settings,
    read back rather than trained again. The best trial and every trial."""
    trials: list[dict] = []

    def trial(lr: float) -> None:
        if done and lr in done:
            trials.append(done[lr])
            return
        got = run(lr)
        dev = per_query(dense_scores(got["dev"], got["passages"]), queries["dev"])
        trials.append({"lr": lr, **{m: float(v.mean()) for m, v in dev.items()}})
        if seconds:
            trials[-1]["training_seconds"] = got["seconds"]["training"]
        print(f"{label} lr {lr:g}: dev MRR@10 {trials[-1]['mrr@10']:.3f}", flush=True)

    for lr in rates:
        trial(lr)
    return widened(trials, trial), trials


def finetuned(
    vectors: Vectors,
    queries: dict,
    task: str,
    lr: float,
    seed: int,
    model: str | None = None,
    **loop,
) -> dict:
    """The course checkpoint (or model) fine-tuned as `minibert finetune --model course --task TASK`
    trains it (recipes.finetune: the task's data, its bi-encoder and in-batch loss at its temperature,
    fine-tuning's defaults) with the loop's settings, this rate and seed, one evaluation at the end
    (so the kept weights are the last); its folder in the cache, then measured like the others:
    dense_row's fields, the loss's first and last values and the training time."""
    model = model or vectors.course
    start_from = "" if model == "course" else f"{model}-"  # old names kept
    hard = f"-hard{loop['hard_negatives']}" if loop.get("hard_negatives") else ""
    out = vectors.cache / "finetuned" / f"{start_from}{task}{hard}-lr{lr:g}-seed{seed}"
    settings = {"model": model, "task": task, "lr": lr, "seed": seed} | loop
    kept = trained_before(out, settings)
    if kept is None:
        before, start = load(), time.perf_counter()
        result = recipes.finetune(out, model=model, task=task, lr=lr, seed=seed,
                                  eval_every=loop["steps"], overwrite=True, progress=False, **loop)  # fmt: skip
        trained, history = time.perf_counter() - start, result.history
        loads = [before, load()]
    else:  # an earlier run of these settings, read back (its training time from its results)
        trained, history, loads = kept["seconds"], kept["history"], None
    got = dense_row(vectors, encoders.load_encoder(out), "mean", queries)
    got["seconds"] |= {"training": trained, "training_load_average": loads}
    losses = [h["train_loss"] for h in history if "train_loss" in h]
    got["loss_first_last"] = [losses[0], losses[-1]] if losses else None
    return got


def trained_before(out: Path, settings: dict) -> dict | None:
    """A finished fine-tuning in out with these settings (its results.json's options agree with
    every one): its training seconds and history, so that an interrupted benchmark resumes at the
    first run it had not finished; None when there is none."""
    try:
        results = json.loads((out / "results.json").read_text())
        history = json.loads((out / "history.json").read_text())
    except (OSError, ValueError):
        return None
    if any(results.get("options", {}).get(k) != v for k, v in settings.items()):
        return None
    return {"seconds": results.get("seconds"), "history": history}


def contrastive(
    vectors: Vectors, queries: dict, seed: int, lr: float, model: str | None = None, hard: int = 0
) -> dict:
    """The course checkpoint (or model) trained on the training questions' (question, paragraph)
    pairs with in-batch negatives (`minibert finetune --task wiki-search`), and hard of BM25's best
    wrong paragraphs per question beside them (--hard-negatives), measured like the others."""
    loop = {"steps": STEPS, "batch_size": BATCH} | ({"hard_negatives": hard} if hard else {})
    return finetuned(vectors, queries, "wiki-search", lr, seed, model, **loop)


def contrastive_row(
    vectors: Vectors, queries: dict, model: str | None = None, rates: tuple = LRS, hard: int = 0
) -> dict:
    """The rate chosen on dev (MRR@10, seed LR_SEED; a best rate at the grid's edge adds the next
    rate beyond it, twice at most), then 3 seeds at it on test: the course checkpoint (or model),
    with hard BM25 negatives per question beside the in-batch ones."""
    model = model or vectors.course
    run = lambda lr, seed: contrastive(vectors, queries, seed, lr, model, hard)  # noqa: E731
    best, trials = chosen_rate("contrastive", rates, queries, lambda lr: run(lr, LR_SEED))
    found, runs = [], []
    for seed in SEEDS:
        got = run(best["lr"], seed)
        found.append(ranks(dense_scores(got["test"], got["passages"]), queries["test"]))
        runs.append(got["seconds"])
    hard_flag = f" --hard-negatives {hard}" if hard else ""
    return {
        "kind": "dense, trained",
        "pooling": "mean",
        "seeds": list(SEEDS),
        "training": {
            "recipe": f"minibert finetune --model {model} --task wiki-search --steps {STEPS} "
            f"--batch-size {BATCH} --lr {best['lr']:g}{hard_flag} --seed SEED",
            "pairs": len(queries["train"]),
            "steps": STEPS,
            "batch_size": BATCH,
            "temperature": TEMPERATURE,
            **({"hard_negatives": hard} if hard else {}),
            "lr": best["lr"],
            "lr_trials": trials,
            "lr_rule": f"the highest dev MRR@10 of {list(rates)} at seed {LR_SEED} (a best rate "
            "at the grid's edge adds the next one beyond it), a tie to the smaller rate",
        },
        "ranks": torch.stack(found),  # (seeds, queries)
        "seconds": runs[0],
        "training_seconds": [r["training"] for r in runs],
    }


def selfsup_trained(vectors: Vectors, queries: dict, objective: str, lr: float, seed: int) -> dict:
    """The course checkpoint trained on the training articles' own text by ICT or SimCSE (`minibert
    finetune --task wiki-ict|wiki-simcse`; no question) at SELFSUP's settings, this rate and seed
    (ICT's pairs drawn with the seed too), measured like the others: dense_row's fields, the
    loss and the pairs."""
    loop = {"steps": SELFSUP["steps"], "batch_size": SELFSUP["batch_size"]}
    got = finetuned(vectors, queries, f"wiki-{objective}", lr, seed, **loop)
    got["pairs"] = len(selfsup.pairs_of(objective, selfsup.training_paragraphs(), seed=seed))
    return got


def selfsup_row(
    vectors: Vectors,
    queries: dict,
    objective: str,
    seeds: tuple,
    kept: dict | None = None,
    lr: float | None = None,
) -> dict:
    """The self-supervised row: its rate (ICT's chosen by finetune --task wiki-ict, SimCSE's here
    on dev at SELFSUP_LR_SEED among SIMCSE_LRS, a tie to the smaller), then the seeds on test.
    kept: the row as --out has it; a seed it holds at the same settings is read back, not trained
    again (its ranks and times are those of the run that made them). lr: a rate given (--lr), not
    chosen on dev."""
    if lr is not None:
        trials, rule = [], "given (--lr), not chosen on dev"
    elif (
        objective in SELFSUP_LR and vectors.course == "course"
    ):  # another checkpoint chooses its own
        lr, trials = SELFSUP_LR[objective], SELFSUP_TRIALS
        rule = (
            "the highest dev MRR@10 of `minibert finetune --task wiki-ict` (the same steps and "
            f"batches; its kept evaluation) at seed {SELFSUP_LR_SEED}, not a reported seed"
        )
    else:
        fixed = {k: v for k, v in SELFSUP.items()} | {"objective": objective}
        fixed["recipe"] = f"minibert finetune --model {vectors.course} --task wiki-{objective}"
        same = kept and all(kept["training"].get(k) == v for k, v in fixed.items())
        done = {t["lr"]: t for t in kept["training"].get("lr_trials", [])} if same else {}
        run = lambda rate: selfsup_trained(vectors, queries, objective, rate, SELFSUP_LR_SEED)  # noqa: E731
        best, trials = chosen_rate(objective, SIMCSE_LRS, queries, run, done, seconds=True)
        lr = best["lr"]
        rule = (
            f"the highest dev MRR@10 of {list(SIMCSE_LRS)} at seed {SELFSUP_LR_SEED}, not a "
            "reported seed (a best rate at the grid's edge adds the next one beyond it, twice at "
            "most); a tie to the smaller rate"
        )
    settings = {"objective": objective, **SELFSUP, "lr": lr, "group_by_length": True,
                "recipe": f"minibert finetune --model {vectors.course} --task wiki-{objective}"}  # fmt: skip
    runs: dict[int, dict] = {}
    if kept and all(kept["training"].get(k) == v for k, v in settings.items()):
        for i, seed in enumerate(kept["seeds"]):
            run = kept.get("seed_runs", {}).get(str(seed)) or {
                "seconds": kept["seconds"],
                "loss_first_last": kept["training"].get("loss_first_last"),
            }
            runs[seed] = run | {"ranks": torch.tensor(kept["ranks"][i]), "read_back": True}
    for seed in seeds:
        if seed in runs:
            continue
        got = selfsup_trained(vectors, queries, objective, lr, seed)
        found = ranks(dense_scores(got["test"], got["passages"]), queries["test"])
        runs[seed] = {"seconds": got["seconds"], "loss_first_last": got["loss_first_last"]}
        runs[seed] |= {"ranks": found, "pairs": got["pairs"], "date": date.today().isoformat()}
        print(f"{objective} seed {seed}: trained in {got['seconds']['training']:.0f} s", flush=True)
    order = sorted(runs)
    pairs = selfsup.pairs_of(objective, selfsup.training_paragraphs(), seed=order[0])
    return {
        "kind": "dense, trained",
        "pooling": "mean",
        "seeds": order,
        "training": {
            **settings,
            "pairs": len(pairs),
            "articles": "the training articles (split_of == 'train'): no dev or test article",
            "lr_trials": trials,
            "lr_rule": rule,
            "training_seconds": [runs[s]["seconds"]["training"] for s in order],
        },
        "seed_runs": {
            str(s): {k: v for k, v in runs[s].items() if k not in ("ranks", "read_back")}
            for s in order
        },
        "ranks": torch.stack([runs[s]["ranks"] for s in order]),  # (seeds, queries)
        "seconds": runs[order[0]]["seconds"],
    }


def distilled_student(
    cache: Path, lr: float, seed: int, course: str = "course"
) -> tuple[Path, dict]:
    """The course checkpoint distilled from MiniLM by recipes.distill with DISTILL's settings at
    this rate and seed (the teacher's vectors cached in cache/teacher-vectors), its folder kept in
    cache by the settings and the teacher's fingerprint: (the folder, its timing: teacher vectors
    and training seconds)."""
    minilm = encoders.load_encoder("minilm")
    texts = distillation.training_texts(DISTILL["units"])
    settings = DISTILL | {"lr": lr, "seed": seed}
    named = [settings, minilm.fingerprint()] + ([] if course == "course" else [course])
    key = hashlib.sha256(json.dumps(named).encode()).hexdigest()[:12]
    out, timing_file = cache / f"distilled-{key}", cache / f"distilled-{key}.json"
    if (out / "model.safetensors").is_file() and timing_file.is_file():
        return out, json.loads(timing_file.read_text())
    teacher_cache = cache / "teacher-vectors"
    before, start = load(), time.perf_counter()
    distillation.teacher_vectors(minilm, texts, teacher_cache)  # read back if cached
    teacher_seconds = time.perf_counter() - start
    start = time.perf_counter()
    recipes.distill(out, teacher="minilm", student=course, cache=teacher_cache, overwrite=True,
                    progress=False, **settings)  # fmt: skip
    timing = {
        "texts": len(texts),
        "teacher_vectors": teacher_seconds,
        "training": time.perf_counter() - start,
        "load_average": [before, load()],
        "threads": torch.get_num_threads(),
    }
    timing_file.write_text(json.dumps(timing))
    return out, timing


def distilled(vectors: Vectors, queries: dict, cache: Path, lr: float, seed: int) -> dict:
    """One distilled student measured like the others: dense_row's fields, its training times
    and its history."""
    folder, timing = distilled_student(cache, lr, seed, vectors.course)
    got = dense_row(vectors, encoders.load_encoder(folder), "mean", queries)
    got["seconds"] |= {k: timing[k] for k in ("teacher_vectors", "training")}
    got["seconds"]["training_load_average"] = timing["load_average"]
    got["texts"] = timing["texts"]
    got["history"] = json.loads((folder / "history.json").read_text())
    return got


def distill_row(vectors: Vectors, queries: dict, cache: Path) -> dict:
    """The distilled course-size student (distilled_student), mean pooling: the rate chosen on
    dev (MRR@10) at LR_SEED among DISTILL_LRS (a best rate at the grid's edge adds the next one
    beyond it, twice at most), then SEEDS at it on test; its training settings and times."""
    best, trials = chosen_rate(
        "distill",
        DISTILL_LRS,
        queries,
        lambda lr: distilled(vectors, queries, cache, lr, LR_SEED),
        seconds=True,
    )
    found, runs = [], []
    for seed in SEEDS:
        got = distilled(vectors, queries, cache, best["lr"], seed)
        found.append(ranks(dense_scores(got["test"], got["passages"]), queries["test"]))
        runs.append(got)
        print(f"distill seed {seed}: trained in {got['seconds']['training']:.0f} s", flush=True)
    return {
        "kind": "dense, trained",
        "pooling": "mean",
        "seeds": list(SEEDS),
        "training": {
            "recipe": f"minibert distill --teacher minilm --student {vectors.course} "
            + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in DISTILL.items())
            + f" --lr {best['lr']:g} --seed SEED",
            "texts": runs[0]["texts"],
            "articles": "the training articles (split_of == 'train'): no dev or test article",
            "loss": "mean squared error of the projected student vector (semi-orthogonal, 128 -> "
            "384: cosines kept) against MiniLM's mean-pooled vector",
            **DISTILL,
            "lr": best["lr"],
            "lr_trials": trials,
            "lr_rule": f"the highest dev MRR@10 of {list(DISTILL_LRS)} at seed {LR_SEED} (a best "
            "rate at the grid's edge adds the next one beyond it), a tie to the smaller rate",
            "loss_first_last": [
                [r["history"][0]["train_loss"], r["history"][-1]["train_loss"]] for r in runs
            ],
            "training_seconds": [r["seconds"]["training"] for r in runs],
        },
        "ranks": torch.stack(found),  # (seeds, queries)
        "seconds": runs[0]["seconds"],
    }


def add_row(
    result: dict,
    vectors: Vectors,
    queries: dict,
    only: str,
    cache: Path,
    seeds: tuple = SELFSUP_SEEDS,
    lr: float | None = None,
) -> None:
    """One self-supervised or the distilled row (ADDED_ROWS) added to a finished table (the others
    read back from it), compared with BM25 and with the course checkpoint's best untrained pooling
    as compared() does."""
    name = ADDED_ROWS[only]
    rows = {"BM25": result["rows"]["BM25"]}
    untrained = [
        n for n, r in result["rows"].items() if n.startswith("course") and "training" not in r
    ]
    best = max(untrained, key=lambda n: result["rows"][n]["test"]["mrr@10"])
    rows[best] = result["rows"][best]
    for row in rows.values():
        row["ranks"] = torch.tensor(row["ranks"])
    if only == "distill":
        rows[name] = distill_row(vectors, queries, cache)
    elif only in HARD_ROWS:  # compared with where it started, too
        start = HARD_ROWS[only][1]
        model, rates = ("minilm", MINILM_LRS) if start.startswith("MiniLM") else (None, LRS)
        rows[name] = contrastive_row(vectors, queries, model, rates, hard=HARD)
        rows[name]["vs_start"] = {"row": start}
        rows[name]["vs_start"] |= against(
            torch.tensor(result["rows"][start]["ranks"]), rows[name]["ranks"]
        )
    else:
        rows[name] = selfsup_row(vectors, queries, only, seeds, result["rows"].get(name), lr)
    compared(rows, course_best=best)
    hybrid_at = [n for n in result["rows"] if n.startswith("hybrid")]
    kept = {n: r for n, r in result["rows"].items() if n not in hybrid_at and n != name}
    result["rows"] = kept | {name: rows[name]} | {n: result["rows"][n] for n in hybrid_at}
    result.setdefault("added_rows", {})[name] = {
        "command": f"python benchmarks/retrieval.py --only {only}"
        + (
            f" --seeds {' '.join(map(str, seeds))}"
            if only in SELFSUP_ROWS and seeds != SELFSUP_SEEDS
            else ""
        )
        + (f" --lr {lr:g}" if only in SELFSUP_ROWS and lr is not None else "")
        + (f" --course {vectors.course}" if vectors.course != "course" else ""),
        "date": date.today().isoformat(),
        "load_average": load(),
    }


def hybrid(lexical: tuple, dense: tuple, queries: dict, name: str) -> dict:
    """BM25 + a dense row's cosines, the weight chosen on dev by HYBRID_RULE; its test items."""
    grid = []
    for w in WEIGHTS:
        dev = per_query(retrieval.hybrid_scores(lexical[0], dense[0], w), queries["dev"])
        grid.append({"weight": w, **{m: float(v.mean()) for m, v in dev.items()}})
    best = max(grid, key=lambda g: (g["mrr@10"], g["recall@5"], -g["weight"]))
    tied = [
        g["weight"]
        for g in grid
        if (g["mrr@10"], g["recall@5"]) == (best["mrr@10"], best["recall@5"])
    ]
    test = ranks(retrieval.hybrid_scores(lexical[1], dense[1], best["weight"]), queries["test"])
    return {
        "kind": "hybrid",
        "dense": name,
        "weight": best["weight"],
        "tied_weights": tied,
        "dev_grid": grid,
        "ranks": test[None],  # (1, queries)
    }


def anisotropy(passages: list, course_name: str = "course", count: int = 1000) -> dict:
    """Mean cosine of 2,000 random pairs of 1,000 random passages, per layer, for each encoder."""
    g = torch.Generator().manual_seed(0)
    texts = [passages[i].text for i in torch.randperm(len(passages), generator=g)[:count]]
    course = encoders.load_encoder(course_name)
    found = {}
    for name, encoder in (
        ("course", course),
        ("MiniLM", encoders.load_encoder("minilm")),
        ("random course-size (seed 0)", encoders.random_encoder(course, 0)),
    ):
        found[name] = encoders.anisotropy(encoder, texts, pairs=2000, seed=0)
    return found


def latency(passages: list, vectors: Vectors, queries: list) -> dict:
    """MiniLM's saved index read back (seconds), and a query's time after it (median ms)."""
    minilm = encoders.load_encoder("minilm")
    passage_vectors, _ = vectors.passages_of(minilm, "mean")
    path = index.index_path(minilm.folder, "mean")
    fresh = index.PassageIndex.of(
        passage_vectors, retrieval.corpus_version(passages), minilm.fingerprint(), "mean"
    )
    fresh.save(path)
    start = time.perf_counter()
    index.PassageIndex.load(path)
    read = time.perf_counter() - start
    searcher = index.Searcher(minilm, "mean", passages)  # finds the index fresh: reads it
    searcher(queries[0].text)  # warm-up
    times = []
    for q in queries[:50]:
        start = time.perf_counter()
        searcher(q.text, top_k=5)
        times.append(1000 * (time.perf_counter() - start))
    return {"index_read_s": read, "query_ms_median": statistics.median(times),
            "query_ms_max": max(times), "queries": len(times), "backend": index.backends()[0]}  # fmt: skip


def reader_folder(cache: Path) -> tuple[Path, dict]:
    """The wiki-qa reader (READER's settings), fine-tuned once and kept in cache by its settings:
    (the folder, its training: seconds, load and the recipe's own test measures)."""
    key = hashlib.sha256(json.dumps(READER).encode()).hexdigest()[:12]
    out, info_file = cache / f"reader-{key}", cache / f"reader-{key}.json"
    if (out / "config.json").is_file() and info_file.is_file():
        return out, json.loads(info_file.read_text())
    before, start = load(), time.perf_counter()
    got = recipes.finetune(out, overwrite=True, progress=False, **READER)
    info = {
        "training": time.perf_counter() - start,
        "load_average": [before, load()],
        "threads": torch.get_num_threads(),
        "steps": len(got.history),
        "recipe_test": got.test,
        "recipe_dev": got.dev,
    }
    info_file.write_text(json.dumps(info))
    return out, info


def squad_scores(predictions: list, gold: list) -> dict[str, torch.Tensor]:
    """Per question SQuAD exact match and F1 (0 to 100), (questions,) each."""
    return {
        "exact_match": torch.tensor(
            [100 * squad.exact_match(p, g) for p, g in zip(predictions, gold)]
        ),
        "f1": torch.tensor([100 * squad.f1(p, g) for p, g in zip(predictions, gold)]),
    }


def ratio_interval(part: torch.Tensor, whole: torch.Tensor, resamples: int = 2000) -> list:
    """mean(part) / mean(whole) and its 95% percentile interval, the questions resampled paired."""
    g = torch.Generator().manual_seed(0)
    picks = torch.randint(len(part), (resamples, len(part)), generator=g)
    ratios = part[picks].mean(1) / whole[picks].mean(1).clamp(min=1e-12)
    low, high = torch.quantile(ratios.double(), torch.tensor([0.025, 0.975]).double()).tolist()
    return [float(part.mean() / whole.mean()), low, high]


def end_to_end(passages: list, vectors: Vectors, cache: Path, count: int | None = None) -> dict:
    """The reader on the test questions with their gold paragraph, then open_qa.Asker (each of
    E2E_RETRIEVERS, the top DEFAULT_TOP_K paragraphs, RETRIEVAL_WEIGHT) end to end: SQuAD exact
    match and F1, the end-to-end F1 over the gold paragraph's (with a paired interval), how often
    the answer came from the gold paragraph, and the wall times (count: the first questions only,
    a quick check)."""
    folder, reader = reader_folder(cache)
    minilm = encoders.load_encoder("minilm")  # the hybrid's index, from the cached vectors
    passage_vectors, _ = vectors.passages_of(minilm, "mean")
    fresh = index.PassageIndex.of(
        passage_vectors, retrieval.corpus_version(passages), minilm.fingerprint(), "mean"
    )
    path = index.index_path(minilm.folder, "mean")
    try:  # saved again only where missing or stale (notebooks may be reading it)
        kept = index.PassageIndex.load(path)
        stale = (kept.corpus, kept.encoder) != (fresh.corpus, fresh.encoder)
    except (OSError, ValueError):
        stale = True
    if stale:
        fresh.save(path)
    test = corpora.questions("test")[:count]
    queries = retrieval.wiki_queries("test", passages)[:count]
    gold = [[text for text, _ in q.answers] for q in test]
    model, tok = open_qa.load_reader(folder)
    length = open_qa.trained_length(folder)
    start = time.perf_counter()
    read = [inference.answer(model, tok, q.question, q.context, length, length // 4) for q in test]
    with_gold = squad_scores([a.text for a in read], gold)
    out = {
        "reader": {
            "command": f"minibert finetune --model minilm --task wiki-qa --lr {READER['lr']} "
            f"--seed {READER['seed']}",
            "settings": READER | {"max_length": length},
            "lr_rule": "the rate finetuning_shapes.json's wiki-qa MiniLM row chose on dev (its "
            "seed-0 sweep); one reader seed, not repeated",
            "training_seconds": reader["training"],
            "training_load_average": reader["load_average"],
            "threads": reader["threads"],
            "steps": reader["steps"],
            "recipe_test": {
                k: v for k, v in reader["recipe_test"].items() if not isinstance(v, list)
            },
        },
        "questions": len(test),
        "gold_paragraph": {
            **{m: float(v.mean()) for m, v in with_gold.items()},
            "seconds_per_question": (time.perf_counter() - start) / len(test),
        },
        "top_k": open_qa.DEFAULT_TOP_K,
        "retrieval_weight": open_qa.RETRIEVAL_WEIGHT,
        "hybrid_weight": open_qa.HYBRID_WEIGHT,
        "target": f"end-to-end F1 >= {E2E_TARGET:.0%} of the F1 with the gold paragraph",
        "retrievers": {},
    }
    per_question = {}  # each retriever's F1 per question, for the paired difference below
    for name in E2E_RETRIEVERS:
        start = time.perf_counter()
        asker = open_qa.Asker(name, folder, passages=passages)
        built = time.perf_counter() - start
        start = time.perf_counter()
        found = [asker(q.question) for q in test]
        per = (time.perf_counter() - start) / len(test)
        got = squad_scores([a.text for a in found], gold)
        per_question[name] = got["f1"]
        ratio = ratio_interval(got["f1"], with_gold["f1"])
        out["retrievers"][name] = {
            **{m: float(v.mean()) for m, v in got.items()},
            "f1_over_gold": ratio,
            "meets_target": ratio[0] >= E2E_TARGET,
            "answer_from_gold_paragraph": sum(
                a.hit.index == q.passage for a, q in zip(found, queries)
            )
            / len(test),
            "gold_paragraph_in_top_k": sum(
                any(r.hit.index == q.passage for r in a.read) for a, q in zip(found, queries)
            )
            / len(test),
            "seconds": {"load": built, "per_question": per, "load_average": load()},
        }
        print(f"end to end, {name}: EM {out['retrievers'][name]['exact_match']:.1f} F1 "
              f"{out['retrievers'][name]['f1']:.1f} ({ratio[0]:.2f} of the gold paragraph's "
              f"{out['gold_paragraph']['f1']:.1f})", flush=True)  # fmt: skip
    first, second = E2E_RETRIEVERS  # hybrid minus BM25 (paired_bootstrap gives b - a), per question
    diff, low, high = paired_statistics.paired_bootstrap(per_question[second], per_question[first])
    out[f"{first}_minus_{second}_f1"] = {"difference": diff, "low": low, "high": high}
    out["date"] = date.today().isoformat()
    return out


def write(result: dict, out: Path) -> None:
    """The results as indented JSON, each list of ranks on one line."""
    text = json.dumps(result, indent=1)
    text = re.sub(r"\[\s+(\d[\d,\s]*?)\s+\]", lambda m: "[" + " ".join(m[1].split()) + "]", text)
    out.write_text(text + "\n")


def figure(result: dict, out: Path) -> None:
    """Left: each row's test MRR@10 and recall@5; right: anisotropy per layer."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    names = list(rows)[::-1]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 0.45 * len(names) + 1.5))
    y = torch.arange(len(names)).float()
    for shift, m, colour in ((-0.2, "mrr@10", "C0"), (0.2, "recall@5", "C1")):
        left.barh(y + shift, [rows[n]["test"][m] for n in names], 0.4, label=m, color=colour)
    left.set_yticks(y.tolist(), names)
    left.set_xlim(0, 1)
    left.set_xlabel(f"test queries ({result['queries']['test']}), whole corpus as the haystack")
    left.legend(loc="lower left", bbox_to_anchor=(0, 1), ncols=2, frameon=False)
    for name, values in result["anisotropy"].items():
        right.plot(range(len(values)), values, marker="o", label=name)
    right.set_xlabel("layer (0: embeddings)")
    right.set_ylabel("mean cosine of random passage pairs")
    right.set_ylim(0, 1)
    right.legend()
    right.set_title("anisotropy (mean-pooled vectors)")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def machine(threads: int) -> dict:
    """The processor, cores, threads and versions."""
    name = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"processor": name, "cpu_count": os.cpu_count(), "torch_threads": threads,
            "torch": torch.__version__, "python": platform.python_version()}  # fmt: skip


def print_table(result: dict) -> None:
    print(f"{'retriever':<28}" + "".join(f"{m:>11}" for m in MEASURES) + "   MRR@10 vs BM25")
    for name, row in result["rows"].items():
        gap = row["vs_bm25"].get("mrr@10")
        shown = f"{gap['difference']:+.3f} [{gap['low']:+.3f}, {gap['high']:+.3f}]" if gap else ""
        print(f"{name:<28}" + "".join(f"{row['test'][m]:>11.3f}" for m in MEASURES) + f"   {shown}")


def minilm_timing(vectors: Vectors) -> dict:
    """MiniLM mean-pooled over the whole corpus again, timed, with the load average around it;
    the cache keeps the new timing, which the table's MiniLM rows then show."""
    _, timing = vectors.passages_of(encoders.load_encoder("minilm"), "mean", fresh=True)
    return {
        "passages": timing["seconds"],
        "load_average": [timing["load_before"], timing["load_after"]],
        "threads": timing["threads"],
        "date": date.today().isoformat(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default: 1)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/minibert-retrieval-cache"))
    parser.add_argument("--timing-only", action="store_true",
                        help="time MiniLM over the corpus again and update that entry only")  # fmt: skip
    parser.add_argument("--limit", type=int, default=None,
                        help="a quick check: the dev and test paragraphs and LIMIT others only")  # fmt: skip
    parser.add_argument("--figure-only", action="store_true", help="draw the figure from --out")
    parser.add_argument("--only", choices=sorted(ADDED_ROWS),
                        help="add (or redo) only this self-supervised, distilled or hard-negative row in --out's table")  # fmt: skip
    parser.add_argument("--end-to-end", action="store_true",
                        help="train (or reuse from --cache) the wiki-qa reader and measure mb.ask end to end")  # fmt: skip
    parser.add_argument("--lr", type=float, default=None,
                        help="--only ict/simcse: this rate, not chosen on dev")  # fmt: skip
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SELFSUP_SEEDS),
                        help="--only ict/simcse: the seeds reported (default: 1 2 3)")  # fmt: skip
    parser.add_argument("--course", default="course", choices=sorted(assets.COURSE_CHECKPOINTS),
                        help="the checkpoint the course rows start from; another than 'course' "
                        "writes results/retrieval_NAME.json unless --out is given")  # fmt: skip
    args = parser.parse_args(argv)
    if args.course != "course" and args.out == RESULTS:
        args.out = RESULTS.with_name(f"retrieval_{args.course.replace('-', '_')}.json")
    torch.set_num_threads(args.threads)
    if args.figure_only:
        figure(json.loads(args.out.read_text()), args.out.with_suffix(".png"))
        return
    passages = retrieval.wiki_passages()
    if args.limit is not None:
        splits = ("train", "dev", "test")
        wanted = {q.passage for s in splits for q in retrieval.wiki_queries(s, passages)}
        passages = [p for i, p in enumerate(passages) if i < args.limit or i in wanted]
    version = retrieval.corpus_version(passages)
    vectors = Vectors(args.cache, passages, version, args.course)
    if args.timing_only:  # the cache and, where there, the table take the new time
        timing = minilm_timing(vectors)
        if args.out.is_file():
            result = json.loads(args.out.read_text())
            result["minilm_corpus_encoding"] |= timing
            for name in ("MiniLM mean", "MiniLM mean, whitened"):
                result["rows"][name]["seconds"] |= {
                    k: timing[k] for k in ("passages", "load_average", "threads")
                }
            write(result, args.out)
        print(timing)
        return
    if args.end_to_end:  # the rest of the table read back from --out
        result = json.loads(args.out.read_text())
        result["end_to_end"] = end_to_end(passages, vectors, args.cache)
        result["end_to_end"]["command"] = "python benchmarks/retrieval.py --end-to-end"
        write(result, args.out)
        return
    queries = {s: retrieval.wiki_queries(s, passages) for s in ("train", "dev", "test")}
    if args.only:  # the rest of the table read back from --out
        result = json.loads(args.out.read_text())
        add_row(result, vectors, queries, args.only, args.cache, tuple(args.seeds), args.lr)
        write(result, args.out)
        figure(result, args.out.with_suffix(".png"))
        print_table(result)
        return
    result: dict = {
        "benchmark": "wiki-search: retrievers on the course's Wikipedia, test queries",
        "command": "python benchmarks/retrieval.py"
        + (f" --limit {args.limit}" if args.limit is not None else "")
        + (f" --course {args.course}" if args.course != "course" else ""),
        "course_checkpoint": args.course,
        "date": date.today().isoformat(),
        "machine": machine(args.threads),
        "load_average_before": load(),
        "corpus": {
            "passages": len(passages),
            "articles": len({p.title for p in passages}),
            "version": version,
        },  # fmt: skip
        "queries": {s: len(q) for s, q in queries.items()},
        "measures": list(MEASURES),
        "bootstrap": "2,000 paired resamples of the test queries; seeds averaged within each",
        "hybrid_rule": HYBRID_RULE,
    }
    rows, lexical = lexical_rows(passages, queries["test"], queries["dev"])
    more, dense = dense_rows(vectors, queries)
    rows |= more
    rows["course mean, contrastive on train"] = contrastive_row(vectors, queries)
    rows[DISTILL_ROW] = distill_row(vectors, queries, args.cache)
    rows["hybrid: BM25 + MiniLM mean"] = hybrid(
        lexical["BM25"], dense["MiniLM mean"], queries, "MiniLM mean"
    )
    untrained = [n for n in rows if n.startswith("course") and "training" not in rows[n]]
    mrr = {n: float(retrieval.per_query(rows[n]["ranks"])["mrr@10"].mean()) for n in untrained}
    compared(rows, course_best=max(untrained, key=mrr.get))  # the strongest pooling: the bar
    result["rows"] = rows
    print("anisotropy", flush=True)
    result["anisotropy"] = anisotropy(passages, args.course)
    result["latency"] = latency(passages, vectors, queries["test"])
    result["minilm_corpus_encoding"] = rows["MiniLM mean"]["seconds"]
    result["load_average_after"] = load()
    write(result, args.out)
    figure(result, args.out.with_suffix(".png"))
    print_table(result)


if __name__ == "__main__":
    main()
