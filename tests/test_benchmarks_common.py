"""The benchmarks' shared base (benchmarks/common): the restart rule and the reported seeds, and
that no benchmark script leans on another script."""

import ast
import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from common import course_recipe, grid, restarts  # noqa: E402

from minibert.tasks.registry import Selection, label_scores  # noqa: E402

SCRIPTS = sorted(BENCHMARKS.glob("*.py"))


def _imported(path: Path) -> set[str]:
    """The top-level names of every module the file imports, wherever the import statement sits."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_no_benchmark_script_imports_another(path):
    """A script takes what it shares from benchmarks/common, never from another script."""
    scripts = {p.stem for p in SCRIPTS}
    assert not _imported(path) & scripts, f"{path.name} imports {_imported(path) & scripts}"


def test_the_common_base_imports_no_script():
    scripts = {p.stem for p in SCRIPTS}
    for path in sorted((BENCHMARKS / "common").glob("*.py")):
        assert not _imported(path) & scripts, path.name


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_no_script_declares_a_global_or_chains_on_a_task_name(path):
    """Module state is set once where it is defined; what differs between tasks comes from the
    task, not from `if task == ...`."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Global)], path.name
    assert "if task ==" not in source, path.name


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_no_script_patches_the_package(path):
    """A script reaches minibert through its functions and its CLI, never by running it from a
    code string (runpy) or by setting a name in one of its modules."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert "runpy" not in _imported(path), path.name
    package = {
        (alias.asname or alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom | ast.Import)
        for alias in node.names
        if (getattr(node, "module", None) or alias.name).startswith("minibert")
    }
    set_in = [
        f"{target.value.id}.{target.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id in package
    ]
    assert not set_in, f"{path.name} sets {set_in}"


@pytest.mark.slow
def test_the_scale_curve_pretrains_through_the_cli_on_a_written_articles_file(
    tmp_path, monkeypatch
):
    """pretraining_scale.py's runs are `python -m minibert pretrain ... --corpus FILE
    --text-fraction F` (FILE from `export`, where gensim is missing): built here, not run."""
    import subprocess

    import pretraining_scale as scale

    started = []

    class Run:  # stands for the pretraining process: records its command, ends at once
        returncode = 1

        def __init__(self, command, **kwargs):
            started.append(command)

        def poll(self):
            return self.returncode

    monkeypatch.setattr(subprocess, "Popen", Run)
    monkeypatch.setattr(scale.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(scale.signal, "signal", lambda *args: None)
    file = tmp_path / "articles.json"
    scale.pretrain_all(str(file), tmp_path / "runs", 1, None, 1, fractions=(0.125,))
    (command,) = started
    assert command[:4] == [sys.executable, "-m", "minibert", "pretrain"]
    assert command[4:-8] == scale.RECIPE
    out = tmp_path / "runs" / "text-0.125"
    expected = ["--corpus", str(file), "--text-fraction", "0.125", "--out", str(out)]
    assert command[-8:] == [*expected, "--threads", "1"]


def test_the_course_recipe_is_read_from_the_checkpoints_recipe_file():
    recipe = json.loads(
        (BENCHMARKS.parent / "data" / "course_checkpoint" / "recipe.json").read_text()
    )
    flags = course_recipe.flags()
    assert flags[flags.index("--steps") + 1] == str(recipe["steps"])
    assert flags[flags.index("--neighbour-steps") + 1] == str(recipe["neighbour_steps"])
    assert course_recipe.options()["lr"] == recipe["lr"]


def test_a_restart_replaces_a_collapsed_run_and_test_never_chooses():
    """Seed 1 collapses (dev at the trivial level); its first restart that leaves the level on dev
    is kept, even where a later restart would test better."""
    dev = {1: 0.5, 101: 0.51, 102: 0.7, 103: 0.9}  # 101 is still within the margin of 0.5
    test = {1: 0.52, 101: 0.6, 102: 0.55, 103: 0.8}
    selection = Selection("balanced_accuracy", lambda r: r, trivial=0.5)
    ran = []

    def run(seed):
        ran.append(seed)
        return {"dev": dev[seed], "test": test[seed]}

    kept, how = restarts.with_restarts(run, lambda r: selection.near_trivial(r["dev"]), 1)
    assert ran == [1, 101, 102] and kept["test"] == 0.55
    assert (how.kept, how.tried, how.trivial) == (102, [101, 102], False)
    # a seed that learned is not restarted; one that never leaves the level is marked, not dropped
    assert restarts.with_restarts(run, lambda r: False, 1)[1].tried == []
    kept, how = restarts.with_restarts(run, lambda r: True, 1)
    assert kept["test"] == 0.52 and how.trivial and how.tried == [101, 102, 103]


def test_a_restart_that_may_not_run_leaves_the_place_marked_incomplete():
    kept, how = restarts.with_restarts(lambda s: {"s": s} if s == 2 else None, lambda r: True, 2)
    assert kept == {"s": 2} and how.trivial and not how.complete and how.tried == []


class _FakeTask:
    """A label per text whose balanced accuracy is the dev measure (0.5: one label everywhere)."""

    shape = "text"
    score = staticmethod(label_scores)
    selection = Selection("balanced_accuracy", lambda r: r, trivial=0.5)
    data_version = 1


def test_a_cached_run_of_the_tasks_older_items_is_made_again(tmp_path, monkeypatch):
    """A task rebuilt since a run (its data_version raised) does not reuse the run from the cache,
    sweep runs included (they keep no predictions to tell them by); a run made now records the
    version it was measured on, and a run of the current version is reused."""
    task = _FakeTask()
    monkeypatch.setattr(grid.tasks, "get", lambda name: task)
    made = []

    def fine_tune(job, lr, seed):
        made.append((lr, seed))
        return {"dev_selection": 0.8, "dev_loss": 0.5, "test": {"accuracy": 0.7}}

    job = grid.Job("fake-task", grid.Model("fake", "course", rates=(1e-3,)), 64, tmp_path, tmp_path)
    cache = grid.RunCache(tmp_path)
    cache.write(job.key(1e-3, 0), {"dev_selection": 0.9, "dev_loss": 0.1, "test": {}})  # no version
    task.data_version = 2
    run = grid._Runs(job, fine_tune).get(1e-3, 0)
    assert made == [(1e-3, 0)] and run["data_version"] == 2
    assert cache.read(job.key(1e-3, 0))["data_version"] == 2
    assert grid._Runs(job, fine_tune).get(1e-3, 0)["dev_selection"] == 0.8
    assert made == [(1e-3, 0)]  # the current version's run is read, not made again


def test_the_grid_reports_seeds_that_did_not_choose_the_rate_and_restarts_a_collapsed_one(
    tmp_path, monkeypatch
):
    """Seed 0 sweeps and chooses the rate and is not reported; seed 1 collapses on dev and its
    restart 101 is reported in its place; seed 2 learned and stands."""
    monkeypatch.setattr(grid.tasks, "get", lambda name: _FakeTask())
    dev = {0: 0.8, 1: 0.5, 2: 0.75, 101: 0.72}
    ran = []

    def fine_tune(job, lr, seed):
        ran.append((lr, seed))
        return {
            "dev_selection": dev[seed] - (0.1 if lr != 1e-3 else 0.0),
            "dev_loss": 0.5,
            "test": {"accuracy": dev[seed] - 0.05},
            "test_predictions": [seed],
        }

    model = grid.Model("fake", "course", rates=(3e-4, 1e-3, 3e-3))
    row, runs = grid.cell(grid.Job("fake-task", model, 64, tmp_path, tmp_path), fine_tune)
    assert row["lr"] == 1e-3
    assert {seed for _, seed in ran if _ != 1e-3} == {0}  # only seed 0 tried the other rates
    assert [seed for lr, seed in ran if lr == 1e-3] == [0, 1, 101, 2]
    assert row["runs"] == ["fake-task/fake/64/0.001/101", "fake-task/fake/64/0.001/2"]
    assert row["values"] == pytest.approx([0.67, 0.70])  # seed 0's 0.75 is not among them
    assert row["restarted"] == 1 and row["trivial"] == 0
    assert [s["kept"] for s in row["seeds"]] == [101, 2]
    assert restarts.CHOOSING_SEED not in restarts.REPORTED_SEEDS


def test_a_fresh_clone_reads_restarts_left_out_without_their_test_predictions(
    tmp_path, monkeypatch
):
    """The results file keeps test predictions only for the runs the table reports; seeded from it,
    a cell whose seed was restarted (seed 1 -> 101) or whose restarts all stayed trivial (seed 2)
    reads back whole with --cached-only: the restarts are judged on dev, and only the kept runs
    need their predictions."""
    monkeypatch.setattr(grid.tasks, "get", lambda name: _FakeTask())
    dev = {0: 0.8, 1: 0.5, 101: 0.72, 2: 0.5, 201: 0.5, 202: 0.5, 203: 0.5}
    model = grid.Model("fake", "course", rates=(3e-4, 1e-3, 3e-3))
    job = grid.Job("fake-task", model, 64, tmp_path / "cache", tmp_path)
    kept = {job.key(1e-3, 101), job.key(1e-3, 2)}
    cache = grid.RunCache(job.cache)
    for lr in model.rates:
        for seed, measure in dev.items():
            if seed == 0 or lr == 1e-3:
                run = {"dev_selection": measure - (0.1 if lr != 1e-3 else 0.0), "dev_loss": 0.5}
                run |= {"test": {"accuracy": measure - 0.05}, "data_version": 1}
                key = job.key(lr, seed)
                cache.write(key, run | ({"test_predictions": [seed]} if key in kept else {}))

    def fine_tune(job, lr, seed):
        raise AssertionError(f"nothing should run, ran {lr} {seed}")

    for cached_only in (True, False):
        job = grid.Job(
            "fake-task", model, 64, tmp_path / "cache", tmp_path, cached_only=cached_only
        )
        row, _ = grid.cell(job, fine_tune)
        assert row["runs"] == sorted(kept)
        assert [(s["kept"], s["trivial"], s["complete"]) for s in row["seeds"]] == [
            (101, False, True),
            (2, True, True),
        ]
        assert row["restarted"] == 2 and row["trivial"] == 1
