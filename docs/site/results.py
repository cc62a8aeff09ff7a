"""The site's results page, generated from benchmarks/results/*.json when the site is built.

Every JSON file there gets one section: what was measured, on what machine, the command that
reproduces it, its figures (the PNGs named after it) and its numbers. Nothing on the page is typed
by hand: change a JSON file and the next build shows the new numbers.

To add a section for a new results file, write one function that takes the file's parsed JSON and
returns a ``Section``, and add it to ``SECTIONS`` under the file's name. A file without an entry
still appears (its numbers listed as they are, under a warning), and a test fails until it has one.

    python docs/site/results.py > /tmp/results.md    # the page's Markdown, to read it
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
FIGURES = "results"  # the folder beside the page that holds the figures


@dataclass(frozen=True)
class Section:
    """One results file, written for a reader: everything but the figures, which are found by name."""

    title: str
    measured: str  # what was measured, in a sentence or two
    command: str  # the command that reproduces it
    numbers: str  # Markdown: tables or sentences made from the JSON
    machine: str = ""  # where it ran; empty: from the file's "machine" (and "date")
    figures: tuple[str, ...] = ()  # more PNGs than the one named after the file


# --- formatting --------------------------------------------------------------------------------


def pct(x: float, digits: int = 1) -> str:
    """0.2581 -> '25.8%'."""
    return f"{100 * x:.{digits}f}%"


def num(x: float, digits: int = 3) -> str:
    return f"{x:,.{digits}f}"


def signed_interval(d: dict, key: str = "difference", scale: float = 1, digits: int = 3) -> str:
    """A paired difference with its 95% interval: '+0.105 [+0.098, +0.112]'."""
    low, high, diff = (scale * d[k] for k in ("low", "high", key))
    return f"{diff:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"


def p_value(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.2f}"


def table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def machine_of(data: dict) -> str:
    """The file's "machine" (a string, or a dict of facts) and its "date", in one line."""
    machine = data.get("machine", "")
    if isinstance(machine, dict):
        names = {"processor": "{}", "cpus": "{} CPUs", "cpu_count": "{} CPUs", "torch_threads": "{} torch threads",
                 "threads": "{} threads", "memory_gb": "{} GB", "python": "Python {}",
                 "torch": "torch {}", "transformers": "transformers {}", "tokenizers": "tokenizers {}"}  # fmt: skip
        machine = ", ".join(
            names.get(key, key + " {}").format(value)
            for key, value in machine.items()
            if value and key != "platform"
        )
    date = data.get("date")
    return f"{machine}; {date}" if machine and date else machine or date or "not recorded"


def sizes_of(runs: dict) -> list[str]:
    """Training sizes in the order a reader expects: 64, 256, 1024, ..., all."""
    return sorted(runs, key=lambda s: (s == "all", float(s) if s != "all" else 0))


# --- one function per results file ------------------------------------------------------------


def attention_speed(data: dict) -> Section:
    s = data["settings"]
    rows = [[r["level"], r["seq"], r["mode"], num(r["explicit_ms"], 1), num(r["fused_ms"], 1),
             f"{r['ratio']:.2f}x"] for r in data["results"]]  # fmt: skip
    return Section(
        "Attention: explicit vs fused",
        f"The explicit attention that returns its weights (scores, mask, softmax, @ V) against "
        f"PyTorch's fused `scaled_dot_product_attention`, batch {s['batch']}, {s['heads']} heads "
        f"of {s['head_dim']}, {s['dtype']}: the bare function (core) and the whole "
        "`MultiHeadSelfAttention` module. Medians; a ratio above 1 means the fused path is faster.",
        "python benchmarks/attention_speed.py",
        table(
            ["level", "sequence", "pass", "explicit (ms)", "fused (ms)", "explicit / fused"], rows
        ),
    )


def compat(data: dict) -> Section:
    rows = []
    for name, run in sorted(data["runs"].items(), key=lambda kv: kv[1].get("python", kv[0])):
        if run.get("setup") == "failed":
            rows.append([name, "set-up failed", "", ""])
            continue
        unit = ", ".join(f"{n} {k}" for k, n in run.get("unit", {}).items())
        rows.append([run["python"], run["torch"], unit, f"{run['environment_bytes'] / 1e9:.1f} GB"])
    return Section(
        "Pythons and torch builds",
        "The README's set-up and `make test` in a fresh environment for each Python on the "
        "machine (and the oldest torch the course supports): the unit tests and every notebook "
        "under nbval. The [install page](install.md) has the whole table and what it means.",
        "make compat  (or: python benchmarks/compat.py --pythons python3.12)",
        table(["Python", "torch", "unit tests", "environment"], rows),
    )


def distributed_throughput(data: dict) -> Section:
    r = data["recipe"]
    rows = [[run["processes"], run["threads_each"], run["seconds"], run["sequences_per_second"],
             run["final_train_loss"]] for run in data["runs"]]  # fmt: skip
    return Section(
        "Several processes (torchrun, gloo)",
        f"Pretraining `{r['preset']}` for {r['steps']} steps with a global batch of "
        f"{r['batch_size']}, in one process or in several under torchrun (gloo). On one machine's "
        "cores threads already share the work, so this shows that the multi-process path is "
        "correct and cheap (every run ends at the same loss), not that it is faster. Equality "
        "with one big batch is tested in `tests/test_distributed.py`.",
        "python benchmarks/distributed_throughput.py",
        table(["processes", "threads each", "seconds", "sequences/s", "final training loss"], rows),
    )


def explorer_browser(data: dict) -> Section:
    clicks = data["seconds_click_to_new_image"]
    rows = [
        [what, f"{seconds:.2f}"] for what, seconds in clicks.items() if not isinstance(seconds, str)
    ]
    notes = [text.replace("\n", "; ") for text in clicks.values() if isinstance(text, str)]
    return Section(
        "The attention explorer in a browser",
        "Lesson 3's explorer on MiniLM, in JupyterLab in headless Chromium: seconds from a click "
        "to the new image on the page, for a sentence pair and for a whole held-out article."
        + (f" The long text: {notes[0]}." if notes else ""),
        "python benchmarks/explorer_browser.py  (needs chromium and playwright)",
        table(["view", "seconds, click to image"], rows),
    )


def explorer_speed(data: dict) -> Section:
    rows = [[r["text"], r["tokens"], r["view"], r["head"], f"{r['seconds']:.2f}"]
            for r in data["redraw"]]  # fmt: skip
    old = "; ".join(
        f"{name}: {seconds:.2f} s" for name, seconds in data["labelled_figures"].items()
    )
    return Section(
        "The attention explorer on the server",
        f"How long each view of lesson 3's explorer takes to draw on MiniLM (6 layers x 12 heads), "
        f"for a sentence pair and for a held-out article shown {data['window']} tokens at a time. "
        f"For comparison, the figures drawn with one Axes per head: {old}.",
        "python benchmarks/explorer_speed.py",
        table(["text", "tokens", "view", "head", "seconds"], rows),
    )


def finetune_defaults(data: dict) -> Section:
    rows = [[r["task"], r["size"], r["model"], f"{r['headline']} {num(r['test'])}",
             num(r["trivial_level"]), "yes" if r["trivial"] else "no", r["steps"],
             num(r["protocol"]) if r.get("protocol") is not None else "-"]
            for r in data["runs"]]  # fmt: skip
    return Section(
        "`minibert finetune` with its defaults",
        " ".join(data["what"].split()) + f" Every run trains at least {data['min_steps']} steps.",
        "python benchmarks/finetune_defaults.py  (--report prints the table)",
        table(
            [
                "task",
                "labelled items",
                "model",
                "test",
                "trivial level",
                "still trivial",
                "steps",
                "benchmark protocol",
            ],
            rows,
        ),
    )


def _mean_sd(values: list[float], digits: int = 3) -> str:
    if len(values) < 2:
        return num(values[0], digits)
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def _restart_note(data: dict) -> str:
    """How many reported runs were restarted, which cells still hold a trivial run, and the tasks
    whose runs predate their data."""
    r = data.get("restarts")
    if not r:
        return ""
    still = r["still_trivial_after_restarts"]
    note = (
        f" ({r['restarted']} of {r['reported']} reported runs restarted, "
        f"{r['left_the_trivial_level']} of them off the trivial level; still at it after every "
        f"restart: {', '.join(still) or 'none'}; with restarts not run yet: "
        f"{len(r['trivial_restarts_not_run'])} cells)"
    )
    stale = ", ".join(sorted(data.get("stale", {})))
    return note + (f"; stale, their data rebuilt since the runs: {stale}" if stale else "")


def finetuning_shapes(data: dict) -> Section:
    parts = []
    for task, models in data["table"].items():
        percent = task == "wiki-qa"  # SQuAD's F1 is a percentage already
        fmt = (lambda x: f"{x:.1f}") if percent else (lambda x: f"{x:.3f}")
        baselines = ", ".join(f"{name} {fmt(score)}" for name, score in models["baselines"].items())
        sizes = sizes_of({s for at in list(models.values())[1:] for s in at})
        rows = [[model] + [f"{fmt(at[s]['mean'])} ± {fmt(at[s]['std'])}" if s in at else "-"
                           for s in sizes]
                for model, at in models.items() if model != "baselines"]  # fmt: skip
        parts.append(f"### {task}\n\nBaselines: {baselines}.\n\n" + table(["model"] + sizes, rows))
        intervals = data["intervals"].get(task, {})
        pairs = list(dict.fromkeys(pair for at in intervals.values() for pair in at))
        if pairs:
            isizes = sizes_of(intervals)
            scale, digits = (1, 1) if percent else (1, 3)
            rows = [[pair] + [signed_interval(intervals[s][pair], scale=scale, digits=digits)
                              if pair in intervals[s] else "-" for s in isizes]
                    for pair in pairs]  # fmt: skip
            parts.append(
                "Paired differences on the same test items, 95% bootstrap interval "
                "(seeds averaged):\n\n" + table(["difference"] + isizes, rows)
            )
    by_size = data.get("baselines_by_size", {})
    if by_size:
        rows = [[task, size, name, num(statistics.mean(values))]
                for task, at in by_size.items() for size, rules in at.items()
                for name, values in rules.items()]  # fmt: skip
        parts.append(
            "### Rules built from the same labelled items\n\nThe mean over the same "
            "subsets the models saw:\n\n" + table(["task", "items", "rule", "test"], rows)
        )
    return Section(
        "Task shapes: a label per word, a pair, a span, a label per text",
        "Each pretrained model against random weights of its own size and vocabulary, on every "
        "shape of BERT's Figure 4, in Wikipedia and in reviews: mean ± sample standard deviation "
        "over seeds 1 and 2 at the learning rate the seed-0 sweep chose on dev (the task's "
        "balanced measure, widened at the grid's edge; seed 0 chooses and is not reported), by "
        "number of labelled training items. A reported run that stayed at the trivial level on "
        "dev was restarted with a new seed, up to 3 times, the first restart that left it kept"
        + _restart_note(data)
        + ". `course-english`: the course's recipe on 5.5M words of English with its own "
        "vocabulary, beside `english-scratch` (random weights with that vocabulary); "
        "`course-english - course` sets it against the checkpoint that read 0.39M words, on the "
        "same test texts. `-probe` rows: frozen features with a linear layer; `-mean` rows: fine-tuned on the "
        "mean of the last hidden states instead of the pooled [CLS]; `-cls` rows: fine-tuned on "
        "the last hidden state of [CLS] without the pooler. Scores: span F1 (wiki-mentions), "
        "accuracy (wiki-qnli, rotten-tomatoes), F1 of capitalised words (review-capitalisation), "
        "SQuAD F1 (wiki-qa), F1 of capitalised words in Wikipedia's held-out articles "
        "(capitalisation: lesson 8's first example).",
        "python benchmarks/finetuning_shapes.py  (--report prints the table and both intervals "
        "from the stored runs)",
        "\n\n".join(parts),
    )


def model_throughput(data: dict) -> Section:
    c = data["config"]
    rows = [[mode, f"{m['tokens_per_second']['minibert']:,.0f}",
             f"{m['tokens_per_second']['transformers']:,.0f}",
             f"{m['ratio_minibert_over_transformers']:.2f}x"] for mode, m in data["modes"].items()]  # fmt: skip
    return Section(
        "BertModel against transformers",
        f"minibert's `BertModel` and Hugging Face's (sdpa attention) on the same weights and "
        f"inputs: {c['layers']} layers, {c['hidden']} hidden, {c['heads']} heads, batch "
        f"{data['batch']} x {data['seq']} tokens, median of {data['reps']} after {data['warmup']} "
        f"warm-up. Largest difference between their outputs: {data['max_abs_output_difference']}. "
        "Ratios matter here, not times: the CPU was shared.",
        "python benchmarks/model_throughput.py",
        table(
            ["mode", "minibert tokens/s", "transformers tokens/s", "minibert / transformers"], rows
        ),
    )


def notebook_resources(data: dict) -> Section:
    rows = [[name, f"{n['peak_rss_mb']:,} MB", f"{n['cpu_s']:.0f}", f"{n['wall_s']:.0f}"]
            for name, n in data["notebooks"].items()]  # fmt: skip
    return Section(
        "What a class asks of a shared server",
        "Each notebook alone in a fresh kernel: the peak resident memory of the kernel and its "
        "children, and their CPU seconds. The teacher's guide turns these into students per "
        "core and per GB.",
        "python benchmarks/notebook_resources.py  (--table prints the guide's table)",
        table(["notebook", "peak memory", "CPU seconds", "wall seconds"], rows),
    )


def notebook_times(data: dict) -> Section:
    rows = [[name, f"{seconds:.0f}"] for name, seconds in data["seconds"].items()]
    return Section(
        "How long each lesson runs",
        "Each notebook top to bottom in a fresh kernel: the course map's minutes to run.",
        "python benchmarks/notebook_times.py",
        table(["notebook", "seconds"], rows),
    )


def _nsp_run(name: str, data: dict) -> list[object]:
    last, args = data["log"][-1], data["args"]
    best = max(entry["nsp_accuracy"] for entry in data["log"])
    sentences = data.get("nsp_measures", {}).get("sentences", {}).get("model")
    return [name, args["steps"], args["lr"], pct(last["nsp_accuracy"]), pct(best),
            pct(sentences) if sentences is not None else "-", pct(last["mask_accuracy"])]  # fmt: skip


NSP_COLUMNS = ["run", "steps", "lr", "held-out NSP", "best NSP", "single-sentence pairs",
               "[MASK] top-1"]  # fmt: skip


def nsp_continuation(data: dict) -> Section:
    return Section(
        "Can NSP catch the topic rule? (3,000 steps)",
        "The first checkpoint's (`course`, 0.39M words) pretraining continued with new sentence "
        "pairs every epoch and "
        "dropout 0.1, measured on the held-out pairs every 250 steps. The figure draws this run "
        "and the two below beside the TF-IDF topic rule.",
        "python benchmarks/nsp_continuation.py --lr 3e-4 --dropout 0.1 --steps 3000",
        table(NSP_COLUMNS, [_nsp_run("new pairs, dropout 0.1", data)]),
        machine="x86_64, {} thread; {}".format(
            data["args"]["threads"], " ".join(re.findall(r"\d{4}-\d\d-\d\d", data.get("note", "")))
        ),
    )


def _nsp_rules(data: dict) -> str:
    m = data["nsp_measures"]
    return (
        f"TF-IDF topic rule: {pct(m['segments']['tfidf_topic'])} on the held-out pairs "
        f"({m['segments']['pairs']:,}), {pct(m['sentences']['tfidf_topic'])} on single-sentence "
        f"pairs ({m['sentences']['pairs']:,}); majority {pct(m['segments']['majority'])}."
    )


def nsp_continuation_6000(data: dict) -> Section:
    return Section(
        "Can NSP catch the topic rule? (6,000 steps, decayed)",
        "As above, for 6,000 steps with the learning rate decayed linearly to 0; at the end NSP "
        "is also measured on single-sentence pairs, beside the TF-IDF topic rule.",
        "python benchmarks/nsp_continuation.py --steps 6000 --decay --save runs/nsp_continued "
        "--result benchmarks/results/nsp_continuation_6000.json",
        table(NSP_COLUMNS, [_nsp_run("6,000 steps, decayed", data)]) + "\n\n" + _nsp_rules(data),
        machine=f"x86_64, {data['args']['threads']} threads",
    )


def nsp_continuation_weighted(data: dict) -> Section:
    return Section(
        "Can NSP catch the topic rule? (NSP weighted 3x)",
        f"As above, with the NSP loss weighted {data['args']['nsp_weight']}x and a share of "
        f"{data['args']['short_seq_prob']} of the examples cut short, nearer the single-sentence "
        "pairs.",
        "python benchmarks/nsp_continuation.py --steps 4000 --decay --nsp-weight 3 "
        "--short-seq-prob 0.5 --result benchmarks/results/nsp_continuation_weighted.json",
        table(NSP_COLUMNS, [_nsp_run("NSP weighted", data)]) + "\n\n" + _nsp_rules(data),
        machine=f"x86_64, {data['args']['threads']} thread",
    )


def pretraining_candidates(data: dict) -> Section:
    rows = [[model, f"{r['mask_positions']:,}", pct(r["model"]["top1"]), pct(r["model"]["top5"]),
             pct(r["ngram_table"]), pct(r["most_frequent"])]
            for model, r in data["mlm_heldout_reviews"].items()]  # fmt: skip
    return Section(
        "Starting points for reviews: [MASK] on held-out review text",
        "Each candidate model's top-1 and top-5 accuracy at one fixed set of [MASK] positions in "
        "the held-out movies' review text, beside the n-gram table and the most frequent token of "
        "its own vocabulary at the same positions. `self` is pretrained on the review text only, "
        "with its own vocabulary (hence its own positions).",
        "python benchmarks/pretraining_candidates.py --candidate self=runs/self "
        "--models course course-reviews self",
        table(
            ["model", "[MASK] positions", "top-1", "top-5", "n-gram table", "most frequent"], rows
        ),
    )


def pretraining_recipes(data: dict) -> Section:
    rows = []
    for name, c in data["candidates"].items():
        last = c["curve"][-1]
        rows.append(
            [
                name,
                c["what"],
                last["step"],
                last["seconds"],
                pct(last["mask_accuracy"]),
                pct(last["mask_top5"]),
            ]
        )
    b, s = data["baselines_at_mask"], data["schedule"]
    return Section(
        "Escaping the MLM plateau",
        f"The first {data['stop_after']:,} steps of a {s['steps']:,}-step `{s['preset']}` "
        f"schedule (lr {s['lr']}, dropout {s['dropout']}): held-out top-1 accuracy at the [MASK] "
        f"positions every {s['eval_every']} steps. At the same positions the n-gram table scores "
        f"{pct(b['ngram'])} and always the most frequent token {pct(b['most_frequent'])}.",
        "python benchmarks/pretraining_recipes.py",
        table(["recipe", "what", "steps", "seconds", "[MASK] top-1", "top-5"], rows),
    )


def english_corpus(data: dict) -> Section:
    steps = list(data["steps"])
    rows = [
        [name]
        + [f"{data['steps'][step][name]['words']:,}" for step in steps]
        + [f"{data[part]['words'][name]:,}" for part in ("train", "heldout")]
        for name in data["sources"]
    ]
    total = sum(data["train"]["words"].values())
    return Section(
        "The pretraining corpus",
        f"Words per source of `minibert.english_corpus` after each cleaning step (exact duplicate "
        f"paragraphs, text sharing a {data['ngram']}-word sequence with a held-out article or a "
        f"review snippet, near duplicates across sources), then the training text "
        f"({total:,} words in {data['train']['documents']:,} documents) and each source's "
        "held-out slice. The card in data/english_corpus.md says the same.",
        "python benchmarks/english_corpus_card.py",
        table(["source", *steps, "training", "held out"], rows),
    )


def english_recipes(data: dict) -> Section:
    slices = list(data["ngram"])
    rows = [["n-gram table (same words)", "", *[pct(data["ngram"][x]) for x in slices]]]
    for name, c in data["candidates"].items():
        rows.append([name, f"{c['seconds']:,}", *[pct(c["accuracy"][x]) for x in slices]])
    gaps = [
        [name, x, f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"]
        for name, c in data["candidates"].items()
        for x, (d, lo, hi) in c.get("minus_base", {}).items()
    ]
    s = data["schedule"]
    return Section(
        "A recipe for the pretraining corpus",
        f"Candidates for the course checkpoint on `--corpus english`, each the first "
        f"{data['stop_after']:,} steps of a {s['steps']:,}-step `{s['preset']}` schedule (lr "
        f"{s['lr']}, {s['warmup_steps']:,} warm-up steps, neighbour guidance for "
        f"{s['neighbour_steps']:,}), one vocabulary for all, one change each against the base. "
        "Top-1 accuracy at the [MASK] positions of held-out text (the extract's held-out articles "
        "and each source's held-out slice, one fixed mask), beside the n-gram table trained on "
        "the same words; then each candidate minus the base with its 95% paired bootstrap "
        "interval over the examples (one run per candidate: the interval holds the examples' "
        "variation, not the runs').",
        f"python benchmarks/english_recipes.py --stop-after {data['stop_after']} --threads 1; "
        f"python benchmarks/english_recipes.py --collect --stop-after {data['stop_after']}",
        table(["candidate", "seconds", *slices], rows)
        + "\n\n"
        + table(["candidate", "held-out text", "minus base [95% interval]"], gaps),
    )


def minimal_pairs(data: dict) -> Section:
    models = data["models"]
    phenomena = list(next(iter(models.values()))["accuracy"])
    header = ["phenomenon", *models]
    rows = [
        [name] + [f"{pct(m['accuracy'][name][0])} [{pct(m['accuracy'][name][1])}, "
                  f"{pct(m['accuracy'][name][2])}]" for m in models.values()]
        for name in phenomena
    ]  # fmt: skip
    gaps = [
        [name, other, f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"]
        for name, m in models.items()
        for other, (d, lo, hi) in m.get("minus", {}).items()
    ]
    return Section(
        "Grammatical minimal pairs",
        f"{data['pairs']:,} pairs of sentences, one grammatical, one not, differing in one word "
        "(nine BLiMP phenomena, 200 each, `minibert.minimal_pairs`, built from words every model "
        "here has read): a model is right when it scores the grammatical one strictly higher "
        "(BERTs by pseudo-log-likelihood, the word trigrams by log-probability). Accuracy with "
        "its 95% bootstrap interval over the pairs; then each BERT minus each other scorer, "
        "paired over the same pairs.",
        "python benchmarks/minimal_pairs.py --model NAME=FOLDER",
        table(header, rows) + "\n\n" + table(["model", "minus", "difference [95% interval]"], gaps),
    )


def english_scale(data: dict) -> Section:
    def interval(values: list[float]) -> str:
        return f"{100 * values[0]:+.1f} [{100 * values[1]:+.1f}, {100 * values[2]:+.1f}]"

    points = [(f"{name} of the words", run) for name, run in data["runs"].items()]
    points.append((f"{data['checkpoint']['name']} (all, 30,000 steps)", data["checkpoint"]))
    rows = [
        [name, f"{run['words']:,}", f"{run['steps']:,}", pct(run["mask"]["model"]),
         pct(run["mask"]["ngram"]), interval(run["mask"]["minus_ngram"]),
         pct(run["minimal_pairs"]["accuracy"]["overall"][0]), pct(run["trigram"]),
         interval(run["minimal_pairs"]["minus_trigram"])]
        for name, run in points
    ]  # fmt: skip
    return Section(
        "How much text: the data-scale curve",
        f"The english recipe on a share of the english corpus's training words, every run paused "
        f"at step {data['stop_after']:,} of its 30,000-step schedule (the same steps, so a smaller "
        "share is read more times over), each with a vocabulary trained on its own share. [MASK] "
        "top-1 on the held-out Wikipedia articles beside the n-gram table of the same words at the "
        f"same positions; the {data['pairs']:,} minimal pairs beside a word trigram of the same "
        "words; differences in points with 95% paired bootstrap intervals. The finished "
        "checkpoint is measured the same way, beside the curve.",
        "python benchmarks/english_scale.py pretrain; python benchmarks/english_scale.py collect",
        table(
            [
                "run",
                "words",
                "steps",
                "[MASK] top-1",
                "n-gram",
                "minus n-gram",
                "minimal pairs",
                "trigram",
                "minus trigram",
            ],
            rows,
        ),  # fmt: skip
    )


def pretraining_scale(data: dict) -> Section:
    rows = []
    for fraction, run in sorted(data["runs"].items(), key=lambda kv: float(kv[0])):
        last = run["curve"][-1] if isinstance(run["curve"], list) else run["curve"]
        rows.append(
            [
                fraction,
                f"{run['words']:,}",
                pct(last["mask_accuracy"]),
                pct(run["ngram_mask_accuracy"]),
                num(run["train_loss_last_500"], 2),
                num(last["mlm_loss"], 2),
            ]
        )
    gains = data["finetune"]["by_fraction"]
    gain_rows = [[fraction, _mean_sd(g["pretrained"]["values"]), _mean_sd(g["random"]["values"]),
                  signed_interval(g["gain"]), p_value(g["gain"]["p"])]
                 for fraction, g in sorted(gains.items(), key=lambda kv: float(kv[0]))]  # fmt: skip
    return Section(
        "How much text pretraining needs",
        f"The course recipe (`{data['recipe']}`) on a share of the Wikipedia training text: "
        "held-out top-1 at the [MASK] positions at the last step, beside the n-gram table of the "
        "same text at the same positions. Then: " + data["finetune"]["what"] + ".",
        "python benchmarks/pretraining_scale.py pretrain --fractions 0.125 0.25 0.5; "
        "python benchmarks/pretraining_scale.py collect; python benchmarks/pretraining_scale.py "
        "finetune",
        table(
            [
                "share of text",
                "words",
                "[MASK] top-1",
                "n-gram table",
                "training loss",
                "held-out MLM loss",
            ],
            rows,
        )
        + "\n\n**Fine-tuned on wiki-mentions, 256 sentences (span F1)**\n\n"
        + table(
            ["share of text", "pretrained", "random weights", "gain [95% interval]", "p"], gain_rows
        ),
        figures=("pretraining_scale_gain.png",),
    )


def site_browser(data: dict) -> Section:
    return Section(
        "The course site in a browser",
        "Every page of the built site opened from disk in headless Chromium with every network "
        "request refused: console errors, images, typeset math and the offline search.",
        "make site; python benchmarks/site_browser.py  (needs chromium and playwright)",
        table(
            ["measure", "value"],
            [
                ["pages", data["pages"]],
                ["pages with problems", len(data["pages_with_problems"])],
                ["requests to other hosts", len(data["requests_to_other_hosts"])],
                ["images shown", data["images"]],
                ["math elements typeset", data["math elements typeset"]],
                ["search results for 'attention mask'", data["search results"]],
                ["slowest page (s)", data["slowest page (s)"]],
            ],
        ),
    )


def slides_browser(data: dict) -> Section:
    screens = data["screens per deck"]
    return Section(
        "The slide decks in a browser",
        "Every lesson's reveal.js deck opened from disk in headless Chromium with every network "
        "request refused, walked screen by screen and fragment by fragment.",
        "make slides; python benchmarks/slides_browser.py  (needs chromium and playwright)",
        table(
            ["measure", "value"],
            [
                ["decks", data["decks"]],
                ["decks with problems", len(data["decks_with_problems"])],
                ["requests to other hosts", len(data["requests_to_other_hosts"])],
                [
                    "screens",
                    f"{sum(screens.values())} ({min(screens.values())}-{max(screens.values())} a deck)",
                ],
                ["speaker notes (cells)", sum(data["speaker notes per deck"].values())],
                ["images shown", data["images"]],
                ["math elements typeset", data["math elements typeset"]],
                ["slowest deck (s)", data["slowest deck (s)"]],
            ],
        ),
        machine=f"{data['browser']}; {data['date']}",
    )


def tokenizer_speed(data: dict) -> Section:
    parts = []
    for workload in data["results"]:
        rows = [[name, f"{r['median_s']:.3f}", f"{r['texts_per_s']:,}",
                 f"{r['speed_vs_pure_python']:.2f}x"] for name, r in workload["implementations"].items()]  # fmt: skip
        parts.append(
            f"**{workload['workload']}** ({workload['texts']:,} texts)\n\n"
            + table(["tokenizer", "median s", "texts/s", "against pure Python"], rows)
        )
    return Section(
        "Tokenizer speed",
        "minibert's `BertTokenizer` against transformers' pure-Python and Rust BERT tokenizers on "
        f"the same texts with the bert-base-uncased vocabulary, median of {data['rounds']} rounds. "
        "Their outputs are identical (tests/test_tokenization.py).",
        "python benchmarks/tokenizer_speed.py",
        "\n\n".join(parts),
    )


def wordpiece_training(data: dict) -> Section:
    rows = []
    for r in data["results"]:
        ours, theirs = r["minibert"], r["tokenizers"]
        rows.append(
            [
                f"{r['vocab_size']:,}",
                num(ours["pieces_per_word"], 3),
                num(theirs["pieces_per_word"], 3),
                f"{100 * r['pieces_per_word_vs_tokenizers']:+.1f}%",
                pct(r["overlap"], 0),
                ours["train_s"],
                theirs["train_s"],
            ]
        )
    base = data["bert_base_uncased"]
    return Section(
        "Training a WordPiece vocabulary",
        f"minibert's `train_wordpiece` against the tokenizers library's trainer on the same "
        f"{data['train_articles']} Wikipedia training articles: pieces per word on the "
        f"{data['heldout_articles']} held-out articles (lower is better; bert-base-uncased's "
        f"{base['tokens']:,} pieces: {base['pieces_per_word']:.3f}) and the share of the two "
        "vocabularies that is the same.",
        "python benchmarks/wordpiece_training.py",
        table(
            [
                "pieces",
                "minibert pieces/word",
                "tokenizers pieces/word",
                "difference",
                "overlap",
                "minibert s",
                "tokenizers s",
            ],
            rows,
        ),
    )


# The page's order: what a reader meets first. A new results file: one entry here.
def cpu_levers(data: dict) -> Section:
    cpu = data["machine"]["cpu"]
    bf16 = ", ".join(cpu["bf16_instructions"]) or "none"
    rows = []
    for step in ("pretraining", "finetuning"):
        part = data[step]
        for variant, ratio in part["speed_vs_eager_fp32"].items():
            rows.append([step, variant, f"{1e3 * part['median_seconds'][variant]:,.1f}",
                         f"{ratio:.2f}x", f"{part['warmup_seconds'][variant]:,.1f}"])  # fmt: skip
    return Section(
        "Speed levers on the CPU",
        "torch.compile, bfloat16 autocast and the thread count on two training steps, each "
        "against the plain eager float32 step in the same interleaved rounds: the course "
        "checkpoint's pretraining step (32 x 128 tokens, MLM logits at the masked positions) and "
        "its fine-tuning step on Rotten Tomatoes (32 reviews). transformers' pretraining step on "
        f"the same weights and batches: minibert is "
        f"{data['pretraining']['minibert_vs_transformers']:.2f}x as fast. Processor: "
        f"{cpu['name']} (bfloat16 instructions: {bf16}); median of {data['rounds']} rounds after "
        f"{data['warmup']} warm-up rounds, which include compiling. The machine's load average "
        f"(1 minute) was {data['load_average_before'][0]:.1f} before and "
        f"{data['load_average_after'][0]:.1f} after"
        + (
            f": above its {data['machine']['cpu_count']} cores, other work competed for them, "
            "which favours one thread."
            if max(data["load_average_before"][0], data["load_average_after"][0])
            > data["machine"]["cpu_count"]
            else "."
        ),
        "python benchmarks/cpu_levers.py",
        table(["step", "variant", "ms per step", "against eager fp32", "warm-up s"], rows),
        machine=f"{cpu['name']}, {data['machine']['cpu_count']} CPUs, torch "
        f"{data['machine']['torch']}, Python {data['machine']['python']}",
    )


def gpu_suite(data: dict) -> Section:
    m = data["machine"]
    peaks = m.get("peaks_tflops") or {}
    rows = [[r["shape"], r["seq"], r["mode"], r["impl"], r["precision"], r["attention"],
             "compiled" if r["compiled"] else "eager", f"{r['tokens_per_s']:,.0f}",
             pct(r["mfu"]) if r.get("mfu") is not None else "-",
             f"{r['peak_memory_gib']:.1f}" if r.get("peak_memory_gib") else "-"]
            for r in data["rows"]]  # fmt: skip
    checks = []
    for name in ("bf16_equivalence", "compile_equivalence"):
        if name in data:
            check = data[name]
            gap = check["relative_gap"]
            gap = max(gap.values()) if isinstance(gap, dict) else gap
            checks.append(f"The {name.replace('_', ' ')}: relative gap {gap:.2e} against a "
                          f"tolerance of {check['tolerance']:g} ({'holds' if check['holds'] else 'FAILS'}).")  # fmt: skip
    recipe = data.get("recipe_estimate_s")
    extra = [f"The course checkpoint's whole recipe, estimated from its measured steps: "
             f"{recipe / 60:.1f} minutes." if recipe else ""]  # fmt: skip
    if data.get("finetune", {}).get("wall_s"):
        extra.append(f"MiniLM's shape fine-tuned on wiki-qa: {data['finetune']['wall_s']:.0f} s.")
    return Section(
        "The package on a GPU",
        f"Training steps (MLM + NSP heads, AdamW) and inference of minibert and transformers on "
        f"the same weights and batches, for BERT-base and the course's shapes, in fp32, TF32 and "
        f"bf16 autocast, SDPA or explicit attention, eager or compiled. MFU: the model's FLOPs "
        f"per token times tokens per second over the data sheet's dense peak "
        f"({', '.join(f'{k} {v:g}' for k, v in peaks.items()) or 'not listed'} TFLOP/s). "
        + " ".join(checks + extra),
        "python benchmarks/gpu_suite.py --out benchmarks/results",
        table(
            [
                "shape",
                "tokens",
                "step",
                "impl",
                "precision",
                "attention",
                "compile",
                "tokens/s",
                "MFU",
                "GiB",
            ],
            rows,
        ),  # fmt: skip
        machine=f"{m['device']}, torch {m['torch']}, transformers {m['transformers']}",
    )


def wiki_swag(data: dict) -> Section:
    s = data["settings"]
    rows = [[name, "-", pct(r["accuracy"])] for name, r in data["baselines"].items()]
    rows += [[name, pct(r["dev_accuracy"]), pct(r["accuracy"])] for name, r in data["runs"].items()]
    c = data["comparisons"]
    pairs = [[f"minilm minus {c[k]['baseline']}", signed_interval(c[k], scale=100, digits=1),
              p_value(c[k]["p"])] for k in ("minilm vs the better named baseline",
                                            "minilm vs the best baseline")]  # fmt: skip
    pairs.append(["course minus random weights",
                  signed_interval(c["course vs random weights"], scale=100, digits=1),
                  p_value(c["course vs random weights"]["p"])])  # fmt: skip
    above = "it is" if c["target_met"] else "it is not"
    return Section(
        "Multiple choice: wiki-swag (the paper's SWAG)",
        f"Which of four sentences of the same Wikipedia article follows a sentence: "
        f"{s['items']['train']:,} training items, {s['items']['dev']:,} dev, {s['items']['test']:,} "
        "test on the held-out articles (chance 25%). Each model fine-tuned once (seed "
        f"{s['seed']}) on every training item, kept at its best dev accuracy; the baselines answer "
        "the same test items. Paired differences in accuracy points with their 95% bootstrap "
        "interval over the test items and a sign-flip p-value. Is MiniLM at least "
        f"{s['target_points']} points above the better of shared words and the course NSP head, "
        f"its interval above zero? {above.capitalize()}.",
        "python benchmarks/wiki_swag.py",
        table(["model or baseline", "dev", "test"], rows)
        + "\n\n"
        + table(["difference", "points [95% interval]", "p"], pairs),
    )


SELF_SUPERVISED_PAIRS = {  # what a self-supervised row's pairs are, by its objective
    "ict": "inverse-cloze pairs (a sentence, its paragraph without it, as ORQA: kept 10% of the time)",
    "simcse": "SimCSE pairs (a sentence twice, two dropout masks)",
}


def retrieval(data: dict) -> Section:
    measures = data["measures"]
    start = data.get("course_checkpoint", "course")
    who = (
        "the course checkpoint" if start == "course-english" else "the first checkpoint (`course`)"
    )
    rows = []
    for name, r in data["rows"].items():
        gaps = [
            signed_interval(r["vs_bm25"][m]) if m in r["vs_bm25"] else "-"
            for m in ("recall@5", "mrr@10")
        ]
        s = r.get("seconds", {})
        encoded = s.get("passages", s.get("index"))
        rows.append(
            [
                name,
                *(num(r["test"][m]) for m in measures),
                *gaps,
                f"{encoded:.1f}" if encoded is not None else "-",
                f"{s['per_query_ms']:.1f}" if "per_query_ms" in s else "-",
            ]
        )
    header = [
        *("retriever", *measures, "recall@5 vs BM25", "MRR@10 vs BM25"),
        *("index or passages s", "ms per query"),
    ]
    layers = [
        [name, ", ".join(f"{v:.2f}" for v in values)] for name, values in data["anisotropy"].items()
    ]
    h = next(r for r in data["rows"].values() if r["kind"] == "hybrid")
    taught = ""
    for name, r in data["rows"].items():
        if "training" not in r:
            continue
        t, vs = r["training"], r.get("vs_course_best", {})
        trials = ", ".join(f"{x['lr']:g}: {x['mrr@10']:.3f}" for x in t.get("lr_trials", []))
        tried = f"; dev MRR@10 {trials}" if trials else ""
        seeds = r.get("seeds", [])
        runs = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {', '.join(map(str, seeds))}"
        spent = t.get("training_seconds")
        if spent:
            low, high = min(spent), max(spent)
            each = f"{low:.0f}" if len(spent) == 1 else f"{low:.0f}-{high:.0f}"
            runs += f", {each} s of training {'each' if len(spent) > 1 else ''}".rstrip()
        if "objective" in t:  # self-supervised: the articles' text, no question
            pairs = SELF_SUPERVISED_PAIRS.get(t["objective"], t["objective"])
            taught += (
                f" {name}: {who} trained on {t['pairs']:,} {pairs} from the "
                f"training articles' text alone, no question, with in-batch negatives "
                f"({t['steps']} steps of {t['batch_size']}, temperature {t['temperature']}, the "
                f"rate {t['lr']:g}: {t['lr_rule']}{tried}), {runs}"
            )
        elif "texts" in t:  # distilled: the student regresses the teacher's vectors
            taught += (
                f" {name}: {who} as a student of MiniLM on {t['texts']:,} texts of "
                f"the training articles ({t['loss']}; {t['steps']} steps of {t['batch_size']}, the "
                f"rate {t['lr']:g}: {t['lr_rule']}{tried}), {runs}"
            )
        else:
            model = "MiniLM" if "--model minilm " in t.get("recipe", "") else who
            hard = t.get("hard_negatives")
            extra = f" and {hard} of BM25's best wrong paragraphs per question" if hard else ""
            taught += (
                f" {name}: {model} trained on the {t['pairs']} training questions' "
                f"(question, paragraph) pairs with in-batch negatives{extra} ({t['steps']} steps "
                f"of {t['batch_size']}, temperature {t['temperature']}), the rate {t['lr']:g} "
                f"chosen as {t['lr_rule']} (dev MRR@10: {trials}), then 3 seeds"
            )
        if "vs_start" in r:
            first = r["vs_start"]
            taught += (
                f"; against {first['row']}, where it started: MRR@10 "
                f"{signed_interval(first['mrr@10'])}, recall@5 {signed_interval(first['recall@5'])}"
            )
        if vs and "--model minilm " not in t.get("recipe", ""):
            taught += (
                f"; against {vs['row']}, the checkpoint's strongest pooling: MRR@10 "
                f"{signed_interval(vs['mrr@10'])}, recall@5 {signed_interval(vs['recall@5'])}"
            )
        taught += "."
    answers = ""
    if "end_to_end" in data:
        e = data["end_to_end"]
        reader, gold = e["reader"], e["gold_paragraph"]
        found = []
        for name, x in e["retrievers"].items():
            ratio = x["f1_over_gold"]
            found.append(
                [
                    f"{name} retriever, top {e['top_k']}",
                    f"{x['exact_match']:.1f}",
                    f"{x['f1']:.1f}",
                    f"{ratio[0]:.2f} [{ratio[1]:.2f}, {ratio[2]:.2f}]",
                    pct(x["answer_from_gold_paragraph"]),
                    f"{1000 * x['seconds']['per_question']:.0f}",
                ]
            )
        found.insert(
            0,
            [
                "the gold paragraph",
                f"{gold['exact_match']:.1f}",
                f"{gold['f1']:.1f}",
                "1",
                "100%",
                f"{1000 * gold['seconds_per_question']:.0f}",
            ],
        )
        answers = (
            f"\n\nEnd to end (mb.ask): a MiniLM wiki-qa reader ({reader['command']}, "
            f"{reader['steps']} steps, {reader['training_seconds']:.0f} s of training; "
            f"{reader['lr_rule']}) reads the top {e['top_k']} paragraphs of the retriever, the "
            f"answer's score its span score + {e['retrieval_weight']:g} x its paragraph's "
            f"standardised retrieval score, on the {e['questions']} test questions; SQuAD exact "
            f"match and F1 (percent), the end-to-end F1 over the gold paragraph's with its 95% "
            f"paired bootstrap interval:\n\n"
            + table(
                ["reader given", "EM", "F1", "F1 / gold F1", "answer's paragraph gold", "ms"],
                found,
            )
        )
        if "hybrid_minus_bm25_f1" in e:
            answers += (
                "\n\nThe hybrid's end-to-end F1 minus BM25's, paired over the same questions: "
                f"{signed_interval(e['hybrid_minus_bm25_f1'], digits=1)}."
            )
    lat, enc = data["latency"], data["minilm_corpus_encoding"]
    return Section(
        "Searching the course's Wikipedia (wiki-search)"
        + ("" if start == "course" else f", the course rows from {start}"),
        ("" if start == "course" else f"Every course row here starts from the {start} checkpoint. ")
        + f"Each of wiki-qa's {data['queries']['test']} test questions (the held-out articles) "
        f"searches all {data['corpus']['passages']:,} paragraphs of the {data['corpus']['articles']} "
        "articles for the one it was written about: recall@k and MS MARCO's MRR@10, each row's "
        "difference from BM25 with its 95% paired bootstrap interval over the test queries "
        "(random weights and the trained rows: 3 seeds, averaged within each resample). The hybrid's weight was chosen on the "
        f"{data['queries']['dev']} dev questions ({data['hybrid_rule']}): w = {h['weight']}."
        f"{taught} "
        f"Encoding the corpus with MiniLM took {enc['passages']:.0f} s on {enc['threads']} "
        f"thread(s) (load average {enc['load_average'][0]:.1f} before, {enc['load_average'][1]:.1f} "
        f"after, on {data['machine']['cpu_count']} cores); its saved index read back in "
        f"{1000 * lat['index_read_s']:.1f} ms and a query then took {lat['query_ms_median']:.0f} ms "
        f"(median of {lat['queries']}, {lat['backend']}).",
        data["command"],
        table(header, rows)
        + "\n\nAnisotropy, the mean cosine of 2,000 random pairs of passages' mean-pooled "
        "vectors, after the embeddings (first) and each layer:\n\n"
        + table(["encoder", "mean cosine by layer"], layers)
        + answers,
    )


def class_at_once(data: dict) -> Section:
    rows = [
        [setting, str(run["kernels"]), f"{run['notebook_s'][0]:,.0f} s ({run['notebook_s'][1]:,.0f} s)",
         f"{run['slowest_cell_s'][0]:,.0f} s ({run['slowest_cell_s'][1]:,.0f} s)",
         f"{run['over_fair_share']:.2f}x" if "over_fair_share" in run else "(alone)"]
        for setting, runs in data["runs"].items()
        for run in runs
    ]  # fmt: skip
    return Section(
        "A class at once",
        f"Several fresh kernels run lesson {data['notebook'][:2]} top to bottom together, under a "
        "thread setting: torch's default (a thread per core in every kernel), or "
        "OMP_NUM_THREADS=1 per kernel. Each kernel's wall time for the notebook and for its "
        f"slowest cell [{data['slowest_cell']}] (median, worst in brackets), and the worst "
        "kernel's wall time over its fair share of the cores (the setting's one-kernel time times "
        "kernels over cores). The teacher's guide sizes a shared server from it.",
        "python benchmarks/class_at_once.py --notebook 04 --kernels 1 4 --settings default one",
        table(["threads", "kernels", "notebook", "slowest cell", "over the fair share"], rows),
    )


def cross_encoder_line(cross: dict) -> str:
    """The cross-encoder's seeds, its rate and how the rate was chosen, as a sentence."""
    seeds = ", ".join(
        f"{run['kept']['seed']} (its restart {run['kept']['kept']} kept)"
        if "kept" in run and run["kept"]["kept"] != run["kept"]["seed"]
        else str(run["seed"])
        for run in cross["runs"]
    )
    rate = cross.get("rate")
    if rate is None:
        return f"\n\nThe cross-encoder: `{cross['command']}`, seeds {seeds}."
    chosen = (
        "chosen on dev by seed "
        f"{rate['seed']} (not reported) among "
        + ", ".join(f"{t['lr']:g} ({t['dev_pair_order']:.3f})" for t in rate["trials"])
        + ", by dev pair order"
        if rate["chosen_on_dev"]
        else "given"
    )
    return f"\n\nThe cross-encoder: `{cross['command']}`, seeds {seeds}, rate {rate['lr']:g}, {chosen}."


def haystack_line(haystack: dict) -> str:
    """What an approximate-search haystack holds, as a sentence (empty for an older file)."""
    if "what" not in haystack:
        return ""
    held = "; ".join(f"{name} {count:,}" for name, count in haystack.get("texts", {}).items())
    words = (
        f", each sentence at least {haystack['min_words']} words" if "min_words" in haystack else ""
    )
    return (
        f"{haystack['what'][0].upper()}{haystack['what'][1:]}"
        + (f": {held}{words}" if held else "")
        + ".\n\n"
    )


def retrieval_rerank(data: dict) -> Section:
    parts = []
    index = data.get("index")
    if index:
        for name, haystack in index["haystacks"].items():
            rows = [
                [kind.upper(), f"{setting.get('ef_search') or setting.get('probes')}",
                 num(setting["recall_of_exact"]), f"{setting['ms_median']:.3f}",
                 f"{setting['exact_ms_median']:.3f}", f"{setting['speedup']:.1f}x"]
                for kind in ("hnsw", "ivf")
                for setting in haystack[kind]["settings"]
            ]  # fmt: skip
            parts.append(
                f"### {name}: {haystack['vectors']:,} vectors of {haystack['hidden']}\n\n"
                + haystack_line(haystack)
                + table(
                    [
                        "index",
                        "ef_search / probes",
                        f"recall of the exact top {index['k']}",
                        "ms a query",
                        "exact ms",
                        "speed-up",
                    ],
                    rows,
                )  # fmt: skip
            )
    rerank = data.get("rerank")
    if rerank:
        rows = []
        for name, row in rerank["rows"].items():
            gap = row.get("vs_first_stage", {}).get("mrr@10")
            if "weights" in row:  # the cross-encoder's weight each seed's dev questions chose
                name += f" (weight {', '.join(f'{w:g}' for w in row['weights'])}, chosen on dev)"
            rows.append(
                [name] + [num(row["test"][m]) for m in ("recall@1", "recall@5", "mrr@10")]
                + [signed_interval(gap) if gap else "-"]
            )  # fmt: skip
        parts.append(
            f"### Re-ranking the first stage's top {rerank['depth']}\n\n"
            + table(["retriever", "recall@1", "recall@5", "MRR@10", "minus the first stage"], rows)
            + cross_encoder_line(rerank["cross_encoder"])
        )
    else:
        parts.append(data.get("rerank_not_reported", "No re-ranking measured in this file."))
    return Section(
        "Re-ranking and approximate search",
        " ".join(data["what"].split()),
        index["command"] if index else rerank["command"],
        "\n\n".join(parts),
    )


SECTIONS: dict[str, Callable[[dict], Section]] = {
    "class_at_once.json": class_at_once,
    "model_throughput.json": model_throughput,
    "tokenizer_speed.json": tokenizer_speed,
    "wordpiece_training.json": wordpiece_training,
    "attention_speed.json": attention_speed,
    "pretraining_recipes.json": pretraining_recipes,
    "pretraining_scale.json": pretraining_scale,
    "english_corpus.json": english_corpus,
    "minimal_pairs.json": minimal_pairs,
    "english_scale.json": english_scale,
    "english_recipes.json": english_recipes,
    "english_recipes_4500.json": english_recipes,
    "nsp_continuation.json": nsp_continuation,
    "nsp_continuation_6000.json": nsp_continuation_6000,
    "nsp_continuation_weighted.json": nsp_continuation_weighted,
    "pretraining_candidates.json": pretraining_candidates,
    "finetuning_shapes.json": finetuning_shapes,
    "finetune_defaults.json": finetune_defaults,
    "distributed_throughput.json": distributed_throughput,
    "explorer_speed.json": explorer_speed,
    "explorer_browser.json": explorer_browser,
    "notebook_times.json": notebook_times,
    "notebook_resources.json": notebook_resources,
    "compat.json": compat,
    "site_browser.json": site_browser,
    "slides_browser.json": slides_browser,
    "cpu_levers.json": cpu_levers,
    "retrieval.json": retrieval,
    "retrieval_course_english.json": retrieval,
    "retrieval_rerank.json": retrieval_rerank,
    "wiki_swag.json": wiki_swag,
}
# sections written before their file: gpu_suite.json comes from the first run on a lent GPU
# (tests render it from a --smoke run); it moves into SECTIONS when the file is committed
PENDING: dict[str, Callable[[dict], Section]] = {"gpu_suite.json": gpu_suite}


def anchor(name: str) -> str:
    """The section's id on the page: 'nsp_continuation_6000.json' -> 'nsp-continuation-6000'."""
    return re.sub(r"[^a-z0-9]+", "-", name.removesuffix(".json").lower()).strip("-")


def _unregistered(data: object) -> Section:
    """A file without a function in SECTIONS: its numbers as they are, under a warning."""
    flat: list[list[object]] = []

    def walk(value: object, path: str) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, f"{path}.{key}" if path else str(key))
        elif isinstance(value, list):
            for i, inner in enumerate(value[:20]):
                walk(inner, f"{path}[{i}]")
        elif len(flat) < 200:
            flat.append([f"`{path}`", str(value).replace("|", "/").replace("\n", " ")[:200]])

    walk(data, "")
    return Section(
        "Not yet described",
        "This results file has no section written for it yet (docs/site/results.py, SECTIONS); "
        "its values are listed as they are.",
        "see the benchmark that writes it",
        table(["key", "value"], flat),
    )


def section_of(name: str, data: object) -> Section:
    """The file's Section from its function in SECTIONS, or the listing of an unregistered file."""
    render = SECTIONS.get(name) or PENDING.get(name)
    return render(data) if render else _unregistered(data)


def figures_of(name: str, section: Section, results: Path = RESULTS) -> list[str]:
    """The PNGs a section shows: the one named after its file, then any its Section names."""
    stem = name.removesuffix(".json")
    names = [f"{stem}.png", *section.figures]
    return [figure for figure in names if (results / figure).exists()]


def section_text(name: str, data: object, results: Path = RESULTS) -> str:
    """One section of the page in Markdown: its label, heading, facts, figures and numbers."""
    section = section_of(name, data)
    machine = section.machine or (machine_of(data) if isinstance(data, dict) else "not recorded")
    lines = [f"({anchor(name)})=", f"## {section.title}", ""]
    if name not in SECTIONS and name not in PENDING:
        lines += ["```{warning}", f"{name} has no section in docs/site/results.py yet.", "```", ""]
    lines += [
        f"**What was measured.** {section.measured}",
        "",
        f"**Where.** {machine}",
        "",
        f"**To reproduce.** {_command(section.command)}",
        "",
    ]
    lines += [f"![{Path(f).stem}]({FIGURES}/{f})\n" for f in figures_of(name, section, results)]
    lines += [section.numbers, "", f"*Generated from `benchmarks/results/{name}`.*", ""]
    return "\n".join(lines)


def _command(text: str) -> str:
    """'python x.py  (a note)' -> '`python x.py` (a note)'; commands joined by '; ' each coded."""
    command, _, note = text.partition("  (")
    coded = "; ".join(f"`{part.strip()}`" for part in command.split("; "))
    return f"{coded} ({note}" if note else coded


def order(results: Path = RESULTS) -> list[str]:
    """The results files in the page's order: SECTIONS' order, then any file without an entry."""
    names = sorted(p.name for p in results.glob("*.json"))
    return [n for n in SECTIONS if n in names] + [n for n in names if n not in SECTIONS]


def page(results: Path = RESULTS) -> str:
    """results.md: the introduction, then one section per JSON file in results/."""
    loaded = {name: json.loads((results / name).read_text(encoding="utf-8"))
              for name in order(results)}  # fmt: skip
    contents = ", ".join(f"[{section_of(n, d).title}](#{anchor(n)})" for n, d in loaded.items())
    parts = [
        "# Measured results",
        "",
        "Every number on this page is read from `benchmarks/results/*.json` when the site is "
        "built; each section names the command that measured it. Unless a section says "
        "otherwise, the machine is this project's: a 2-core x86-64 CPU with no GPU, shared with "
        "other work, so timings are best read as ratios. A ± is the sample standard deviation "
        "over seeds; an interval in brackets is a 95% paired bootstrap interval.",
        "",
        f"Sections: {contents}.",
        "",
    ]
    parts += [section_text(name, data, results) for name, data in loaded.items()]
    return "\n".join(parts)


def write(out: Path, results: Path = RESULTS) -> None:
    """Write results.md into out/ and the figures it shows into out/results/."""
    import shutil

    (out / FIGURES).mkdir(parents=True, exist_ok=True)
    for figure in results.glob("*.png"):
        shutil.copy(figure, out / FIGURES / figure.name)
    (out / "results.md").write_text(page(results), encoding="utf-8")


if __name__ == "__main__":
    sys.stdout.write(page(Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS))
