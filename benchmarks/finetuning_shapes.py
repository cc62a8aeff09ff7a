"""The three shapes beyond one sentence: wiki-mentions (a label per word), wiki-qnli (a sentence
pair) and wiki-qa (a span of a context), each from MiniLM, the course checkpoint and random weights
of the course checkpoint's size, at several training sizes, beside the task's baselines; and the
review domain's token and sentence tasks (review-capitalisation, rotten-tomatoes), where the course
checkpoint continued on review text (course-reviews) joins them: domain crossed with task shape.
The rows: random weights of the course checkpoint's size and vocabulary (scratch), the course
checkpoint, course-reviews, the self-pretrained model (``self``: the course's architecture
pretrained on the review text alone with its own vocabulary, made in runs/self by the command in
pretraining_candidates.py's docstring, 27 minutes on one thread; ``self-scratch``: random weights
with its vocabulary), ``course-english`` (the course's recipe on the English corpus's 5.5M words,
its own vocabulary; ``english-scratch``: random weights with that vocabulary), MiniLM and random
weights of MiniLM's size (minilm-scratch). Each pretrained row is compared with random weights of
its own size and vocabulary, and course-english with the course checkpoint (more text minus less). Each model also has a
frozen-feature probe (``MODEL-probe``: the encoder frozen, a linear head on the mean of a text's
last hidden states, or on each word's own, trained by the same protocol), compared with the probe
of its random partner; and, on a label per text, two fine-tuned rows that read something else
than BERT's pooler on [CLS]: ``MODEL-mean`` (the whole model trained, as the plain row, on the mean
of the last hidden states: the probe's pooling without its freezing) and ``MODEL-cls`` (the last
hidden state of [CLS] itself with a fresh linear head, no pooler dense + tanh: ``pooling="cls"``),
so that the pooler is told from the pooling.

    python benchmarks/finetuning_shapes.py                       # the three shapes (hours on 2 cores)
    python benchmarks/finetuning_shapes.py --tasks review-capitalisation rotten-tomatoes \
        --models course scratch course-reviews --sizes 256 1024
    python benchmarks/finetuning_shapes.py --tasks wiki-qa --models minilm --sizes all
    python benchmarks/finetuning_shapes.py --tasks wiki-qa --models minilm --sizes all --epochs 3 10 30
    python benchmarks/finetuning_shapes.py --tasks rotten-tomatoes --models course-probe scratch-probe
    python benchmarks/finetuning_shapes.py --tasks rotten-tomatoes --models course-cls scratch-cls \
        --sizes 256 1024
    python benchmarks/finetuning_shapes.py --jobs 8              # cells side by side (a GPU)
    python benchmarks/finetuning_shapes.py --retabulate          # every row again from the cache
    python benchmarks/finetuning_shapes.py --report              # the table from the runs kept

Protocol (``common/restarts.py``): for each task, model, training size and number of epochs, the
learning rate is chosen on dev with seed 0 by ``recipes.choose_lr`` (the task's own dev measure:
span F1, balanced accuracy, exact spans in the windows that hold the answer; a tie broken by the
lower dev loss; a rate at the grid's edge widens the grid, at most twice). Seed 0 is then left out:
seeds 1 and 2 run at that rate and are the ones reported (two seeds, not three: a third would add
about 4 of the grid's 8.7 CPU-hours). A reported run whose kept dev measure is at the trivial level
(``Selection.near_trivial``) is restarted with seeds 101, 102, 103 (seed 2: 201, ...), at most 3,
and the first restart that leaves the trivial level on dev takes its place (the BERT paper's
random restarts chosen on dev); a row records which seed each place kept, the restarts tried and
whether it is still trivial. The evaluation kept within a run is chosen by the same measure; test
never chooses anything. A subset of the training items is drawn afresh for each seed. Each run is
written to the cache folder as soon as it ends (``--cache``, one file per run) and gathered into
benchmarks/results/finetuning_shapes.json, and a run already there is not run again, so an
interrupted benchmark resumes; on a fresh clone the committed results file's runs are first written
into the cache, so the table's runs are not made again. The baselines are scored on the same test
items, built from all the training items and again, at each size, from the subset each seed's run
saw (``baselines_by_size``: a model is set against the rules that had its labels). ``--report``
adds the paired intervals (test items resampled, seeds averaged; and the seeds drawn too): each
row against random weights of its size and vocabulary, and each fine-tuned row against each rule
built from the training items its own runs saw (seed k's run against seed k's rule); and draws
finetuning_shapes.png: each task's test score against the training size. A task whose test
items no longer match its runs' predictions (its data rebuilt since) gets no intervals and is
listed under "stale" until its rows are run again.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import re
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import torch
from common import grid, results_file
from common.grid import EPOCHS, Job, Measure, RunCache, TestItems, paired

from minibert import assets, tasks
from minibert.tokenization import BertTokenizer

RESULTS = Path(__file__).resolve().parent / "results"
OUT = RESULTS / "finetuning_shapes.json"
CACHE = Path("runs") / "finetuning_shapes"  # one file per run (ignored by git)
SELF = Path("runs") / "self"  # made by the command in the docstring (not committed)
BASES = {
    "minilm": ("minilm", False, (3e-5, 1e-4)),
    "course": ("course", False, grid.SMALL_RATES),
    "scratch": ("course", True, grid.SMALL_RATES),
    "course-reviews": ("course-reviews", False, grid.SMALL_RATES),
    "course-english": ("course-english", False, grid.SMALL_RATES),
    "english-scratch": ("course-english", True, grid.SMALL_RATES),
    "minilm-scratch": ("minilm", True, (1e-4, 3e-4)),
    "self": (str(SELF), False, grid.SMALL_RATES),
    "self-scratch": (str(SELF), True, grid.SMALL_RATES),
}
RANDOM = {
    "minilm": "minilm-scratch",
    "self": "self-scratch",
    "course-english": "english-scratch",
}  # random weights of the same size
# and vocabulary (the others': scratch); each pretrained row is compared with its own
MORE_TEXT = {"course-english": "course"}  # a checkpoint -> the one its recipe made from less text
MODELS = grid.models(BASES, RANDOM)  # each base with each head: course, -mean, -cls, -probe
SIZES = {
    "wiki-mentions": (64, 256, 1024, None),
    "wiki-qnli": (64, 256, None),  # its sizes count questions (592)
    "wiki-qa": (64, 256, None),
    "review-capitalisation": (64, 256, 1024, None),
    "rotten-tomatoes": (64, 256, 1024, None),
    "capitalisation": (64, 256, 1024, None),  # lesson 8's first example: Wikipedia's own words
    "wiki-swag": (64, 256, 1024, None),  # the BERT paper's multiple choice on the same articles
}
COURSE_PIECES = {"capitalisation": 64}  # its rules at the course's pieces, a sentence cut at 64
ORDER = ("64", "256", "1024", "all")


def _cell_or_error(job: Job) -> tuple[Job, dict | None, dict]:
    """grid.cell, with a failure reported (and the other cells left to run) rather than raised."""
    try:
        return job, *grid.cell(job)
    except Exception as error:  # noqa: BLE001 - one broken cell must not stop a night's runs
        print(f"{job.task} {job.model.name} {job.size} failed: {type(error).__name__}: {error}")
        return job, None, {}


def _worker_init(threads: int) -> None:
    torch.set_num_threads(threads)


def baselines(task_name: str) -> dict:
    """The task's baselines on its test items (tokenised as MiniLM reads them)."""
    task = tasks.get(task_name)
    tok = BertTokenizer.from_pretrained(assets.path("minilm"))
    data = task.datasets(tok, task.max_length, None, 0)
    headline = Measure.of(task_name).headline
    return {n: s[headline] for n, s in task.baseline_scores(data, tok).items()}


def baselines_by_size(task_name: str, sizes: tuple, seeds: int = 3) -> dict:
    """Each baseline built from the labelled items a model saw at each size (seed k draws the
    subset of seed k's run), scored on the test items: {size: {baseline: [a score per seed]}}."""
    task = tasks.get(task_name)
    course = task_name in COURSE_PIECES  # scored at the words its runs (course, scratch) score
    tok = BertTokenizer.from_pretrained(
        assets.course_checkpoint("course") if course else assets.path("minilm")
    )
    measure = Measure.of(task_name).headline
    out: dict[str, dict[str, list[float]]] = {}
    for size in (s for s in sizes if s is not None):
        for seed in range(seeds):
            data = task.datasets(tok, COURSE_PIECES.get(task_name, task.max_length), size, seed)
            for name, scores in task.baseline_scores(data, tok).items():
                out.setdefault(str(size), {}).setdefault(name, []).append(scores[measure])
    return out


def _jobs(args: argparse.Namespace, work: Path) -> list[Job]:
    """The cells the arguments ask for, longest first."""
    jobs = []
    for task in args.tasks:
        sizes = SIZES[task] if args.sizes is None else args.sizes
        for epochs in args.epochs:
            for model in args.models:
                for size in sizes:
                    jobs.append(
                        Job(
                            task,
                            MODELS[model],
                            size,
                            args.cache,
                            work,
                            epochs,
                            cached_only=args.cached_only,
                            restarts=args.restarts,
                        )
                    )
    return sorted(jobs, key=lambda j: -(j.size or 10**9) * j.epochs)


def _table_jobs(done: dict, args: argparse.Namespace, work: Path) -> list[Job]:
    """Every row already in the table, as cells to tabulate again from the cache (nothing runs)."""
    jobs = []
    for task, rows in done.get("table", {}).items():
        for name, by_size in rows.items():
            if name == "baselines":
                continue
            model, _, epochs = name.partition(", ")
            for size in by_size:
                jobs.append(
                    Job(
                        task,
                        MODELS[model],
                        None if size == "all" else int(size),
                        args.cache,
                        work,
                        int(epochs.split()[0]) if epochs else EPOCHS,
                        cached_only=True,
                        restarts=args.restarts,
                    )
                )
    return jobs


def _size(text: str) -> int | None:
    return None if text == "all" else int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="*", default=list(SIZES)[:3], choices=list(SIZES))
    parser.add_argument(
        "--models", nargs="*", default=["minilm", "course", "scratch"], choices=list(MODELS)
    )
    parser.add_argument("--sizes", nargs="*", type=_size, default=None, help="sizes ('all')")
    parser.add_argument("--epochs", nargs="*", type=int, default=[EPOCHS])
    parser.add_argument(
        "--restarts",
        type=int,
        default=grid.restarts.RESTARTS,
        help="restarts of a reported run at the trivial level on dev",
    )
    parser.add_argument("--jobs", type=int, default=1, help="cells run side by side")
    parser.add_argument("--cache", type=Path, default=CACHE, help="one file per run")
    parser.add_argument("--out", type=Path, default=OUT, help="the results file")
    parser.add_argument("--report", action="store_true", help="the table and figure only")
    parser.add_argument(
        "--report-tasks",
        nargs="*",
        default=None,
        choices=list(SIZES),
        help="with --report: these tasks' intervals computed again, the others' kept",
    )
    parser.add_argument(
        "--cached-only",
        action="store_true",
        help="the table's rows from the runs in the cache; nothing runs",
    )
    parser.add_argument(
        "--retabulate",
        action="store_true",
        help="every row of the table again from the cache; nothing runs",
    )
    parser.add_argument(
        "--no-report",
        action="store_true",
        help="save the runs and rows; leave the intervals and figure for later",
    )
    args = parser.parse_args()
    cache = RunCache(args.cache)
    if seeded := cache.seed_from(RESULTS / "finetuning_shapes.json"):
        print(f"{seeded} runs from the committed results written into {args.cache}", flush=True)
    done = cache.gather(args.out)
    if args.report:
        return report(done, args.out, args.report_tasks)
    work = Path(tempfile.mkdtemp())
    table = done.setdefault("table", {})
    if args.retabulate:
        jobs = _table_jobs(done, args, work)
    else:
        jobs = _jobs(args, work)
        device = torch.cuda.get_device_name() if torch.cuda.is_available() else platform.machine()
        done.setdefault("machine", f"{device}, {args.jobs} job(s), torch {torch.__version__}")
        for task in args.tasks:
            table.setdefault(task, {})["baselines"] = baselines(task)
        rules = done.setdefault("baselines_by_size", {})
        for task in args.tasks:
            rules[task] = baselines_by_size(task, SIZES.get(task, (64, 256, 1024)))
    threads = max(1, (os.cpu_count() or 2) // args.jobs)
    pool = (
        multiprocessing.get_context("spawn").Pool(args.jobs, _worker_init, (threads,))
        if args.jobs > 1
        else None
    )
    results = pool.imap_unordered(_cell_or_error, jobs) if pool else map(_cell_or_error, jobs)
    started = time.perf_counter()
    for job, row, runs in results:
        done["runs"].update(runs)
        if row is not None:
            name = grid.row_key(job.model.name, job.epochs)
            table[job.task].setdefault(name, {})[str(job.size or "all")] = row
            print(
                f"{job.task} {name} {job.size or 'all'}: {row['mean']:.3f} +- {row['std']:.3f} "
                f"(lr {row['lr']:g}; {time.perf_counter() - started:.0f} s in)",
                flush=True,
            )
        if not args.retabulate:
            results_file.save(done, args.out)
    if pool:
        pool.close()
    shutil.rmtree(work, ignore_errors=True)
    if args.no_report:
        results_file.save(done, args.out)
    else:
        report(done, args.out)


def random_partner(model: str) -> str | None:
    """The row a model is compared with: random weights of its own size and vocabulary, trained
    the same way (a probe with a probe); None for a row of random weights."""
    return MODELS[model].partner


def _items(done: dict, task: str) -> TestItems:
    return TestItems(done, task, {name: model.source for name, model in MODELS.items()})


def intervals(done: dict, only: list[str] | None = None) -> dict:
    """For every task and size: each pretrained row minus random weights of its size and
    vocabulary (``random_partner``); a checkpoint that read more text minus the one that read less
    (``MORE_TEXT``, the same head; paired over the same test texts, each cut by its own
    vocabulary); a -cls row minus the plain row (what the pooler's dense + tanh
    does) and the -mean row minus the -cls row (what the mean does); each fine-tuned row minus each
    of the task's rules built
    from the training items its runs saw (its seed k's run against the rule of seed k's subset),
    paired over the test items with the seeds averaged, and over the seeds and the items (the two
    rows' seed s drawn together)."""
    out: dict = {}
    kept, stale = done.get("intervals", {}), done.get("stale", {})
    done["stale"] = {}  # found again each time: a task re-run on its new data is no longer stale
    for task, rows in done.get("table", {}).items():
        if only is not None and task not in only:  # not asked for: its intervals as they were
            out[task] = kept.get(task, {})
            if task in stale:
                done["stale"][task] = stale[task]
            continue
        started = time.perf_counter()
        try:
            out[task] = _task_intervals(done, task, rows)
            print(f"{task}: intervals in {time.perf_counter() - started:.0f} s", flush=True)
        except grid.ItemsChanged as error:
            done.setdefault("stale", {})[task] = str(error)
            print(f"{task}: no intervals ({error})")
    return {task: at for task, at in out.items() if at}


def _task_intervals(done: dict, task: str, rows: dict) -> dict:
    """intervals for one task: {size: {"a - b": interval}}. A row whose model folder is not on
    this machine (runs/self, made by a command and not committed) keeps the intervals it had."""
    out: dict = {}
    items = _items(done, task)
    models = [m for m in rows if m != "baselines" and "epochs" not in m]
    absent = {m for m in models if not _on_this_machine(MODELS[m].source)}
    for size in ORDER:
        found = {m: None if m in absent else items.row(m, size) for m in models}
        at = {}
        for model, b in found.items():
            a = found.get(random_partner(model) or "")
            if b and a and len(b) == len(a) and len(b[0]) == len(a[0]):
                at[f"{model} - {random_partner(model)}"] = paired(task, a, b, both=True)
        for model, b in found.items():  # more text: the same recipe on 14 times the words
            for more, less in MORE_TEXT.items():
                if model.startswith(more):
                    a = found.get(less + model.removeprefix(more))
                    if b and a and len(b) == len(a) and len(b[0]) == len(a[0]):
                        at[f"{model} - {less}{model.removeprefix(more)}"] = paired(
                            task, a, b, both=True
                        )
        for model, b in found.items():  # the pooler, then the pooling: -cls minus the plain
            # row (BERT's pooled [CLS]), -mean minus -cls (the same model, seed s with seed s)
            base = model.removesuffix("-cls")
            if b and MODELS[model].head == "cls":
                for a_name, b_name in ((base, model), (model, f"{base}-mean")):
                    a, b2 = found.get(a_name), found.get(b_name)
                    if a and b2 and len(a) == len(b2):
                        at[f"{b_name} - {a_name}"] = paired(task, a, b2, both=True)
        for model, b in found.items():
            if b and MODELS[model].head != "probe":
                for rule, a in _rules(items, done, task, model, size).items():
                    at[f"{model} - {rule}"] = paired(task, a, b, both=True, test=False)
        old = done.get("intervals", {}).get(task, {}).get(size, {})
        for pair, interval in old.items():  # a pair with an absent row: as it was
            if pair not in at and any(m in absent for m in re.split(r" - ", pair)):
                at[pair] = interval
        if at:
            out[size] = at
    return out


def _on_this_machine(source: str) -> bool:
    """Whether a row's model folder is here (runs/self is made by a command, never committed)."""
    from minibert.recipes.shared import model_folder

    try:
        model_folder(source)
    except FileNotFoundError:
        return False
    return True


def _rules(items: TestItems, done: dict, task: str, model: str, size: str) -> dict[str, list]:
    """Each rule built from the training items of each of the row's reported runs (seeds x items),
    on the test items as the row's tokenizer cuts them (a label per text: MiniLM's; the same)."""
    row = done["table"][task][model][size]
    seeds = [int(key.split("/")[4]) for key in row["runs"]]
    source = "minilm" if tasks.get(task).shape == "text" else MODELS[model].source
    names = [b.name for b in tasks.get(task).baselines]
    return {n: [items.rule(n, source, _size(size), s) for s in seeds] for n in names}


def report(done: dict, out: Path = OUT, only: list[str] | None = None) -> None:
    """Print the table (test means, the seeds' spread, chosen rates, restarts) and the paired
    intervals, write them into the results file and draw the figure."""
    done["intervals"] = intervals(done, only)
    done["restarts"] = restart_summary(done)
    for task, rows in done.get("table", {}).items():
        headline = Measure.of(task).headline
        print(f"\n{task}: test {headline}, mean of the reported seeds (sample sd; chosen lr)")
        for name, value in rows.get("baselines", {}).items():
            print(f"  {name:<26} {value:8.3f}")
        for model, by_size in rows.items():
            if model == "baselines":
                continue
            cells = [
                f"{s}: {by_size[s]['mean']:.3f} ({by_size[s]['std']:.3f}; "
                f"{by_size[s]['lr']:g}){' T' * bool(by_size[s].get('trivial'))}"
                for s in ORDER
                if s in by_size
            ]
            print(f"  {model:<26} " + "   ".join(cells))
        for size, by_name in done.get("baselines_by_size", {}).get(task, {}).items():
            print(
                f"  baselines from the {size} items a run saw (mean of the seeds' subsets): "
                + ", ".join(f"{n} {statistics.mean(v):.3f}" for n, v in by_name.items())
            )
        for size, pairs in done["intervals"].get(task, {}).items():
            for name, p in pairs.items():
                seeds = (
                    f"; seeds too [{p['seeds_low']:+.3f}, {p['seeds_high']:+.3f}]"
                    if "seeds_low" in p
                    else ""
                )
                test = f" p={p['p']:.4f}" if "p" in p else ""
                print(
                    f"  {size:>4} {name:<28} {p['difference']:+.3f} "
                    f"[{p['low']:+.3f}, {p['high']:+.3f}]{test}{seeds}"
                )
    summary = done["restarts"]
    print(
        f"\n{summary['restarted']} of {summary['reported']} reported runs restarted "
        f"({summary['restarts_run']} restarts), {summary['left_the_trivial_level']} left the "
        f"trivial level; still trivial after every restart: "
        f"{', '.join(summary['still_trivial_after_restarts']) or 'none'}; trivial, restarts not "
        f"run: {', '.join(summary['trivial_restarts_not_run']) or 'none'}"
    )
    results_file.save(done, out)
    plot(done, out.with_suffix(".png"))


def restart_summary(done: dict) -> dict:
    """How many reported runs needed a restart, and which cells still hold a run at the trivial
    level: after every restart, or with restarts not run here (a stale task is left out)."""
    stale = done.get("stale", {})
    places = [
        (f"{task}/{model}/{size}", k)
        for task, by_model in done.get("table", {}).items()
        if task not in stale
        for model, by_size in by_model.items()
        if model != "baselines"
        for size, row in by_size.items()
        for k in row.get("seeds", ())
    ]
    return {
        "rule": "seed 0 chooses the rate and is not reported; seeds 1 and 2 are; a reported run "
        "at the trivial level on dev (Selection.near_trivial) is restarted with seeds 101-103 "
        "(seed 2: 201-203), the first restart that leaves it kept; test never chooses "
        "(benchmarks/common/restarts.py). A model minus a rule: the rule built from the training "
        "items of the model's own runs (seed k's subset against seed k's run), as model minus "
        "model, the items' interval and the seeds' too",
        "reported": len(places),
        "restarted": sum(bool(k["tried"]) for _, k in places),
        "restarts_run": sum(len(k["tried"]) for _, k in places),
        "left_the_trivial_level": sum(bool(k["tried"]) and not k["trivial"] for _, k in places),
        "still_trivial_after_restarts": sorted(
            {cell for cell, k in places if k["trivial"] and k["complete"]}
        ),
        "trivial_restarts_not_run": sorted(
            {cell for cell, k in places if k["trivial"] and not k["complete"]}
        ),
        "stale_tasks": sorted(stale),
    }


def plot(done: dict, path: Path) -> None:
    """Each task's test score against the training size, a line per model, baselines dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = done["table"]
    colours = {
        "minilm": "C0",
        "course": "C1",
        "scratch": "C2",
        "course-reviews": "C5",
        "minilm-scratch": "C6",
        "self": "C4",
        "self-scratch": "C3",
    }
    columns = min(3, len(table))
    lines = -(-len(table) // columns)
    fig, axes = plt.subplots(lines, columns, figsize=(5 * columns, 4 * lines), squeeze=False)
    for ax in axes.flat[len(table) :]:
        ax.set_visible(False)
    for ax, (task, rows) in zip(axes.flat, table.items()):
        for i, (name, value) in enumerate(rows.get("baselines", {}).items()):
            ax.axhline(value, ls="--", color=f"C{7 + i}", label=name)
        ticks = [s for s in ORDER if any(s in r for m, r in rows.items() if m != "baselines")]
        for j, (model, by_size) in enumerate(sorted(rows.items())):
            if model == "baselines":
                continue
            sizes = [s for s in ticks if s in by_size]
            x = [ticks.index(s) + (0.06 * j if "epochs" in model else 0) for s in sizes]
            ax.errorbar(
                x,
                [by_size[s]["mean"] for s in sizes],
                yerr=[by_size[s]["std"] for s in sizes],
                marker="o",
                label=model,
                color=colours.get(model, f"C{3 + j % 2}"),
                capsize=3,
            )
        ax.set_xticks(range(len(ticks)), ticks)
        ax.set_title(f"{task}: test {Measure.of(task).headline} (bars: sd of the seeds)")
        ax.set_xlabel("training items")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
