"""wiki-search as a fine-tuning task: the scores are recall@k and MRR@10 of hand-worked rankings,
the in-batch measure counts a tie for the question, and `minibert finetune --task wiki-search`
trains a tiny encoder on a toy corpus, reports MRR@10 and recall@k as encoding the saved folder
by hand ranks them, and leaves a folder that `minibert search` reads."""

import json

import pytest
import torch
from conftest import TEXTS, cli, tiny_encoder_folder

from minibert import retrieval, tasks
from minibert.retrieval import Passage, Query, corpus
from minibert.retrieval.encoders import encode, load_encoder
from minibert.tasks.wiki_search import RANKED, in_batch_metrics
from minibert.tokenization import BertTokenizer

PASSAGES = [Passage(f"A{i}", 0, text) for i, text in enumerate(TEXTS)]
SPLITS = {  # each query: the last and first words of its passage, as the retrieval tests' pairs
    "train": [0, 1, 2, 3, 4, 0, 1, 2, 3, 4],
    "dev": [0, 3],
    "test": [1, 2, 4],
}


def _queries(split: str, passages=None) -> list[Query]:
    return [
        Query(f"{split}-{n}", f"{TEXTS[i].split()[-1]} {TEXTS[i].split()[0]}", i)
        for n, i in enumerate(SPLITS[split])
    ]


@pytest.fixture
def toy(monkeypatch):
    """The package's Wikipedia and questions replaced by the five passages and their queries."""
    monkeypatch.setattr(corpus, "wiki_passages", lambda: PASSAGES)
    monkeypatch.setattr(corpus, "wiki_queries", _queries)


def test_the_scores_are_recall_at_k_and_mrr_at_10_of_the_gold_passages_ranks():
    task = tasks.get("wiki-search")
    gold = [3, 5, 7, 9]
    found = [
        [3, 1],
        [2, 5, 0],
        [1, 2, 3, 4, 0, 6, 8, 10, 11, 12, 7],
        [0, 1],
    ]  # ranks 1, 2, 11, none
    scores = task.scores(gold, found)
    assert scores["recall@1"] == 0.25 and scores["recall@5"] == 0.5
    assert scores["recall@20"] == 0.75  # rank 11 is within 20; a passage not listed is not
    assert scores["mrr@10"] == pytest.approx((1 + 1 / 2 + 0 + 0) / 4)  # rank 11: past MRR@10
    assert (scores["examples"], scores["unit"]) == (4, "question") and RANKED == 20
    line = task.test_line(scores)
    assert line.startswith("test (4 questions): MRR@10 0.3750, recall@1 0.2500, recall@5 0.5000")


def test_the_in_batch_measure_counts_a_question_whose_paragraph_is_closest_or_tied():
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    p = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.6, 0.8]])  # the first question's own ties
    out = type("Out", (), {"query_vectors": q, "passage_vectors": p})
    assert in_batch_metrics({}, out) == {"in_batch_accuracy": (2, 3)}  # the second: 0.8 elsewhere


@pytest.mark.slow
def test_finetune_trains_an_encoder_reports_mrr_and_recall_and_leaves_a_searchable_folder(
    toy, tmp_path, capsys
):
    source, out = tiny_encoder_folder(tmp_path / "tiny"), tmp_path / "search"
    done = cli("finetune", "--model", str(source), "--task", "wiki-search", "--out", str(out),
               "--steps", "40", "--batch-size", "5", "--lr", "3e-3", "--evaluations", "2")  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = done.stdout
    assert "dev in-batch accuracy" in report
    assert "test (3 questions): MRR@10 " in report and "recall@20" in report
    results = json.loads((out / "results.json").read_text())
    assert (
        results["task"] == "wiki-search" and results["selection"]["measure"] == "in-batch accuracy"
    )
    history = json.loads((out / "history.json").read_text())
    assert history[-1]["train_loss"] < history[0]["train_loss"] / 2  # it learned
    encoder = load_encoder(out)  # the folder is a BERT: its vectors rank the passages
    queries = _queries("test")
    unit = torch.nn.functional.normalize
    cosines = (
        unit(encode(encoder, [q.text for q in queries]), dim=-1)
        @ unit(encode(encoder, TEXTS), dim=-1).T
    )
    ranks = retrieval.ranks_of(cosines, [q.passage for q in queries])
    for name, value in retrieval.retrieval_scores(ranks).items():
        assert results["test"][name] == pytest.approx(value, abs=1e-6), name
    done = cli("search", str(out), "log a", "--top-k", "1")
    assert done.returncode == 0 and done.stdout.splitlines()[0].startswith("1\t")


def test_the_baselines_rank_as_bm25_and_tf_idf_do(toy, tmp_path):
    task = tasks.get("wiki-search")
    tok = BertTokenizer.from_pretrained(tiny_encoder_folder(tmp_path / "tiny"))
    data = task.datasets(tok, 32, None, 0)
    assert [len(d) for d in data] == [10, 2, 3]
    scored = task.baseline_scores(data, tok)
    bm25 = retrieval.BM25([retrieval.words(t) for t in TEXTS])
    queries = _queries("test")
    by_hand = bm25.score_matrix([retrieval.words(q.text) for q in queries])
    ranks = retrieval.ranks_of(by_hand, [q.passage for q in queries])
    assert scored["BM25"]["mrr@10"] == pytest.approx(retrieval.retrieval_scores(ranks)["mrr@10"])
    assert set(scored) == {"BM25", "TF-IDF cosine"}  # each gold passage ranked without a tie


def test_a_frozen_encoder_and_another_pooling_are_refused_in_one_line(toy, tmp_path):
    source = tiny_encoder_folder(tmp_path / "tiny")
    done = cli("finetune", "--model", str(source), "--task", "wiki-search", "--out",
               str(tmp_path / "out"), "--steps", "3", "--batch-size", "5", "--freeze-encoder")  # fmt: skip
    assert done.returncode == 2
    assert "error: every weight of the bi-encoder is frozen (freeze_encoder?)" in done.stderr
    assert not (tmp_path / "out" / "model.safetensors").exists()  # a failed run leaves no model
    done = cli("finetune", "--model", str(source), "--task", "wiki-search", "--out",
               str(tmp_path / "out"), "--pooling", "mean")  # fmt: skip
    assert done.returncode == 2 and "wiki-search is a vector task (its encoder is mean-pooled" in (
        done.stderr
    )
