"""benchmarks/retrieval_rerank.py: a cross-encoder at the trivial level on dev (one label for every
pair) is restarted by the grid's rule, and one that stays there re-ranks nothing in the results."""

import argparse
import json
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import retrieval_rerank as benchmark  # noqa: E402  (benchmarks/retrieval_rerank.py)

from minibert.retrieval import Passage, Query, Ranking, corpus  # noqa: E402

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

    monkeypatch.setattr(benchmark, "load_scorer", no_reranker)
    args = argparse.Namespace(
        seeds=[1], limit=None, depth=20, hybrid=False, model="minilm", lr=5e-5
    )
    section = benchmark.rerank_section(args, PASSAGES, minilm=None)
    assert ran == [1, 101, 102, 103]
    assert section["trivial_seeds_not_reported"] == [1]
    assert list(section["rows"]) == ["BM25"]  # the first stage alone: no re-ranked row
    assert section["cross_encoder"]["runs"][0]["kept"]["trivial"] is True
    assert "stayed at the trivial level on dev after 3 restarts" in capsys.readouterr().out


def fake_trials(pair_order: dict[float, float], ran: list):
    """trained_cross_encoder's stand-in for the rate trials: each rate's dev pair order."""

    def train(args, seed, lr=None):
        ran.append((seed, lr))
        return Path(f"/nowhere/{lr}"), {"dev_pair_order": pair_order[lr], "dev_loss": 0.5}

    return train


def test_the_rate_is_the_choosing_seeds_best_dev_pair_order_and_an_edge_widens(monkeypatch):
    ran: list = []
    monkeypatch.setattr(benchmark, "RATES", (2.5e-5, 5e-5, 1e-4))
    orders = {2.5e-5: 0.60, 5e-5: 0.62, 1e-4: 0.70, 2e-4: 0.66}  # best at the top edge, then inside
    monkeypatch.setattr(benchmark, "trained_cross_encoder", fake_trials(orders, ran))
    rate = benchmark.chosen_rate(argparse.Namespace(lr=None))
    assert ran == [(0, 2.5e-5), (0, 5e-5), (0, 1e-4), (0, 2e-4)]  # seed 0 only; one rate added
    assert rate["lr"] == 1e-4 and rate["chosen_on_dev"] and rate["seed"] == 0
    assert rate["widened"] == [2e-4] and not rate["at_edge"]
    assert [t["dev_pair_order"] for t in rate["trials"]] == [0.60, 0.62, 0.70, 0.66]


def test_a_given_rate_trains_no_trial(monkeypatch):
    monkeypatch.setattr(benchmark, "trained_cross_encoder", fake_trials({}, ran := []))
    assert benchmark.chosen_rate(argparse.Namespace(lr=3e-5)) == {
        "lr": 3e-5,
        "chosen_on_dev": False,
    }
    assert ran == []


def test_a_cached_cross_encoder_is_read_back_with_its_kept_dev_loss(monkeypatch, tmp_path):
    args = argparse.Namespace(
        model="minilm", steps=4, batch_size=8, lr=5e-5, max_length=None,
        train_questions=16, evaluations=2, cache=tmp_path, threads=1,
    )  # fmt: skip
    results = {
        "selection": {"step": 4, "value": 0.61, "trivial": False},
        "seconds": 1.0,
        "train_size": 16,
        "test": {"accuracy": 0.7, "balanced_accuracy": 0.6},
        "options": {"steps": 4, "lr": 1e-4, "batch_size": 8},
    }
    history = [{"step": 2, "eval_loss": 0.9}, {"step": 3}, {"step": 4, "eval_loss": 0.4}]
    made = []

    def finetune(folder, **kwargs):
        made.append(folder)
        folder.mkdir(parents=True)
        (folder / "results.json").write_text(json.dumps(results))
        (folder / "history.json").write_text(json.dumps(history))

    monkeypatch.setattr(benchmark.recipes, "finetune", finetune)
    first, kept = benchmark.trained_cross_encoder(args, 1, lr=1e-4)
    again, kept_again = benchmark.trained_cross_encoder(args, 1, lr=1e-4)
    assert made == [first] and again == first  # trained once, read back after
    assert kept["dev_loss"] == 0.4 and kept["dev_pair_order"] == 0.61 and kept == kept_again
    other, _ = benchmark.trained_cross_encoder(args, 1, lr=5e-5)  # another rate: its own folder
    assert other != first and made == [first, other]


class Descending:
    """A first stage over four passages that ranks passage 3 first and passage 0 last."""

    passages = [Passage("P", i, f"passage {i}") for i in range(4)]

    def search(self, queries, k):
        ids = torch.arange(3, 3 - k, -1).expand(len(queries), k)  # (queries, k)
        return Ranking(ids, ids.double())


class Reversing:
    """load_scorer's stand-in: the pair score of passage i is -i, so it orders passage 0 first."""

    pairs_read: list = []

    def scores(self, pairs, progress):
        Reversing.pairs_read += pairs
        return torch.tensor([-float(passage.split()[-1]) for _, passage in pairs])


def test_the_pair_scores_line_up_with_the_first_stage_and_are_read_back(monkeypatch, tmp_path):
    monkeypatch.setattr(benchmark, "load_scorer", lambda folder: Reversing())
    queries = [Query("q0", "a", 0), Query("q1", "b", 0)]
    kept = benchmark.pair_scores(Descending(), tmp_path, queries, 4)
    assert kept["ids"].tolist() == [[3, 2, 1, 0]] * 2  # the first stage's order
    assert kept["first"].tolist() == [[3, 2, 1, 0]] * 2
    assert kept["pair"].tolist() == [[-3, -2, -1, 0]] * 2  # each id's own pair score
    assert len(Reversing.pairs_read) == 8
    again = benchmark.pair_scores(Descending(), tmp_path, queries[:1] + [Query("q2", "c", 0)], 3)
    assert len(Reversing.pairs_read) == 11  # only the new question's pairs are read
    assert again["pair"].tolist() == [[-3, -2, -1]] * 2


def test_the_weight_is_the_smallest_with_the_best_dev_mrr(monkeypatch, tmp_path):
    monkeypatch.setattr(benchmark, "load_scorer", lambda folder: Reversing())
    queries = [Query("q0", "a", 0)]  # its paragraph is the first stage's last, the pairs' first
    kept = benchmark.pair_scores(Descending(), tmp_path, queries, 4)
    weight, by_weight = benchmark.chosen_weight(kept, 4, [0])
    # standardised, passage 0 scores 1.34 * (2w - 1) and passage 3 the opposite: first past 0.5
    # (at 0.5 every score is 0, and a tie keeps the first stage's order: passage 0 fourth)
    assert weight == 0.55 and by_weight[0.5] == 0.25 and by_weight[1.0] == 1.0
    assert benchmark.ranks_at(kept, 0.0, 4, [0]).tolist() == [4]
    assert benchmark.ranks_at(kept, weight, 4, [0]).tolist() == [1]


def test_the_grown_haystack_is_the_paragraphs_then_wikipedias_sentences_then_drawn_ones():
    """Real texts, each once: no paragraph again, no sentence twice, none under MIN_WORDS words;
    Wikipedia's sentences in order first, then the other sentences drawn at random by the seed."""
    paragraphs = ["one two three four five", "six seven eight nine ten"]
    wikipedia = ["a b c d", "a b c d", "one two three four five", "too short", "e f g h"]
    more = [f"w{i} x y z" for i in range(10)] + ["a b c d"]
    texts, counts = benchmark.grown_texts(paragraphs, wikipedia, more, size=8, seed=0)
    assert texts[:2] == ["a b c d", "e f g h"]
    assert len(texts) == 6 and len(set(texts)) == 6 and not set(texts) & set(paragraphs)
    assert all(len(t.split()) >= benchmark.MIN_WORDS for t in texts)
    assert counts == {"wikipedia sentences": 2, "english corpus sentences": 4}
    drawn = texts[2:]
    assert set(drawn) <= set(more) and drawn != more[:4]  # drawn at random, not the first four
    assert benchmark.grown_texts(paragraphs, wikipedia, more, size=8, seed=0)[0] == texts
    assert benchmark.grown_texts(paragraphs, wikipedia, more, size=8, seed=1)[0] != texts


def test_a_haystack_larger_than_the_real_texts_is_refused_in_one_line():
    with pytest.raises(ValueError, match="needs 10"):
        benchmark.grown_texts(["p q r s"], ["a b c d"], ["e f g h"], size=11)
    with pytest.raises(ValueError, match="at least the 1 paragraphs"):
        benchmark.grown_texts(["p q r s"], [], [], size=0)
