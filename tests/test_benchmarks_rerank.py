"""benchmarks/retrieval_rerank.py: a cross-encoder at the trivial level on dev (one label for every
pair) is restarted by the grid's rule, and one that stays there re-ranks nothing in the results."""

import argparse
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import retrieval_rerank as benchmark  # noqa: E402  (benchmarks/retrieval_rerank.py)

from minibert.retrieval import Passage, Query, corpus  # noqa: E402

PASSAGES = [Passage("Cats", 0, "the cat sat"), Passage("Dogs", 0, "a dog ran")]


def fake_training(trivial_seeds: set[int], ran: list[int]):
    """trained_cross_encoder's stand-in: the seeds in trivial_seeds end at one label on dev."""

    def train(args, seed):
        ran.append(seed)
        selection = {"trivial": seed in trivial_seeds, "value": 0.5}
        return Path(f"/nowhere/{seed}"), {"seed": seed, "selection": selection}

    return train


def test_a_trivial_cross_encoder_is_restarted_and_the_first_that_learns_kept(monkeypatch):
    ran: list[int] = []
    monkeypatch.setattr(benchmark, "trained_cross_encoder", fake_training({1, 101}, ran))
    folder, kept = benchmark.cross_encoder(argparse.Namespace(), 1)
    assert ran == [1, 101, 102] and folder == Path("/nowhere/102")
    assert kept["seed"] == 102 and kept["kept"] == {
        "seed": 1,
        "kept": 102,
        "tried": [101, 102],
        "trivial": False,
        "complete": True,
    }


def test_a_cross_encoder_trivial_after_every_restart_re_ranks_nothing(monkeypatch, capsys):
    ran: list[int] = []
    monkeypatch.setattr(benchmark, "trained_cross_encoder", fake_training({1, 101, 102, 103}, ran))
    monkeypatch.setattr(corpus, "wiki_queries", lambda split, passages: [Query("q0", "a cat", 0)])

    def no_reranker(*args, **kwargs):
        pytest.fail("a trivial cross-encoder was used to re-rank")

    monkeypatch.setattr(benchmark, "Reranker", no_reranker)
    args = argparse.Namespace(seeds=[1], limit=None, depth=20, hybrid=False, model="minilm")
    section = benchmark.rerank_section(args, PASSAGES, minilm=None)
    assert ran == [1, 101, 102, 103]
    assert section["trivial_seeds_not_reported"] == [1]
    assert list(section["rows"]) == ["BM25"]  # the first stage alone: no re-ranked row
    assert section["cross_encoder"]["runs"][0]["kept"]["trivial"] is True
    assert "stayed at the trivial level on dev after 3 restarts" in capsys.readouterr().out
