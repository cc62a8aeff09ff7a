"""A grid of fine-tuning runs under one protocol, shared by the benchmarks that fine-tune: a model
row (``Model``), one cell of the grid (``Job``: a model at a training size and number of epochs),
the run cache (``RunCache``: one file per run, so an interrupted grid resumes), the cell's rate
chosen on dev and its reported seeds with restarts (``cell``, rules in ``restarts``), and the
paired statistics over the test items (``TestItems``, ``paired``).

What differs between tasks comes from the task (``minibert.tasks.get(name)``): its headline
measure and what one test item contributes to it (``Measure``), never from the task's name.
"""

from __future__ import annotations

import json
import platform
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from common import restarts
from minibert import finetuning, recipes, squad, tasks
from minibert.recipes.sweep_recipe import Trial, choose_lr
from minibert.tasks.registry import label_scores
from minibert.tokenization import BertTokenizer

EPOCHS, SMALL_STEPS, BATCH = 3, 100, 16  # a small subset still gets this many steps (more epochs)
SMALL_RATES = (3e-4, 1e-3, 3e-3)  # the course-size models' rates
PROBE_RATES = (1e-2, 3e-2, 1e-1)  # a linear head on fixed features: larger steps


@dataclass(frozen=True)
class Model:
    """A row of the grid: where its weights come from, whether they are replaced by random ones of
    the same size and vocabulary (scratch), the rates its sweep starts from, and its head:
    "pooler" (BERT's pooler on [CLS]), "mean" (the tokens' mean), "cls" (the raw [CLS] vector
    without the pooler), or "probe" (a linear head on frozen features: the mean, or each word's
    own)."""

    name: str
    source: str  # a model name (minilm, course, ...) or a folder
    scratch: bool = False
    rates: tuple[float, ...] = SMALL_RATES
    head: str = "pooler"
    partner: str | None = None  # the row of random weights of its size and vocabulary

    def options(self, task: tasks.Task) -> dict[str, Any]:
        """recipes.finetune's options for this head on the task."""
        if self.head == "probe":  # a sentence task's probe reads the mean, a token task's each word
            pooling = {"pooling": "mean"} if task.shape == "text" else {}  # refused for the rest
            return {"freeze_encoder": True, **pooling, "dropout": 0.0}
        return {} if self.head == "pooler" else {"pooling": self.head}


HEADS = {"": "pooler", "-mean": "mean", "-cls": "cls", "-probe": "probe"}  # row suffix -> head


def models(bases: dict[str, tuple[str, bool, tuple[float, ...]]], random: dict[str, str]) -> dict:
    """Every row of the bases (name -> (source, scratch, rates)) with each head: "course",
    "course-mean", "course-cls", "course-probe"; each pretrained row's partner is random weights
    of its own size and vocabulary (random[name], or "scratch"), with the same head."""
    out = {}
    for name, (source, scratch, rates) in bases.items():
        for suffix, head in HEADS.items():
            partner = None if scratch else random.get(name, "scratch") + suffix
            out[name + suffix] = Model(
                name + suffix,
                source,
                scratch,
                PROBE_RATES if head == "probe" else rates,
                head,
                partner,
            )
    return out


@dataclass(frozen=True)
class Job:
    """One cell of the grid: a model at a training size (None: all) and number of epochs, under the
    protocol of ``restarts`` (or another one: the seeds reported, the restarts allowed)."""

    task: str
    model: Model
    size: int | None
    cache: Path
    work: Path
    epochs: int = EPOCHS
    cached_only: bool = False  # nothing runs: a reported run missing from the cache is an error
    choosing_seed: int = restarts.CHOOSING_SEED
    reported_seeds: tuple[int, ...] = restarts.REPORTED_SEEDS
    restarts: int = restarts.RESTARTS

    def key(self, lr: float, seed: int) -> str:
        return run_key(self.task, self.model.name, self.size, lr, seed, self.epochs)


def run_key(task: str, model: str, size: int | None, lr: float, seed: int, epochs: int) -> str:
    """A run's name in the cache and the results file: task/model/size/lr/seed[/Nep]."""
    extra = "" if epochs == EPOCHS else f"/{epochs}ep"
    return f"{task}/{model}/{size or 'all'}/{lr:g}/{seed}{extra}"


def row_key(model: str, epochs: int) -> str:
    """A row's name in the table: the model, and its epochs where they are not EPOCHS."""
    return model if epochs == EPOCHS else f"{model}, {epochs} epochs"


@dataclass
class RunCache:
    """One JSON file per run in a folder (its key with / as _), written as soon as the run ends."""

    folder: Path

    def file(self, key: str) -> Path:
        return self.folder / (key.replace("/", "_") + ".json")

    def read(self, key: str) -> dict | None:
        file = self.file(key)
        return json.loads(file.read_text()) if file.exists() else None

    def write(self, key: str, run: dict) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.file(key).write_text(json.dumps(run) + "\n")

    def seed_from(self, results: Path) -> int:
        """Write each run of a results file that the folder lacks into it, so that a fresh clone
        resumes from the committed runs instead of running them again. Returns how many."""
        runs = json.loads(results.read_text())["runs"] if results.exists() else {}
        missing = {key: run for key, run in runs.items() if not self.file(key).exists()}
        for key, run in missing.items():
            self.write(key, run)
        return len(missing)

    def gather(self, results: Path) -> dict:
        """The results file (or an empty one), with every run in the folder added to its runs."""
        done = json.loads(results.read_text()) if results.exists() else {"runs": {}, "table": {}}
        for file in sorted(self.folder.glob("*.json")) if self.folder.exists() else []:
            done["runs"].setdefault(file.stem.replace("_", "/"), json.loads(file.read_text()))
        return done


def fine_tune(job: Job, lr: float, seed: int) -> dict:
    """One run: the kept evaluation's dev measure and loss, its test scores and predictions."""
    task = tasks.get(job.task)
    steps = None if job.size is None else max(SMALL_STEPS, job.epochs * job.size // BATCH)
    folder = job.work / job.key(lr, seed).replace("/", "_")
    result = recipes.finetune(
        folder,
        model=job.model.source,
        task=job.task,
        scratch=job.model.scratch,
        lr=lr,
        seed=seed,
        train_examples=job.size,
        **job.model.options(task),
        batch_size=BATCH,
        steps=steps,
        epochs=job.epochs,
        evaluations=max(3, min(job.epochs, 10)),
        progress=False,
        overwrite=True,
    )
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


def _data_version(task: str) -> int:
    """The version of the task's items that a run made now is measured on."""
    return tasks.get(task).data_version


@dataclass
class _Runs:
    """A cell's runs, read from the cache or made (and written there) as they are asked for."""

    job: Job
    run: Callable[[Job, float, int], dict]
    made: dict[str, dict] = field(default_factory=dict)

    def get(self, lr: float, seed: int, predictions: bool = False, may_run: bool = True):
        """The run at lr and seed; a run seeded from the results file without its test
        predictions serves a sweep, but one the table shows is run again (the paired statistics
        need them). None where it would have to run and may not."""
        key = self.job.key(lr, seed)
        cache = RunCache(self.job.cache)
        found = cache.read(key)
        if found is not None and found.get("data_version", 1) != _data_version(self.job.task):
            found = None  # made on the task's older items (a sweep run keeps no predictions)
        if found is not None and (not predictions or "test_predictions" in found):
            self.made[key] = found
            return found
        if self.job.cached_only:
            if may_run:
                raise LookupError(f"{key} has not run (--cached-only)")
            return None
        started = time.perf_counter()
        made = self.run(self.job, lr, seed)
        made["wall_seconds"] = round(time.perf_counter() - started, 1)
        made["data_version"] = _data_version(self.job.task)
        cache.write(key, made)
        self.made[key] = made
        measure = Measure.of(self.job.task).headline
        print(
            f"{key}: test {measure} {made['test'][measure]:.3f} ({made['wall_seconds']:.0f} s)",
            flush=True,
        )
        return made


def cell(job: Job, run: Callable[[Job, float, int], dict] = fine_tune) -> tuple[dict, dict]:
    """One model at one size and number of epochs: the rate chosen on dev with the choosing seed,
    then each reported seed at it, restarted while at the trivial level on dev (``restarts``).
    Returns (the table's row, the runs made or found)."""
    runs = _Runs(job, run)
    task = tasks.get(job.task)
    selection = task.selection

    def trial(lr: float) -> Trial:
        r = runs.get(lr, job.choosing_seed)
        loss = r["dev_loss"] if r["dev_loss"] is not None else float("nan")
        return Trial(lr, r["dev_selection"], loss)

    swept = choose_lr(
        trial,
        job.model.rates,
        measure=selection.name,
        higher_is_better=selection.higher_is_better,
        widen=2,
    )
    lr = swept.chosen.lr
    kept, how = [], []
    for seed in job.reported_seeds:
        _, k = restarts.with_restarts(  # judged on dev: a run left out needs no test predictions
            lambda s, first=seed: runs.get(lr, s, may_run=s == first),
            lambda r: selection.near_trivial(r["dev_selection"]),
            seed,
            job.restarts,
        )
        kept.append(runs.get(lr, k.kept, predictions=True))  # the paired statistics read them
        how.append(k)
    measure = Measure.of(job.task).headline
    values = [r["test"][measure] for r in kept]
    row = {
        "lr": lr,
        "mean": statistics.mean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "values": values,
        "sweep": swept.as_dict(),
        "runs": [job.key(lr, k.kept) for k in how],
    }
    if job.choosing_seed not in job.reported_seeds:  # this protocol's record of its seeds
        row["seeds"] = [k.as_dict() for k in how]
        row["restarted"] = sum(bool(k.tried) for k in how)
        row["trivial"] = sum(k.trivial for k in how)
    return row, runs.made


@dataclass(frozen=True)
class Measure:
    """A task's headline test measure and what one test item adds to it, for the paired
    statistics: 0/1 (a label per text), an F1 per item (SQuAD), or (tp, fp, fn) counts per
    sentence (spans, or the positive label's words) whose summed F1 is the task's."""

    headline: str  # the test score the table shows
    item_scores: Callable[[list, list], list]  # (gold, predictions) -> one entry per item
    counts: bool = False  # entries are (tp, fp, fn): the bootstrap takes the F1 of their sums
    scale: float = 1.0  # the table's unit (SQuAD's F1 is a percentage)

    @staticmethod
    def of(task_name: str) -> Measure:
        task = tasks.get(task_name)
        if task.shape == "span":
            return Measure("f1", _squad_f1, scale=100.0)
        if task.shape == "words":
            spans = task.score is not label_scores  # CoNLL span counts, or label 1's words
            return Measure("f1", _span_counts if spans else word_counts, counts=True)
        return Measure("accuracy", _correct)


def _correct(gold: list, predictions: list) -> list[float]:
    return [float(g == p) for g, p in zip(gold, predictions, strict=True)]


def _squad_f1(gold: list, predictions: list) -> list[float]:
    return [squad.f1(p or "", g) for g, p in zip(gold, predictions, strict=True)]  # in [0, 1]


def _span_counts(gold: list, predictions: list) -> list[list[int]]:
    from minibert.tasks.mentions import span_counts  # (right, guessed, wanted)

    counts = (span_counts([g], [p]) for g, p in zip(gold, predictions, strict=True))
    return [[right, guessed - right, wanted - right] for right, guessed, wanted in counts]


def word_counts(gold: list, predicted: list) -> list[list[int]]:
    """(tp, fp, fn) of label 1 (a capitalised word) in each test sentence."""
    out = []
    for labels, guesses in zip(gold, predicted, strict=True):
        pairs = list(zip(labels, guesses, strict=True))
        out.append(
            [
                sum(y == p == 1 for y, p in pairs),
                sum(p == 1 != y for y, p in pairs),
                sum(y == 1 != p for y, p in pairs),
            ]
        )
    return out


def paired(
    task: str, a: list, b: list, resample_seeds: bool = False, both: bool = False, test: bool = True
) -> dict:
    """b - a with its 95% paired bootstrap interval and a paired test (a, b: seeds x items); with
    resample_seeds the interval draws the seeds too (the runs' variation, not only the items');
    with both, the items' interval and the seeds-and-items one (seeds_low, seeds_high); without
    test, no p-value (the permutation test is the slow part)."""
    measure = Measure.of(task)
    bootstrap = finetuning.paired_bootstrap_f1 if measure.counts else finetuning.paired_bootstrap
    gap, low, high = bootstrap(a, b, resample_seeds=resample_seeds)
    scale = measure.scale
    out = {"difference": gap * scale, "low": low * scale, "high": high * scale}
    if test:
        p_value = (
            finetuning.paired_permutation_test_f1
            if measure.counts
            else finetuning.paired_sign_flip_test
        )
        out["p"] = p_value(a, b)
    if both:
        _, low, high = bootstrap(a, b, resample_seeds=True)
        out |= {"seeds_low": low * scale, "seeds_high": high * scale}
    return out


class ItemsChanged(ValueError):
    """The task's test items are not those the runs predicted (its data was rebuilt since)."""


class TestItems:
    """Per-item test scores of a task's rows (seeds x items) from a results dict ({"table",
    "runs"}), the gold read once per tokenizer; and the task's rules on the same items, built from
    all the training items or from the subset a run's seed drew."""

    __test__ = False  # not a pytest class

    def __init__(self, done: dict, task: str, sources: dict[str, str]):
        self.done, self.task, self.sources = done, task, sources
        self.spec, self.measure = tasks.get(task), Measure.of(task)
        self._tokenizers: dict[str, tuple[str, BertTokenizer]] = {}  # source -> (vocab, tok)
        self._gold: dict[str, list] = {}  # by vocabulary: models that share one share the items
        self._rules: dict[tuple, dict[str, list]] = {}

    def _tokenizer(self, source: str) -> tuple[str, BertTokenizer]:
        """The source's vocabulary (its vocab.txt, the key of what is read once) and tokenizer."""
        from minibert.recipes.shared import model_folder

        if source not in self._tokenizers:
            folder = model_folder(source)
            vocab = (folder / "vocab.txt").read_text(encoding="utf-8")
            self._tokenizers[source] = (vocab, BertTokenizer.from_pretrained(folder))
        return self._tokenizers[source]

    def gold(self, source: str) -> list:
        vocab, tok = self._tokenizer(source)
        if vocab not in self._gold:
            data = self.spec.datasets(tok, self.spec.max_length, None, 0)
            self._gold[vocab] = self.spec.gold(data[2])
        return self._gold[vocab]

    def runs(self, model: str, size: str) -> list[dict] | None:
        row = self.done["table"][self.task].get(model, {}).get(size)
        return None if row is None else [self.done["runs"][k] for k in row["runs"]]

    def row(self, model: str, size: str) -> list | None:
        """The row's reported runs, per test item (seeds x items); None where it has not run."""
        found = self.runs(model, size)
        if found is None:
            return None
        gold = self.gold(self.sources[model])
        if any(len(r["test_predictions"]) != len(gold) for r in found):
            lengths = sorted({len(r["test_predictions"]) for r in found})
            raise ItemsChanged(
                f"{self.task}: {model} at {size} predicted {lengths} test items; the task has "
                f"{len(gold)} now: its data changed since these runs, so they are stale"
            )
        return [self.measure.item_scores(gold, r["test_predictions"]) for r in found]

    def rule(self, name: str, source: str, size: int | None, seed: int) -> list:
        """A baseline built from the training items that a run with this seed saw at this size
        (all of them: size None), per test item, on the words as source's tokenizer cuts them."""
        vocab, tok = self._tokenizer(source)
        key = (vocab, size, seed if size is not None else 0)  # all the items: the same for any seed
        if key not in self._rules:
            data = self.spec.datasets(tok, self.spec.max_length, size, seed)
            gold = self.spec.gold(data[2])
            self._rules[key] = {
                b.name: self.measure.item_scores(gold, b.predict(*data, tok))
                for b in self.spec.baselines
            }
        return self._rules[key][name]
