"""The learning rate chosen on dev: the measure, ties, the grid's edge (minibert.recipes.sweep)."""

import json

import pytest
from conftest import cli

from minibert import finetuning
from minibert.recipes import Trial, choose_lr, sweep


def recorded(labels: list[int], predictions: list[int]) -> dict[str, float]:
    """An evaluation record as classification_metrics leaves it: eval_recall_K per label."""
    record = {}
    for k in (0, 1):
        mine = [p for y, p in zip(labels, predictions) if y == k]
        record[f"eval_recall_{k}"] = sum(p == k for p in mine) / len(mine)
    record["eval_accuracy"] = sum(y == p for y, p in zip(labels, predictions)) / len(labels)
    return record


def test_balanced_accuracy_chooses_the_model_that_learned_on_an_imbalanced_dev_set():
    labels = [1] * 58 + [0] * 42  # dev as imbalanced as the reviews' (58% fresh)
    collapsed = [1] * 100  # the rate that diverged: "fresh" for everything
    learned = [1] * 40 + [0] * 18 + [0] * 30 + [1] * 12  # 70 right, both labels recalled
    records = {1e-3: recorded(labels, learned), 1e-2: recorded(labels, collapsed)}
    assert records[1e-2]["eval_accuracy"] > records[1e-3]["eval_accuracy"] - 0.2  # 58% vs 70%
    by_accuracy = choose_lr(lambda lr: Trial(lr, records[lr]["eval_accuracy"] + (lr > 5e-3) * 0.2, 0.6),
                            [1e-3, 1e-2], widen=0)  # fmt: skip
    assert by_accuracy.chosen.lr == 1e-2  # a measure a collapsed model can win (here, by design)

    def run(lr: float) -> Trial:
        return Trial(lr, finetuning.balanced_accuracy(records[lr]), 0.6)

    chosen = choose_lr(run, [1e-3, 1e-2], measure="balanced_accuracy", widen=0)
    assert finetuning.balanced_accuracy(records[1e-2]) == 0.5  # whatever the balance
    assert chosen.chosen.lr == 1e-3 and chosen.ties == [] and chosen.at_edge


def test_a_tie_goes_to_the_lower_dev_loss_and_is_reported():
    measures = {1e-4: (0.61, 0.66), 3e-4: (0.5, 0.69), 1e-3: (0.61, 0.64), 3e-3: (0.5, 0.70)}
    ran = []

    def run(lr):
        ran.append(lr)
        return Trial(lr, *measures[lr])

    result = choose_lr(run, [1e-4, 3e-4, 1e-3, 3e-3], measure="balanced_accuracy")
    assert result.chosen.lr == 1e-3 and result.ties == [1e-4]
    assert result.widened == [] and not result.at_edge and ran == [1e-4, 3e-4, 1e-3, 3e-3]
    assert (
        "tied on dev balanced_accuracy with lr 0.0001: the lower dev loss kept" in result.report()
    )
    same_loss = choose_lr(lambda lr: Trial(lr, 0.5, 0.69), [1e-4, 1e-3], widen=0)
    assert same_loss.chosen.lr == 1e-4 and same_loss.ties == [1e-3]  # then the smaller rate


def test_a_best_rate_at_the_edge_widens_the_grid_at_its_ratio():
    best_at = 1e-2  # the measure rises up to 1e-2, then falls

    def run(lr):
        return Trial(lr, -abs(lr - best_at), 0.5)

    result = choose_lr(run, [1e-4, 3e-4, 1e-3], widen=3)
    # 1e-3 * (1e-3 / 3e-4) = 0.00333 wins at the edge, then 0.0111 does; 0.037 loses: it stops
    assert result.widened == [0.00333, 0.0111, 0.037]
    assert result.chosen.lr == 0.0111 and not result.at_edge
    low = choose_lr(lambda lr: Trial(lr, -lr, 0.5), [1e-4, 1e-3], widen=1)
    assert low.widened == [1e-5] and low.chosen.lr == 1e-5 and low.at_edge
    assert "still at the edge" in low.report()
    lower_is_better = choose_lr(lambda lr: Trial(lr, lr, 0.5), [1e-4, 1e-3], higher_is_better=False,
                                widen=0)  # fmt: skip
    assert lower_is_better.chosen.lr == 1e-4


@pytest.mark.parametrize("grid", [[1e-3], [1e-3, 1e-3], [0.0, 1e-3]])
def test_a_grid_needs_two_different_positive_rates(grid):
    with pytest.raises(ValueError, match="at least two different positive rates"):
        choose_lr(lambda lr: pytest.fail("nothing runs"), grid)


def test_sweep_fine_tunes_each_rate_and_writes_what_it_chose(tmp_path):
    result = sweep(tmp_path / "s", [1e-3, 3e-1], model="course", train_examples=64, steps=4,
                   evaluations=2, progress=False, widen=0)  # fmt: skip
    saved = json.loads((tmp_path / "s" / "sweep.json").read_text())
    assert saved["measure"] == "balanced_accuracy" and saved["chosen"] == result.chosen.lr
    assert [t["lr"] for t in saved["trials"]] == [1e-3, 0.3]
    assert set(saved["test"]) == {"0.001", "0.3"} and "accuracy" in saved["test"]["0.001"]
    for lr in ("0.001", "0.3"):
        assert (tmp_path / "s" / f"lr-{lr}" / "results.json").is_file()
    report = result.report()
    assert "<- chosen" in report and "test (1,272 snippets)" in report and "sweep.json" in report
    with pytest.raises(ValueError, match="the rates to try are its grid"):
        sweep(tmp_path / "t", [1e-3, 1e-2], lr=1e-3)


def test_the_sweep_command_refuses_lr_and_a_one_rate_grid():
    done = cli("sweep", "--out", "x", "--lrs", "1e-3", "3e-3", "--lr", "1e-3")
    assert done.returncode == 2 and "the rates to try are its grid (--lrs)" in done.stderr
    done = cli("sweep", "--out", "x", "--lrs", "1e-3")
    assert done.returncode == 2 and "at least two different positive rates" in done.stderr


def test_the_sweeps_help_offers_no_lr_and_says_the_sweep_chooses_it():
    """--lr is finetune's; the sweep's --help listed it with finetune's text."""
    from minibert.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    sweep_help, finetune_help = (commands[c].format_help() for c in ("sweep", "finetune"))
    assert "--lr LR" in finetune_help and "peak learning rate" in finetune_help
    assert "--lr LR" not in sweep_help and "peak learning rate" not in sweep_help
    words = " ".join(sweep_help.split())
    assert "--lrs LR [LR ...]" in words and "the sweep chooses the rate among them" in words


# --- a sweep resumes, every rate is checked first, and sweep.json is replaced only if ours --------

SMALL = dict(model="course", train_examples=64, steps=4, evaluations=2, progress=False, widen=0)


@pytest.mark.slow
def test_an_interrupted_sweep_resumes_reusing_the_finished_rates(tmp_path, monkeypatch):
    """After Ctrl-C, `sweep --resume` finished the current rate, then failed on the next one
    ("lr-0.003 does not exist"); a second --resume failed on the finished rate."""
    from minibert.recipes import sweep_recipe
    from minibert.recipes.outputs import RUN_FOLDER

    real, ran = sweep_recipe.finetune, []

    def interrupted(out, options=None, **changes):
        if changes["lr"] == 3e-3:  # Ctrl-C during the second rate, before its first checkpoint
            (out / RUN_FOLDER).mkdir(parents=True)
            raise KeyboardInterrupt
        ran.append(changes["lr"])
        return real(out, options, **changes)

    monkeypatch.setattr(sweep_recipe, "finetune", interrupted)
    grid = [1e-3, 3e-3, 1e-2]
    with pytest.raises(KeyboardInterrupt):
        sweep(tmp_path / "s", grid, **SMALL)
    first = json.loads((tmp_path / "s" / "lr-0.001" / "results.json").read_text())
    monkeypatch.setattr(sweep_recipe, "finetune", lambda *a, **k: ran.append(k["lr"]) or real(*a, **k))  # fmt: skip
    resumed = sweep(tmp_path / "s", grid, **SMALL, resume=True)
    assert ran == [1e-3, 3e-3, 1e-2]  # 1e-3 read from its folder, not run again
    assert [t.lr for t in resumed.trials] == grid
    assert resumed.trials[0].measure == first["selection"]["value"]
    again = sweep(tmp_path / "s", grid, **SMALL, resume=True)  # all finished: nothing runs
    assert ran == [1e-3, 3e-3, 1e-2] and again.chosen.lr == resumed.chosen.lr
    with pytest.raises(ValueError, match="finished run with other options"):
        sweep(tmp_path / "s", grid, **{**SMALL, "steps": 6}, resume=True)
    with pytest.raises(ValueError, match="holds no sweep to continue"):
        sweep(tmp_path / "none", grid, **SMALL, resume=True)


@pytest.mark.parametrize("bad", ["nan", "inf"])
def test_every_rate_is_checked_before_any_training(tmp_path, bad):
    """`--lrs 1e-3 nan` trained lr-0.001 fully, then exited 2 and left lr-0.001/ behind."""
    done = cli(
        "sweep", "--out", str(tmp_path / "s"), "--lrs", "1e-3", bad, "--train-examples", "64"
    )
    assert done.returncode == 2 and "at least two different positive rates" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "s").exists()


def test_a_sweep_json_the_user_wrote_is_never_replaced(tmp_path):
    """`sweep --out F` where F held the user's own sweep.json replaced it, non-atomically."""
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "sweep.json").write_text("my notes\n", encoding="utf-8")
    with pytest.raises(ValueError, match="was not written by a sweep"):
        sweep(folder, [1e-3, 3e-1], **SMALL)
    assert (folder / "sweep.json").read_text() == "my notes\n" and len(list(folder.iterdir())) == 1
    (folder / "sweep.json").unlink()
    sweep(folder, [1e-3, 3e-1], **SMALL)
    manifest = json.loads((folder / ".minibert-manifest.json").read_text())
    assert manifest["files"] == ["sweep.json"]  # ours now: a sweep with --overwrite replaces it
    sweep(folder, [1e-3, 3e-1], **SMALL, overwrite=True)
    assert json.loads((folder / "sweep.json").read_text())["trials"][0]["lr"] == 1e-3


def test_a_negative_rate_is_refused_with_the_grids_message(tmp_path):
    """`--lrs -1e-3 1e-3` said "expected at least one argument"."""
    done = cli("sweep", "--out", str(tmp_path / "s"), "--lrs", "-1e-3", "1e-3")
    assert done.returncode == 2 and "at least two different positive rates" in done.stderr
    assert "[-0.001, 0.001]" in done.stderr
