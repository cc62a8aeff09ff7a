"""benchmarks/retrieval.py: every trained row's rate is chosen on dev by one function, which tries
the grid, widens it past an edge, and reads back the trials a finished row already holds."""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import retrieval as benchmark  # noqa: E402  (benchmarks/retrieval.py, beside the tests)

from minibert.retrieval import Query  # noqa: E402

QUERIES = {"dev": [Query("q0", "a", 0), Query("q1", "b", 1)]}


def found_at(rank: int) -> dict:
    """A run whose dev questions each find their passage at this rank among 20 (a trial's fields)."""
    passages = torch.eye(20)
    ahead = 2 * passages[10 : 10 + rank - 1].sum(0)  # rank - 1 passages closer than its own
    dev = torch.stack([passages[i] + ahead for i in range(2)])
    return {"dev": dev, "passages": passages, "seconds": {"training": 1.5}}


def test_the_rate_is_chosen_on_dev_widened_past_the_edge_and_read_back_when_done(capsys):
    ranks = {1e-3: 3, 3e-3: 2, 1e-2: 1, 3e-2: 1}  # the best at the grid's edge, then a tie
    tried = []

    def run(lr: float) -> dict:
        tried.append(lr)
        return found_at(ranks[lr])

    best, trials = benchmark.chosen_rate("toy", (1e-3, 3e-3, 1e-2), QUERIES, run, seconds=True)
    assert tried == [1e-3, 3e-3, 1e-2, 3e-2]  # 1e-2 at the edge: one step beyond it
    assert best["lr"] == 1e-2 and best["mrr@10"] == 1.0  # a tie goes to the smaller rate
    assert [t["mrr@10"] for t in trials] == [1 / 3, 1 / 2, 1.0, 1.0]
    assert all(t["training_seconds"] == 1.5 for t in trials)
    assert "toy lr 0.001: dev MRR@10 0.333" in capsys.readouterr().out
    done = {t["lr"]: t for t in trials}
    tried.clear()
    again, _ = benchmark.chosen_rate("toy", (1e-3, 3e-3, 1e-2), QUERIES, run, done)
    assert tried == [] and again == best  # every trial read back, none trained


def test_a_hard_negative_row_trains_with_one_bm25_negative_and_is_compared_with_its_start(
    monkeypatch,
):
    calls = []

    def trained(vectors, queries, seed, lr, model=None, hard=0):
        calls.append((model, lr, seed, hard))
        passages = torch.eye(20)
        return {"dev": passages[:2], "test": passages[:2], "passages": passages,
                "seconds": {"training": 1.0}}  # fmt: skip

    monkeypatch.setattr(benchmark, "contrastive", trained)
    queries = QUERIES | {"test": [Query("t0", "a", 0), Query("t1", "b", 1)], "train": []}
    result = {"rows": {
        "BM25": {"ranks": [[2, 1]]},
        "MiniLM mean": {"ranks": [[3, 3]]},
        "course mean": {"ranks": [[5, 5]], "test": {"mrr@10": 0.2}},
    }}  # fmt: skip
    vectors = type("V", (), {"course": "course"})()
    benchmark.add_row(result, vectors, queries, "hard-minilm", Path("unused"))
    assert (
        {(model, hard) for model, _, _, hard in calls}
        == {("minilm", benchmark.HARD)}
        == {("minilm", 1)}
    )
    assert [lr for _, lr, _, _ in calls[:3]] == list(benchmark.MINILM_LRS)  # chosen on dev
    assert [seed for _, _, seed, _ in calls[-3:]] == list(benchmark.SEEDS)
    row = result["rows"]["MiniLM mean, contrastive with a BM25 negative"]
    assert "--hard-negatives 1" in row["training"]["recipe"] and row["seeds"] == [0, 1, 2]
    assert row["vs_start"]["row"] == "MiniLM mean"
    assert abs(row["vs_start"]["mrr@10"]["difference"] - (1 - 1 / 3)) < 1e-9  # rank 3 -> rank 1
    added = result["added_rows"]["MiniLM mean, contrastive with a BM25 negative"]
    assert added["command"] == "python benchmarks/retrieval.py --only hard-minilm"


def test_a_finished_fine_tuning_is_read_back_only_when_every_setting_agrees(tmp_path):
    import json

    settings = {"model": "minilm", "task": "wiki-search", "lr": 3e-5, "seed": 1, "steps": 100}
    assert benchmark.trained_before(tmp_path, settings) is None  # nothing there
    options = settings | {"batch_size": 32}
    (tmp_path / "results.json").write_text(json.dumps({"options": options, "seconds": 12.5}))
    assert benchmark.trained_before(tmp_path, settings) is None  # no history: not finished
    (tmp_path / "history.json").write_text(json.dumps([{"step": 1, "train_loss": 2.0}]))
    kept = benchmark.trained_before(tmp_path, settings)
    assert kept == {"seconds": 12.5, "history": [{"step": 1, "train_loss": 2.0}]}
    assert benchmark.trained_before(tmp_path, settings | {"seed": 2}) is None
    assert benchmark.trained_before(tmp_path, settings | {"hard_negatives": 1}) is None
