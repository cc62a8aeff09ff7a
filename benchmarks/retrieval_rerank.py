"""Re-ranking and approximate search on the course's Wikipedia: BM25 alone against BM25's top 20
re-ranked by a cross-encoder, and faiss' approximate indexes (HNSW, IVF) against exact search.

    nice python benchmarks/retrieval_rerank.py --hybrid --seeds 1 2 3   # about 2 one-thread hours
    python benchmarks/retrieval_rerank.py --smoke             # tiny budgets; writes nothing
    python benchmarks/retrieval_rerank.py --only index   # the index section: 9 min, 1.5 cached
    python benchmarks/retrieval_rerank.py --hybrid            # the hybrid's top 20 re-ranked too
    python benchmarks/retrieval_rerank.py --steps 300 --seeds 1 2 3   # a larger budget

Re-ranking. The cross-encoder is trained by the recipe users run, `minibert finetune --model
minilm --task wiki-rerank` (recipes.finetune: each training question's paragraph against BM25's 3
best wrong ones, the evaluation kept by dev pair order), with a small budget (--steps,
--batch-size; its folder kept in --cache by its settings and read back on a rerun). Its rate is
chosen on dev as the fine-tuning grid chooses (common/restarts.py): the choosing seed (0, never
reported) trains at each of RATES, and the best dev pair order wins (recipes.choose_lr: a tie to
the lower dev loss, then the smaller rate; a best rate at the grid's edge adds the next beyond it,
twice at most); the reported seeds train at it (--lr gives a rate instead). Each training is
about 14 minutes on one thread (3 trials, then each seed and any restart), each seed's scoring of
its pairs about 8. The haystack
is every paragraph (7,396); the queries are wiki-qa's test questions (the held-out articles), each
with the paragraph it was written about. BM25 ranks every paragraph; the re-ranker
(retrieval.rerank.Reranker, the retriever 'bm25+rerank') reorders BM25's top --depth, two ways:
by the cross-encoder's log-odds alone (weight 1), and interpolated with the first stage's scores
(retrieval.rerank.interpolated: each standardised over the question's candidates, then (1 - w) *
first stage + w * cross-encoder), w chosen among WEIGHTS by MRR@10 on the dev questions for each
seed (a tie: the smaller w; w = 0 is the first stage alone, so a cross-encoder that knows nothing
cannot win it). Each pair's cross-encoder score is kept in the seed's folder (pair-scores.pt), so
the pairs BM25 and the hybrid share are read once. recall@1/5/20 and MRR@10 as
benchmarks/retrieval.py computes them (a tie counts against the relevant paragraph; one the
re-ranker did not return ranks past it); the difference is paired over the test questions: 2,000
bootstrap resamples (seeds averaged within each), 95% interval, and a sign-flip p-value. The cost
per question is the cross-encoder's wall time per pair times --depth (it reads --depth pairs for
each question).

Approximate search. MiniLM's mean-pooled vectors of three haystacks: the 7,396 paragraphs (the
index `minibert search minilm` keeps); the paragraphs and real sentences, --large texts in all
(every sentence of the course's Wikipedia articles, then sentences of the English pretraining
corpus drawn at random, each at least MIN_WORDS words and each text once; encoded by MiniLM and
kept in --cache); and a synthetic haystack of --large vectors, each added one a paragraph's
vector, drawn at random, plus Gaussian noise (NOISE per dimension: cosine about 0.7 to its
paragraph), scaled to length 1, whose clusters of near copies are harder on an approximate index
than real text. The queries are the wiki-qa
questions' MiniLM vectors. Each approximate index (retrieval.index.ApproximateIndex: HNSW at
several ef_search, IVF at several probes) is scored by its recall of the exact top 10 (faiss'
flat index) and by a query's latency: one query at a time, exact and approximate interleaved,
the median over --latency-queries, after a warm-up, on --threads threads (faiss and torch; one
query's exact search was slower on two threads than on one here, so one is the default). The
ratio exact / approximate is the speed-up; timings are of a shared machine, so ratios, not times,
are the finding. Writes benchmarks/results/retrieval_rerank.json.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import os
import platform
import random
import re
import statistics
import sys
import time
from datetime import date
from pathlib import Path

import torch
from common import restarts

import minibert
from minibert import corpora, english_corpus, paired_statistics, recipes
from minibert.recipes.sweep_recipe import Trial, choose_lr
from minibert.retrieval import corpus, measures
from minibert.retrieval.encoders import encode
from minibert.retrieval.hybrid import HYBRID_WEIGHT, Hybrid
from minibert.retrieval.index import ApproximateIndex, PassageIndex, Searcher, recall_of_exact
from minibert.retrieval.lexical import BM25
from minibert.retrieval.rerank import RERANK_DEPTH, interpolated, load_scorer

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "retrieval_rerank.json"
MEASURES = ("recall@1", "recall@5", "recall@20", "mrr@10")
TOP = 10  # the exact top k the approximate indexes are scored against
EF_SEARCH = (16, 32, 64, 128)  # HNSW's candidates while searching
PROBES = (4, 8, 16, 32, 64)  # IVF's clusters searched, of about sqrt(passages)
NOISE = 0.05  # per dimension, for the grown haystack: |noise| about 1 in 384 dimensions
LARGE = 100_000
MIN_WORDS = 4  # a sentence of the grown haystack: shorter ones (headings, "Yes.") are left out
# the cross-encoder's rates tried on dev. The grid once started at finetune's MiniLM default (5e-5)
# and had to widen twice to find its best: at 150 steps the default barely leaves the trivial level
RATES = (1e-4, 2e-4, 4e-4)
WEIGHTS = tuple(i / 20 for i in range(21))  # the cross-encoder's interpolation weights tried on dev
BUDGET = {"steps": 150, "batch_size": 16, "train_questions": None, "evaluations": 2}
SMOKE = {
    "steps": 4,
    "batch_size": 8,
    "train_questions": 16,
    "evaluations": 1,
    "limit": 16,
    "large": 20_000,
    "latency_queries": 16,
}


def load() -> float:
    """The 1-minute load average: other work on the CPU while this ran."""
    return round(os.getloadavg()[0], 2)


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
    import faiss

    return {
        "processor": name,
        "cpu_count": os.cpu_count(),
        "threads": threads,
        "torch": torch.__version__,
        "faiss": faiss.__version__,
        "python": platform.python_version(),
    }


# --- re-ranking ----------------------------------------------------------------------------------


def cross_encoder(args: argparse.Namespace, seed: int) -> tuple[Path, dict]:
    """The cross-encoder of a reported seed: its run, restarted while its dev pair order is at the
    trivial level (no better than one score for every pair; common/restarts.py: seeds 101-103 for
    seed 1), the first restart that leaves it kept. Returns its folder and what its training reported, with
    how the place was kept; a still-trivial one is marked so, and rerank_section reports no
    re-ranking by it."""
    found, kept = restarts.with_restarts(
        lambda s: trained_cross_encoder(args, s),
        lambda run: run[1]["selection"]["trivial"],
        seed,
    )
    folder, report = found
    return folder, report | {"kept": kept.as_dict()}


def chosen_rate(args: argparse.Namespace) -> dict:
    """The rate the reported seeds train at: --lr when given; otherwise each of RATES trained at
    the choosing seed (restarts.CHOOSING_SEED, never reported) and the best dev pair order kept
    (recipes.choose_lr, widening a grid whose best is at its edge). The rate, and every trial."""
    if args.lr is not None:
        return {"lr": args.lr, "chosen_on_dev": False}

    def trial(lr: float) -> Trial:
        _, kept = trained_cross_encoder(args, restarts.CHOOSING_SEED, lr)
        print(f"cross-encoder lr {lr:g}: dev pair order {kept['dev_pair_order']:.3f}", flush=True)
        return Trial(lr, kept["dev_pair_order"], kept["dev_loss"])

    swept = choose_lr(trial, RATES, measure="pair_order", widen=2)
    return {
        "lr": swept.chosen.lr,
        "chosen_on_dev": True,
        "seed": restarts.CHOOSING_SEED,
        "trials": [
            {"lr": t.lr, "dev_pair_order": t.measure, "dev_loss": t.loss}
            for t in sorted(swept.trials, key=lambda t: t.lr)
        ],
        "widened": swept.widened,
        "at_edge": swept.at_edge,
    }


def trained_cross_encoder(
    args: argparse.Namespace, seed: int, lr: float | None = None
) -> tuple[Path, dict]:
    """The folder `minibert finetune --task wiki-rerank` trains with these settings, seed and rate
    (default: args.lr), kept in the cache by them (read back when there), and what its training
    reported: its kept dev pair order and dev loss among them."""
    lr = args.lr if lr is None else lr
    settings = {
        "model": args.model,
        "task": "wiki-rerank",
        "steps": args.steps,
        "seed": seed,
        "batch_size": args.batch_size,
        "lr": lr,
        "max_length": args.max_length,
        "train_examples": args.train_questions,
        "evaluations": args.evaluations,
    }
    task = minibert.tasks.get("wiki-rerank")  # how it trains and which evaluation it keeps
    order = {"group_by_length": task.group_by_length, "selection": task.selection.name}
    key = hashlib.sha256(json.dumps(settings | order, sort_keys=True).encode()).hexdigest()[:12]
    folder = args.cache / f"wiki-rerank-{key}"
    if not (folder / "results.json").is_file():
        given = {k: v for k, v in settings.items() if v is not None}
        recipes.finetune(folder, **given, overwrite=True, threads=args.threads)
    results = json.loads((folder / "results.json").read_text())
    kept = {"seed": seed} | {k: results[k] for k in ("selection", "seconds", "train_size")}
    kept["test_pairs"] = {k: results["test"][k] for k in ("accuracy", "balanced_accuracy")}
    kept["dev_pair_order"] = results["selection"]["value"]
    history = json.loads((folder / "history.json").read_text())
    step = results["selection"]["step"]
    kept["dev_loss"] = next(
        (h["eval_loss"] for h in history if h.get("step") == step and "eval_loss" in h), math.nan
    )
    kept["options"] = {
        k: results["options"].get(k)
        for k in ("steps", "lr", "batch_size", "max_length", "group_by_length")
    }
    return folder, kept


def ranks_of_ranking(ranking: measures.Ranking, passages: int, relevant: list[int]) -> torch.Tensor:
    """(queries,) each relevant paragraph's rank: the ranking's scores, every passage it did not
    return scoring below them all (a tie counts against the relevant one, as ranks_of says)."""
    scores = torch.full((len(relevant), passages), -torch.inf, dtype=torch.float64)
    scores.scatter_(1, ranking.ids.long(), ranking.scores.double())
    return measures.ranks_of(scores, relevant)


def compared(first: torch.Tensor, second: torch.Tensor) -> dict:
    """second's measures minus first's, paired over the questions: (seeds, queries) ranks each
    (first repeated over the seeds when it has none) -> difference, 95% interval, p per measure."""
    a = measures.per_query(first.expand_as(second))
    b = measures.per_query(second)
    out = {}
    for m in MEASURES:
        diff, low, high = paired_statistics.paired_bootstrap(a[m], b[m])
        p = paired_statistics.paired_sign_flip_test(a[m], b[m])
        out[m] = {"difference": diff, "low": low, "high": high, "p": p}
    return out


def pair_scores(first, folder: Path, queries: list, depth: int) -> dict:
    """The first stage's top depth for each query and the folder's cross-encoder score of each
    (question, passage) pair (retrieval.rerank.load_scorer: the pair scorer Reranker orders by):
    ids (queries, depth) in the first stage's order, their first-stage scores and pair scores, and
    the cross-encoder's seconds per pair. Every pair's score is kept in the folder
    (pair-scores.pt) and read back, so a pair two first stages share is read once."""
    texts = [q.text for q in queries]
    found = first.search(texts, min(depth, len(first.passages)))  # (queries, depth)
    path = folder / "pair-scores.pt"
    memo = torch.load(path) if path.is_file() else {"scores": {}, "seconds": 0.0, "pairs": 0}
    wanted = [(q, int(i)) for q, row in zip(texts, found.ids) for i in row]
    new = [pair for pair in dict.fromkeys(wanted) if pair not in memo["scores"]]
    if new:
        scorer = load_scorer(folder)
        start = time.perf_counter()
        scores = scorer.scores([(q, first.passages[i].text) for q, i in new], progress=True)
        memo["seconds"] += time.perf_counter() - start
        memo["pairs"] += len(new)
        memo["scores"].update(zip(new, scores.tolist()))
        torch.save(memo, path)
    pair = torch.tensor(
        [[memo["scores"][q, int(i)] for i in row] for q, row in zip(texts, found.ids)]
    )
    return {
        "ids": found.ids,
        "first": found.scores,
        "pair": pair,
        "seconds_per_pair": memo["seconds"] / memo["pairs"],
    }


def ranks_at(kept: dict, weight: float, passages: int, relevant: list[int]) -> torch.Tensor:
    """(queries,) each relevant paragraph's rank when the first stage's top depth is ordered by
    ``interpolated`` at weight (1: the cross-encoder alone; a tie keeps the first stage's order)."""
    scores = interpolated(kept["first"], kept["pair"], weight)  # (queries, depth)
    order = torch.sort(scores, dim=1, descending=True, stable=True).indices
    ranking = measures.Ranking(kept["ids"].gather(1, order), scores.gather(1, order))
    return ranks_of_ranking(ranking, passages, relevant)


def chosen_weight(kept: dict, passages: int, relevant: list[int]) -> tuple[float, dict]:
    """The interpolation weight with the best dev MRR@10 among WEIGHTS (a tie: the smaller, the
    nearer the first stage alone), and the dev MRR@10 at each."""
    by_weight = {
        w: float(measures.per_query(ranks_at(kept, w, passages, relevant)[None])["mrr@10"].mean())
        for w in WEIGHTS
    }
    best = max(by_weight.values())
    return min(w for w, v in by_weight.items() if v == best), by_weight


def reranked_rows(
    first, name: str, folders: list[Path], queries: list, dev: list, depth: int
) -> dict:
    """The first stage alone, re-ranked by each seed's cross-encoder, and interpolated with it at
    the weight the dev questions chose for that seed: ranks, measures, the paired difference and
    the re-ranking's seconds per question."""
    n, relevant = len(first.passages), [q.passage for q in queries]
    alone = ranks_of_ranking(first.search([q.text for q in queries], n), n, relevant)[None]
    if not folders:  # every cross-encoder trivial: the first stage alone
        return {name: {"test": mean_measures(alone), "ranks": alone.tolist()}}
    rows = {name: {"test": mean_measures(alone), "ranks": alone.tolist()}}
    kept = [pair_scores(first, folder, queries, depth) for folder in folders]
    ms = [1000 * k["seconds_per_pair"] * depth for k in kept]  # a question's depth pairs
    plain = torch.stack([ranks_at(k, 1.0, n, relevant) for k in kept])  # (seeds, queries)
    rows[f"{name} + re-rank (top {depth})"] = {
        "test": mean_measures(plain),
        "vs_first_stage": compared(alone, plain),
        "ms_per_question": ms,
        "ranks": plain.tolist(),
    }
    dev_relevant = [q.passage for q in dev]
    weights, dev_mrr, mixed = [], [], []
    for folder, scores in zip(folders, kept):
        weight, by_weight = chosen_weight(pair_scores(first, folder, dev, depth), n, dev_relevant)
        weights.append(weight)
        dev_mrr.append({f"{w:g}": round(v, 4) for w, v in by_weight.items()})
        mixed.append(ranks_at(scores, weight, n, relevant))
    mixed = torch.stack(mixed)
    rows[f"{name} + interpolated re-rank (top {depth})"] = {
        "test": mean_measures(mixed),
        "vs_first_stage": compared(alone, mixed),
        "weights": weights,
        "dev_mrr@10_by_weight": dev_mrr,
        "ms_per_question": ms,
        "ranks": mixed.tolist(),
    }
    return rows


def mean_measures(ranks: torch.Tensor) -> dict:
    """Each measure's mean over seeds and queries, of (seeds, queries) ranks."""
    return {m: float(v.mean()) for m, v in measures.per_query(ranks).items()}


def rerank_section(args: argparse.Namespace, passages: list, minilm) -> dict:
    """The cross-encoder trained per seed, then BM25 (and with --hybrid the hybrid) alone and
    re-ranked, on the test questions."""
    queries = corpus.wiki_queries("test", passages)[: args.limit]
    dev = corpus.wiki_queries("dev", passages)[: args.limit]
    rate = chosen_rate(args)
    args = argparse.Namespace(**vars(args) | {"lr": rate["lr"]})  # the reported seeds' rate
    trained = [cross_encoder(args, seed) for seed in args.seeds]
    trivial = [kept["seed"] for _, kept in trained if kept["selection"]["trivial"]]
    folders = [folder for folder, kept in trained if not kept["selection"]["trivial"]]
    for seed in trivial:  # no better than one score for every pair: its order is noise
        print(
            f"seed {seed}'s cross-encoder stayed at the trivial level on dev after "
            f"{restarts.RESTARTS} restarts: its re-ranking is not reported (a larger --steps or "
            "--lr may train it)",
            flush=True,
        )
    bm25 = BM25.of(passages)
    rows = reranked_rows(bm25, "BM25", folders, queries, dev, args.depth)
    if args.hybrid:
        hybrid = Hybrid(bm25, minilm(), HYBRID_WEIGHT)
        rows |= reranked_rows(
            hybrid, "hybrid: BM25 + MiniLM mean", folders, queries, dev, args.depth
        )
    return {
        "trivial_seeds_not_reported": trivial,
        "queries": len(queries),
        "depth": args.depth,
        "cross_encoder": {
            "command": f"minibert finetune --model {args.model} --task wiki-rerank",
            "seeds": list(args.seeds),
            "rate": rate,
            "runs": [kept for _, kept in trained],
        },
        "rows": rows,
    }


# --- approximate search --------------------------------------------------------------------------


def grown(vectors: torch.Tensor, size: int, seed: int = 0) -> torch.Tensor:
    """(size, hidden) unit vectors: vectors, then noisy copies of randomly drawn ones (NOISE per
    dimension), scaled to length 1."""
    if size < len(vectors):
        raise ValueError(f"--large must be at least the {len(vectors):,} paragraphs, got {size:,}")
    g = torch.Generator().manual_seed(seed)
    drawn = vectors[torch.randint(len(vectors), (size - len(vectors),), generator=g)]
    noisy = drawn + NOISE * torch.randn(drawn.shape, generator=g)
    return torch.nn.functional.normalize(torch.cat([vectors, noisy]), dim=-1)


def grown_texts(
    paragraphs: list[str], wikipedia: list[str], more: list[str], size: int, seed: int = 0
) -> tuple[list[str], dict[str, int]]:
    """The size - len(paragraphs) real texts that grow the haystack to size: the wikipedia
    sentences in order, then the more sentences drawn at random (seed), each at least MIN_WORDS
    words, none a paragraph or a text already taken; and how many came from each."""
    wanted = size - len(paragraphs)
    if wanted < 0:
        raise ValueError(
            f"--large must be at least the {len(paragraphs):,} paragraphs, got {size:,}"
        )
    seen = set(paragraphs)

    def taken(candidates: list[str], room: int) -> list[str]:
        out = []
        for text in candidates:
            if len(out) == room:
                break
            if len(text.split()) >= MIN_WORDS and text not in seen:
                seen.add(text)
                out.append(text)
        return out

    first = taken(wikipedia, wanted)
    drawn = list(more)
    random.Random(seed).shuffle(drawn)
    second = taken(drawn, wanted - len(first))
    if len(first) + len(second) < wanted:
        raise ValueError(
            f"only {len(first) + len(second):,} sentences of at least {MIN_WORDS} words beside "
            f"the paragraphs; --large {size:,} needs {wanted:,}"
        )
    return first + second, {
        "wikipedia sentences": len(first),
        "english corpus sentences": len(second),
    }


def sentences_haystack(
    searcher, passages: list, size: int, cache: Path
) -> tuple[torch.Tensor, dict]:
    """(size, hidden) unit vectors: the paragraphs' and real sentences' (grown_texts: every
    sentence of the course's Wikipedia, then the English pretraining corpus's training
    documents'), encoded by the searcher's encoder and kept in cache; and what it holds."""
    wikipedia = [s for a in corpora.wikipedia_articles("all") for s in a.sentences]
    more = [s for d in english_corpus.documents("train") for s in d.sentences]
    texts, counts = grown_texts([p.text for p in passages], wikipedia, more, size)
    print(f"encoding {len(texts):,} sentences with MiniLM (kept in {cache})", flush=True)
    start = time.perf_counter()
    added = encode(searcher.encoder, texts, "mean", cache=cache, cache_name="grown-sentences")
    vectors = torch.nn.functional.normalize(torch.cat([searcher.index.vectors, added]), dim=-1)
    about = {
        "texts": {"paragraphs": len(passages)} | counts,
        "min_words": MIN_WORDS,
        "encoding_seconds": round(time.perf_counter() - start, 1),
    }
    return vectors, about


def timed(search, queries: torch.Tensor) -> list[float]:
    """Milliseconds of each one-query search, after a warm-up."""
    search(queries[:1])
    times = []
    for row in range(len(queries)):
        start = time.perf_counter()
        search(queries[row : row + 1])
        times.append(1000 * (time.perf_counter() - start))
    return times


def approximate_rows(exact: PassageIndex, queries: torch.Tensor, latency: int) -> dict:
    """Exact search and each approximate setting: recall of the exact top 10, build seconds, and
    a query's median milliseconds with its exact partner's, interleaved setting by setting."""
    truth = exact.search(queries, TOP, backend="faiss")[1]
    flat = lambda q: exact.search(q, TOP, backend="faiss")  # noqa: E731
    out = {"exact_ms_median": statistics.median(timed(flat, queries[:latency]))}
    for kind, knob, grid in (("hnsw", "ef_search", EF_SEARCH), ("ivf", "probes", PROBES)):
        start = time.perf_counter()
        index = ApproximateIndex(exact.vectors, kind)
        built, rows = time.perf_counter() - start, []
        for value in grid:
            if kind == "ivf" and value > index.lists:
                continue
            setattr(index, knob, value)
            found = index.search(queries, TOP)[1]
            fast = statistics.median(timed(lambda q: index.search(q, TOP), queries[:latency]))  # noqa: B023
            slow = statistics.median(timed(flat, queries[:latency]))
            rows.append(
                {
                    knob: value,
                    "recall_of_exact": recall_of_exact(found, truth),
                    "ms_median": fast,
                    "exact_ms_median": slow,
                    "speedup": slow / fast,
                }
            )
            print(
                f"  {kind} {knob} {value}: recall {rows[-1]['recall_of_exact']:.3f}, "
                f"{fast:.3f} ms against {slow:.3f} ms exact",
                flush=True,
            )
        out[kind] = {"build_seconds": built, "lists": index.lists, "settings": rows}
    return out


def index_section(args: argparse.Namespace, passages: list, minilm) -> dict:
    """The approximate indexes against the exact one, over the paragraphs and the grown haystack."""
    import faiss

    faiss.omp_set_num_threads(args.threads)
    searcher = minilm()
    texts = [q.text for s in ("train", "dev", "test") for q in corpus.wiki_queries(s, passages)]
    queries = encode(searcher.encoder, texts, "mean")  # (questions, 384)
    sentences, about = sentences_haystack(searcher, passages, args.large, args.cache)
    haystacks = {
        "paragraphs": (searcher.index.vectors, {"what": "the course's Wikipedia paragraphs"}),
        "sentences": (sentences, {"what": "the paragraphs and real sentences"} | about),
        "grown": (
            grown(searcher.index.vectors, args.large),
            {
                "what": "synthetic: the paragraphs and noisy copies of them",
                "noise_per_dimension": NOISE,
            },
        ),
    }
    out = {
        "k": TOP,
        "queries": len(texts),
        "latency_queries": args.latency_queries,
        "noise_per_dimension": NOISE,
        "haystacks": {},
    }
    for name, (vectors, described) in haystacks.items():
        print(f"{name}: {len(vectors):,} vectors", flush=True)
        exact = PassageIndex.of(vectors, "benchmark", "minilm", "mean")
        rows = approximate_rows(exact, queries, args.latency_queries)
        out["haystacks"][name] = {
            "vectors": len(vectors), "hidden": vectors.shape[1], **described, **rows
        }  # fmt: skip
    return out


# --- the run -------------------------------------------------------------------------------------


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/minibert-rerank-cache"))
    parser.add_argument("--threads", type=int, default=1, help="torch and faiss threads")
    parser.add_argument(
        "--only", choices=("rerank", "index"), help="one section; the other read back from --out"
    )
    parser.add_argument("--smoke", action="store_true", help="tiny budgets; writes nothing")
    parser.add_argument(
        "--model", default="minilm", help="the cross-encoder's start (finetune's --model)"
    )
    parser.add_argument("--steps", type=int, default=BUDGET["steps"])
    parser.add_argument("--batch-size", type=int, default=BUDGET["batch_size"])
    parser.add_argument(
        "--lr", type=float, default=None, help="this rate (default: chosen on dev among RATES)"
    )
    parser.add_argument(
        "--max-length", type=int, default=None, help="pair pieces (default: the task's)"
    )
    parser.add_argument("--train-questions", type=int, default=BUDGET["train_questions"])
    parser.add_argument("--evaluations", type=int, default=BUDGET["evaluations"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument(
        "--depth", type=int, default=RERANK_DEPTH, help="the first stage's passages re-ranked"
    )
    parser.add_argument(
        "--hybrid", action="store_true", help="the hybrid's top depth re-ranked too"
    )
    parser.add_argument("--limit", type=int, default=None, help="the first LIMIT test questions")
    parser.add_argument("--large", type=int, default=LARGE, help="vectors of the grown haystack")
    parser.add_argument("--latency-queries", type=int, default=256)
    args = parser.parse_args(argv)
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    return args


def main(argv: list[str] | None = None) -> None:
    args = arguments(argv)
    torch.set_num_threads(args.threads)
    started, before = time.perf_counter(), load()
    passages = corpus.wiki_passages()
    minilm = functools.cache(lambda: Searcher("minilm", "mean", passages, quiet=False))
    result = json.loads(args.out.read_text()) if args.only and args.out.is_file() else {}
    given = sys.argv[1:] if argv is None else argv
    command = "python benchmarks/retrieval_rerank.py " + " ".join(given)
    if args.only != "index":
        result["rerank"] = rerank_section(args, passages, minilm) | {"command": command.strip()}
        result.pop("rerank_not_reported", None)  # an earlier run's note, now measured
    if args.only != "rerank":
        result["index"] = index_section(args, passages, minilm) | {"command": command.strip()}
    result |= {
        "what": "BM25 (and with --hybrid the hybrid) alone against its top 20 re-ranked by a "
        "cross-encoder (MiniLM fine-tuned by minibert finetune --task wiki-rerank), by its "
        "log-odds alone and interpolated with the first stage's scores at the weight the dev "
        "questions chose, recall@1/5/20 and MRR@10 on the test "
        "questions with paired 95% bootstrap intervals of the difference; and faiss' "
        "approximate indexes (HNSW, IVF) against exact search: recall of the exact top 10 and a "
        "query's median latency, over the 7,396 paragraphs, the paragraphs and real sentences "
        f"({args.large:,} texts), and a synthetic haystack of {args.large:,} (the paragraphs and "
        "noisy copies of them)",
        "date": date.today().isoformat(),
        "machine": machine(args.threads),
        "minibert": minibert.__version__,
        "corpus": {"passages": len(passages), "version": corpus.corpus_version(passages)},
        "load_average": [before, load()],
        "seconds": round(time.perf_counter() - started, 1),
    }
    for name, row in result.get("rerank", {}).get("rows", {}).items():
        gap = row.get("vs_first_stage", {}).get("mrr@10")
        shown = f"  {gap['difference']:+.3f} [{gap['low']:+.3f}, {gap['high']:+.3f}]" if gap else ""
        print(f"{name:<40}" + "".join(f"{row['test'][m]:>8.3f}" for m in MEASURES) + shown)
    if not args.smoke:
        write(result, args.out)
        print(f"wrote {args.out}")


def write(result: dict, out: Path) -> None:
    """The results as indented JSON, each list of ranks on one line."""
    text = json.dumps(result, indent=1)
    text = re.sub(r"\[\s+(\d[\d,\s]*?)\s+\]", lambda m: "[" + " ".join(m[1].split()) + "]", text)
    out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
