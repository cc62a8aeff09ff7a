"""The three shapes beyond one sentence: wiki-mentions (a label per word), wiki-qnli (a sentence
pair) and wiki-qa (a span of a context), each from MiniLM, the course checkpoint and random weights
of the course checkpoint's size, at several training sizes, beside the task's baselines; and the
review domain's token and sentence tasks (review-capitalisation, rotten-tomatoes), where the course
checkpoint continued on review text (course-reviews) joins them: domain crossed with task shape.
The rows: random weights of the course checkpoint's size and vocabulary (scratch), the course
checkpoint, course-reviews, the self-pretrained model (``self``: the course's architecture
pretrained on the review text alone with its own vocabulary, made in runs/self by the command in
pretraining_candidates.py's docstring, 27 minutes on one thread; ``self-scratch``: random weights
with its vocabulary), MiniLM and random weights of MiniLM's size (minilm-scratch). Each pretrained
row is compared with random weights of its own size and vocabulary. Each model also has a
frozen-feature probe (``MODEL-probe``: the encoder frozen, a linear head on the mean of a text's
last hidden states, or on each word's own, trained by the same protocol), compared with the probe
of its random partner; and, on a label per text, a fine-tuned row on that same mean (``MODEL-mean``:
the whole model trained, as the plain row, with the mean of the last hidden states for the [CLS]
vector), which tells the probe's pooling from its freezing.

    python benchmarks/finetuning_shapes.py                       # the three shapes (hours on 2 cores)
    python benchmarks/finetuning_shapes.py --tasks review-capitalisation rotten-tomatoes \
        --models course scratch course-reviews --sizes 256 1024
    python benchmarks/finetuning_shapes.py --tasks wiki-qa --models minilm --sizes all
    python benchmarks/finetuning_shapes.py --tasks wiki-qa --models minilm --sizes all --epochs 3 10 30
    python benchmarks/finetuning_shapes.py --tasks rotten-tomatoes --models course-probe scratch-probe
    python benchmarks/finetuning_shapes.py --tasks rotten-tomatoes --models course-mean scratch-mean \
        --sizes 256 1024
    python benchmarks/finetuning_shapes.py --jobs 8              # cells side by side (a GPU)
    python benchmarks/finetuning_shapes.py --report              # the table from the runs kept

Protocol: for each task, model, training size and number of epochs, the learning rate is chosen on
dev with seed 0 by ``recipes.choose_lr`` (the task's own dev measure: span F1, balanced accuracy,
exact spans in the windows that hold the answer; a tie broken by the lower dev loss; a rate at the
grid's edge widens the grid, at most twice), then seeds 1 and 2 run at that rate; the evaluation
kept within a run is chosen by the same measure; test never chooses anything. A subset of the
training items is drawn afresh for each seed. Each run is written to the cache folder as soon as it
ends (``--cache``, one file per run) and gathered into benchmarks/results/finetuning_shapes.json,
and a run already there is not run again, so an interrupted benchmark resumes; on a fresh clone the
committed results file's runs are first written into the cache, so the table's runs are not made
again. The baselines are scored on the same test items, built from all the training items and
again, at each size, from the subset each seed's run saw (``baselines_by_size``: a model is set
against the rules that had its labels). ``--report`` adds the paired intervals
(test items resampled, seeds averaged) and draws finetuning_shapes.png: each task's test score
against the training size.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import torch

from minibert import assets, recipes, tasks
from minibert.recipes.sweep_recipe import Trial, choose_lr
from minibert.tokenization import BertTokenizer

RESULTS = Path(__file__).resolve().parent / "results"
OUT = RESULTS / "finetuning_shapes.json"
CACHE = Path("runs") / "finetuning_shapes"  # one file per run (ignored by git)
SELF = Path("runs") / "self"  # made by the command in the docstring (not committed)
MODELS = {"minilm": ("minilm", False), "course": ("course", False), "scratch": ("course", True),
          "course-reviews": ("course-reviews", False), "minilm-scratch": ("minilm", True),
          "self": (str(SELF), False), "self-scratch": (str(SELF), True)}  # fmt: skip
SMALL = (3e-4, 1e-3, 3e-3)  # the course-size models' rates
RATES = {"minilm": (3e-5, 1e-4), "course": SMALL, "scratch": SMALL, "course-reviews": SMALL,
         "minilm-scratch": (1e-4, 3e-4), "self": SMALL, "self-scratch": SMALL}  # fmt: skip
RANDOM = {"minilm": "minilm-scratch", "self": "self-scratch"}  # random weights of the same size
# and vocabulary (the others': scratch); each pretrained row is compared with its own
# a frozen-feature probe of each model ("course-probe"): its encoder frozen, a linear head trained
# on the mean of a text's last hidden states (a word task: each word's own), the same protocol
# and, for a label per text, each model fine-tuned whole on that same mean ("course-mean"): the
# pooling of the probe without its freezing, so that the two can be told apart
for _name, _folder in list(MODELS.items()):
    MODELS[f"{_name}-probe"] = MODELS[f"{_name}-mean"] = _folder
    RATES[f"{_name}-probe"] = (1e-2, 3e-2, 1e-1)  # a linear head on fixed features: larger steps
    RATES[f"{_name}-mean"] = RATES[_name]
HEADLINE = {"wiki-mentions": "f1", "wiki-qnli": "accuracy", "wiki-qa": "f1",
            "review-capitalisation": "f1", "rotten-tomatoes": "accuracy"}  # test's number  # fmt: skip
COUNTED = ("review-capitalisation",)  # F1 of a label: paired statistics on per-sentence counts
SIZES = {"wiki-mentions": (64, 256, 1024, None), "wiki-qnli": (64, 256, None),
         "wiki-qa": (64, 256, None), "review-capitalisation": (64, 256, 1024, None),
         "rotten-tomatoes": (64, 256, 1024, None)}  # fmt: skip  # wiki-qnli's sizes count questions (592)
EPOCHS, SMALL_STEPS, BATCH = 3, 100, 16  # a small subset still gets this many steps (more epochs)


def run_key(task: str, model: str, size: int | None, lr: float, seed: int, epochs: int) -> str:
    extra = "" if epochs == EPOCHS else f"/{epochs}ep"
    return f"{task}/{model}/{size or 'all'}/{lr:g}/{seed}{extra}"


def row_key(model: str, epochs: int) -> str:
    return model if epochs == EPOCHS else f"{model}, {epochs} epochs"


def fine_tune(task: str, model: str, size: int | None, lr: float, seed: int, epochs: int,
              work: Path) -> dict:  # fmt: skip
    """One run: the kept evaluation's dev measure and loss, its test scores and predictions."""
    name, scratch = MODELS[model]
    steps = None if size is None else max(SMALL_STEPS, epochs * size // BATCH)
    folder = work / run_key(task, model, size, lr, seed, epochs).replace("/", "_")
    probe = {}
    if model.endswith("-probe"):
        text = tasks.get(task).shape == "text"
        probe = {"freeze_encoder": True, "pooling": "mean" if text else "cls", "dropout": 0.0}
    elif model.endswith("-mean"):  # refused by finetune for a task that labels words
        probe = {"pooling": "mean"}
    result = recipes.finetune(
        folder, model=name, task=task, scratch=scratch, lr=lr, seed=seed, train_examples=size,
        **probe,
        batch_size=BATCH, steps=steps, epochs=epochs, evaluations=max(3, min(epochs, 10)),
        progress=False, overwrite=True,
    )  # fmt: skip
    shutil.rmtree(folder, ignore_errors=True)  # the weights are not kept
    step = result.selection["step"]
    kept = next((h for h in result.history if h.get("step") == step and "eval_loss" in h), {})
    return {
        "dev_selection": result.selection["value"],
        "dev_loss": kept.get("eval_loss"),
        "steps": result.history[-1]["step"] if result.history else None,
        "kept_step": step,
        "test": {k: v for k, v in result.test.items() if k != "predictions"},
        "test_predictions": result.test["predictions"],
        "seconds": round(result.seconds, 1),
        "machine": torch.cuda.get_device_name()
        if torch.cuda.is_available()
        else f"{platform.machine()} CPU, {torch.get_num_threads()} threads",
    }


def cell(job: tuple) -> tuple[tuple, dict, dict]:
    """One model at one size and number of epochs: the rate chosen on dev (seed 0), then the
    other seeds at it. Returns (job, the table's row, the runs made or found)."""
    task, model, size, epochs, seeds, cache, work, cached_only = job
    runs: dict[str, dict] = {}

    def get(lr: float, seed: int, predictions: bool = False) -> dict:
        key = run_key(task, model, size, lr, seed, epochs)
        file = cache / (key.replace("/", "_") + ".json")
        found = json.loads(file.read_text()) if file.exists() else None
        if found is not None and (not predictions or "test_predictions" in found):
            runs[key] = found  # a run seeded from the results file without its test predictions
            # serves the sweep; in the table it is run again, as the paired statistics need them
        elif cached_only:
            raise LookupError(f"{key} has not run (--cached-only)")
        else:
            started = time.perf_counter()
            runs[key] = fine_tune(task, model, size, lr, seed, epochs, work)
            runs[key]["wall_seconds"] = round(time.perf_counter() - started, 1)
            file.write_text(json.dumps(runs[key]) + "\n")
            print(f"{key}: test {HEADLINE[task]} {runs[key]['test'][HEADLINE[task]]:.3f}"
                  f" ({runs[key]['wall_seconds']:.0f} s)", flush=True)  # fmt: skip
        return runs[key]

    def trial(lr: float) -> Trial:
        r = get(lr, 0)
        loss = r["dev_loss"] if r["dev_loss"] is not None else float("nan")
        return Trial(lr, r["dev_selection"], loss)

    selection = tasks.get(task).selection
    swept = choose_lr(trial, RATES[model], measure=selection.name,
                      higher_is_better=selection.higher_is_better, widen=2)  # fmt: skip
    lr = swept.chosen.lr
    values = [get(lr, seed, predictions=True)["test"][HEADLINE[task]] for seed in range(seeds)]
    row = {"lr": lr, "mean": statistics.mean(values),
           "std": statistics.stdev(values) if len(values) > 1 else 0.0, "values": values,
           "sweep": swept.as_dict(), "runs": [run_key(task, model, size, lr, seed, epochs)
                                              for seed in range(seeds)]}  # fmt: skip
    return job, row, runs


def _cell_or_error(job: tuple) -> tuple[tuple, dict | None, dict]:
    """cell, with a failure reported (and the other cells left to run) rather than raised."""
    try:
        return cell(job)
    except Exception as error:  # noqa: BLE001 - one broken cell must not stop a night's runs
        print(f"{job[:4]} failed: {type(error).__name__}: {error}", flush=True)
        return job, None, {}


def _worker_init(threads: int) -> None:
    torch.set_num_threads(threads)


def baselines(task_name: str) -> dict:
    """The task's baselines on its test items (tokenised as MiniLM reads them)."""
    task = tasks.get(task_name)
    tok = BertTokenizer.from_pretrained(assets.path("minilm"))
    data = task.datasets(tok, task.max_length, None, 0)
    return {n: s[HEADLINE[task_name]] for n, s in task.baseline_scores(data, tok).items()}


def baselines_by_size(task_name: str, sizes: tuple, seeds: int = 3) -> dict:
    """Each baseline built from the labelled items a model saw at each size (seed k draws the
    subset of seed k's run), scored on the test items: {size: {baseline: [a score per seed]}}."""
    task = tasks.get(task_name)
    course = task_name in AS_FINETUNING_PY  # scored at the words of finetuning.py's runs
    tok = BertTokenizer.from_pretrained(
        assets.course_checkpoint() if course else assets.path("minilm")
    )
    measure = HEADLINE.get(task_name, "f1")
    out: dict[str, dict[str, list[float]]] = {}
    for size in (s for s in sizes if s is not None):
        for seed in range(seeds):
            data = task.datasets(tok, AS_FINETUNING_PY.get(task_name, task.max_length), size, seed)
            for name, scores in task.baseline_scores(data, tok).items():
                out.setdefault(str(size), {}).setdefault(name, []).append(scores[measure])
    return out


RULES_TOO = {"review-capitalisation": "capitalisation"}  # its Wikipedia twin (finetuning.py's
# runs, lesson 8's grid) gets its baselines at the same sizes here, at the words those runs score:
AS_FINETUNING_PY = {"capitalisation": 64}  # the course's pieces, a sentence cut at 64 of them


def gather(cache: Path) -> dict:
    """The results file, with every run in the cache folder added to its runs."""
    done = json.loads(OUT.read_text()) if OUT.exists() else {"runs": {}, "table": {}}
    for file in sorted(cache.glob("*.json")) if cache.exists() else []:
        key = file.stem.replace("_", "/")
        done["runs"].setdefault(key, json.loads(file.read_text()))
    return done


def seed_cache(results: Path, cache: Path) -> int:
    """Write each run of a results file that the cache folder lacks into it, so that a fresh
    clone resumes from the committed runs instead of running them again. Returns how many."""
    runs = json.loads(results.read_text())["runs"] if results.exists() else {}
    missing = {key: run for key, run in runs.items()
               if not (cache / (key.replace("/", "_") + ".json")).exists()}  # fmt: skip
    for key, run in missing.items():
        (cache / (key.replace("/", "_") + ".json")).write_text(json.dumps(run) + "\n")
    return len(missing)


def save(done: dict) -> None:
    """Write the results file, a run per line: every run's measures, and the test predictions
    of the runs in the table (the paired statistics need them; the cache keeps the others')."""
    kept = {key for rows in done.get("table", {}).values() for row in rows.values()
            for cell in row.values() if isinstance(cell, dict) for key in cell.get("runs", ())}  # fmt: skip
    runs = {key: run if key in kept else {k: v for k, v in run.items() if k != "test_predictions"}
            for key, run in sorted(done["runs"].items())}  # fmt: skip
    head = json.dumps({k: v for k, v in done.items() if k != "runs"}, indent=1)
    lines = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}"
                       for k, v in runs.items())  # fmt: skip
    OUT.write_text(head[:-1].rstrip() + ',\n "runs": {\n' + lines + "\n }\n}\n")


def main() -> None:
    global OUT
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="*", default=list(HEADLINE)[:3], choices=list(HEADLINE))
    parser.add_argument("--models", nargs="*", default=["minilm", "course", "scratch"],
                        choices=list(MODELS))  # fmt: skip
    parser.add_argument("--sizes", nargs="*", default=None, help="training sizes ('all')")
    parser.add_argument("--epochs", nargs="*", type=int, default=[EPOCHS])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1, help="cells run side by side")
    parser.add_argument("--cache", type=Path, default=CACHE, help="one file per run")
    parser.add_argument("--out", type=Path, default=OUT, help="the results file")
    parser.add_argument("--report", action="store_true", help="the table and figure only")
    parser.add_argument("--cached-only", action="store_true",
                        help="the table's rows from the runs in the cache; nothing runs")  # fmt: skip
    args = parser.parse_args()
    OUT = args.out
    args.cache.mkdir(parents=True, exist_ok=True)
    if seeded := seed_cache(RESULTS / "finetuning_shapes.json", args.cache):
        print(f"{seeded} runs from the committed results written into {args.cache}", flush=True)
    done = gather(args.cache)
    if args.report:
        return report(done)
    device = "cuda" if torch.cuda.is_available() else platform.machine()
    done["machine"] = done.get("machine") if args.cached_only else (f"{torch.cuda.get_device_name() if torch.cuda.is_available() else device}"
                       f", {args.jobs} job(s), torch {torch.__version__}")  # fmt: skip
    table = done.setdefault("table", {})
    for task in args.tasks:
        table.setdefault(task, {})["baselines"] = baselines(task)
    rules = done.setdefault("baselines_by_size", {})
    for task in [*args.tasks, *(RULES_TOO[t] for t in args.tasks if t in RULES_TOO)]:
        rules[task] = baselines_by_size(task, SIZES.get(task, (64, 256, 1024)), args.seeds)
    jobs = []
    work = Path(tempfile.mkdtemp())
    for task in args.tasks:
        sizes = SIZES[task] if args.sizes is None else [
            None if s == "all" else int(s) for s in args.sizes]  # fmt: skip
        for epochs in args.epochs:
            for model in args.models:
                for size in sizes:
                    jobs.append((task, model, size, epochs, args.seeds, args.cache, work,
                                 args.cached_only))  # fmt: skip
    jobs.sort(key=lambda j: (-(j[2] or 10**9) * j[3], j[0] != "wiki-mentions"))  # longest first
    threads = max(1, (os.cpu_count() or 2) // args.jobs)
    pool = (multiprocessing.get_context("spawn").Pool(args.jobs, _worker_init, (threads,))
            if args.jobs > 1 else None)  # fmt: skip
    results = pool.imap_unordered(_cell_or_error, jobs) if pool else map(_cell_or_error, jobs)
    started = time.perf_counter()
    for (task, model, size, epochs, *_), row, runs in results:
        done["runs"].update(runs)
        if row is not None:
            table[task].setdefault(row_key(model, epochs), {})[str(size or "all")] = row
            print(f"{task} {row_key(model, epochs)} {size or 'all'}: {row['mean']:.3f} +- "
                  f"{row['std']:.3f} (lr {row['lr']:g}; {time.perf_counter() - started:.0f} s in)",
                  flush=True)  # fmt: skip
        save(done)
    if pool:
        pool.close()
    shutil.rmtree(work, ignore_errors=True)
    report(done)


ORDER = ("64", "256", "1024", "all")


def _gold_and_baselines(task_name: str, model: str) -> tuple[list, dict[str, list]]:
    """The test items' gold answers as the model's tokenizer cuts them, and each baseline's
    predictions on them."""
    from minibert.recipes.shared import model_folder

    task = tasks.get(task_name)
    tok = BertTokenizer.from_pretrained(model_folder(MODELS[model][0]))
    data = task.datasets(tok, task.max_length, None, 0)
    predicted = {b.name: b.predict(*data, tok) for b in task.baselines}
    return task.gold(data[2]), predicted


def per_item(task: str, gold: list, predictions: list) -> list:
    """What the paired statistics resample: a 0/1 or an F1 per test item, or (tp, fp, fn) counts
    (wiki-mentions: spans; review-capitalisation: capitalised words)."""
    from minibert import squad
    from minibert.tasks.mentions import span_counts

    if task == "wiki-mentions":  # span_counts gives (right, guessed, wanted)
        counts = (span_counts([g], [p]) for g, p in zip(gold, predictions))
        return [[right, guessed - right, wanted - right] for right, guessed, wanted in counts]
    if task in COUNTED:  # F1 of the capitalised words: (tp, fp, fn) per sentence
        from finetuning import word_counts  # benchmarks/finetuning.py, beside this file

        return word_counts(gold, predictions)
    if task == "wiki-qa":
        return [squad.f1(p or "", g) for g, p in zip(gold, predictions)]  # in [0, 1]
    return [float(g == p) for g, p in zip(gold, predictions)]


def paired(task: str, a: list, b: list, resample_seeds: bool = False, both: bool = False) -> dict:
    """b - a with its 95% paired bootstrap interval and a paired test (a, b: seeds x items); with
    resample_seeds the interval draws the seeds too (the runs' variation, not only the items');
    with both, the items' interval and the seeds-and-items one (seeds_low, seeds_high)."""
    from minibert import finetuning

    f1 = task in COUNTED or task == "wiki-mentions"
    bootstrap = finetuning.paired_bootstrap_f1 if f1 else finetuning.paired_bootstrap
    test = finetuning.paired_permutation_test_f1 if f1 else finetuning.paired_sign_flip_test
    gap, low, high = bootstrap(a, b, resample_seeds=resample_seeds)
    scale = 100 if task == "wiki-qa" else 1  # in the table's unit (SQuAD: percent)
    out = {"difference": gap * scale, "low": low * scale, "high": high * scale, "p": test(a, b)}
    if both:
        _, low, high = bootstrap(a, b, resample_seeds=True)
        out |= {"seeds_low": low * scale, "seeds_high": high * scale}
    return out


class _TestItems:
    """Per-item test scores of a task's rows (seeds x items), the gold and baselines read once
    per tokenizer."""

    def __init__(self, done: dict, task: str):
        self.done, self.task, self.gold, self.baselines = done, task, {}, {}

    def _read(self, model: str) -> None:
        if model not in self.gold:
            self.gold[model], self.baselines[model] = _gold_and_baselines(self.task, model)

    def row(self, model: str, size: str) -> list | None:
        row = self.done["table"][self.task].get(model, {}).get(size)
        if row is None:
            return None
        self._read(model)
        keys = [run_key(self.task, model, None if size == "all" else int(size), row["lr"], s,
                        EPOCHS) for s in range(len(row["values"]))]  # fmt: skip
        return [per_item(self.task, self.gold[model], self.done["runs"][k]["test_predictions"])
                for k in keys]  # fmt: skip

    def baseline(self, name: str, seeds: int) -> list:
        self._read("minilm")
        return [per_item(self.task, self.gold["minilm"], self.baselines["minilm"][name])] * seeds


def random_partner(model: str) -> str | None:
    """The row a model is compared with: random weights of its own size and vocabulary, trained
    the same way (a probe with a probe); None for a row of random weights."""
    kind = next((k for k in ("-probe", "-mean") if model.endswith(k)), "")
    base = model.removesuffix(kind) if kind else model
    if base.endswith("scratch"):
        return None
    return RANDOM.get(base, "scratch") + kind


def intervals(done: dict) -> dict:
    """For every task and size: each pretrained row minus random weights of its size and
    vocabulary (``random_partner``), paired over the test items with the seeds averaged, and over
    the seeds and the items (a's and b's seed s drawn together: the same training subset); and
    MiniLM minus each baseline, over the items."""
    out: dict = {}
    for task, rows in done.get("table", {}).items():
        items = _TestItems(done, task)
        models = [m for m in rows if m != "baselines" and "epochs" not in m]
        for size in ORDER:
            found = {m: items.row(m, size) for m in models}
            for model, b in found.items():
                a = found.get(random_partner(model) or "")
                if b and a and len(b) == len(a) and len(b[0]) == len(a[0]):
                    name = f"{model} - {random_partner(model)}"
                    out.setdefault(task, {}).setdefault(size, {})[name] = paired(
                        task, a, b, both=True
                    )
            if found.get("minilm"):
                for base in rows.get("baselines", {}):
                    a = items.baseline(base, len(found["minilm"]))
                    out.setdefault(task, {}).setdefault(size, {})[f"minilm - {base}"] = paired(
                        task, a, found["minilm"]
                    )
    return out


def report(done: dict) -> None:
    """Print the table (test means, the seeds' spread, chosen rates) and the paired intervals,
    write them into the results file and draw the figure."""
    done["intervals"] = intervals(done)
    for task, rows in done.get("table", {}).items():
        print(f"\n{task}: test {HEADLINE[task]}, mean of the seeds (sample sd; chosen lr)")
        for name, value in rows.get("baselines", {}).items():
            print(f"  {name:<26} {value:8.3f}")
        for model, by_size in rows.items():
            if model == "baselines":
                continue
            cells = [f"{s}: {by_size[s]['mean']:.3f} ({by_size[s]['std']:.3f}; {by_size[s]['lr']:g})"
                     for s in ORDER if s in by_size]  # fmt: skip
            print(f"  {model:<26} " + "   ".join(cells))
        for size, by_name in done.get("baselines_by_size", {}).get(task, {}).items():
            print(f"  baselines from the {size} items a run saw (mean of the seeds' subsets): "
                  + ", ".join(f"{n} {statistics.mean(v):.3f}" for n, v in by_name.items()))  # fmt: skip
        for size, pairs in done["intervals"].get(task, {}).items():
            for name, p in pairs.items():
                seeds = (f"; seeds too [{p['seeds_low']:+.3f}, {p['seeds_high']:+.3f}]"
                         if "seeds_low" in p else "")  # fmt: skip
                print(f"  {size:>4} {name:<28} {p['difference']:+.3f} "
                      f"[{p['low']:+.3f}, {p['high']:+.3f}] p={p['p']:.4f}{seeds}")  # fmt: skip
    save(done)
    plot(done, OUT.with_suffix(".png"))


def plot(done: dict, path: Path) -> None:
    """Each task's test score against the training size, a line per model, baselines dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = done["table"]
    colours = {"minilm": "C0", "course": "C1", "scratch": "C2", "course-reviews": "C5",
               "minilm-scratch": "C6", "self": "C4", "self-scratch": "C3"}  # fmt: skip
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
            ax.errorbar(x, [by_size[s]["mean"] for s in sizes],
                        yerr=[by_size[s]["std"] for s in sizes], marker="o", label=model,
                        color=colours.get(model, f"C{3 + j % 2}"), capsize=3)  # fmt: skip
        ax.set_xticks(range(len(ticks)), ticks)
        ax.set_title(f"{task}: test {HEADLINE[task]} (bars: sd of 3 seeds)")
        ax.set_xlabel("training items")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
