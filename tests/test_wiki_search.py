"""wiki-search as a fine-tuning task: the scores are recall@k and MRR@10 of hand-worked rankings,
the in-batch measure counts a tie for the question, and `minibert finetune --task wiki-search`
trains a tiny encoder on a toy corpus, reports MRR@10 and recall@k as encoding the saved folder
by hand ranks them, and leaves a folder that `minibert search` reads; with `--hard-negatives N`
each training question carries BM25's N best wrong paragraphs into the loss."""

import json

import pytest
import torch
from conftest import TEXTS, cli, tiny_encoder_folder

from minibert import retrieval, tasks
from minibert.retrieval import BM25, Passage, Query, corpus, in_batch
from minibert.retrieval.encoders import encode, load_encoder
from minibert.retrieval.negatives import mine_hard_negatives
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


# --- hard negatives (--hard-negatives N) ----------------------------------------------------------


def test_each_training_question_carries_bm25s_best_wrong_paragraphs(toy, tmp_path):
    task = tasks.get("wiki-search")
    tok = BertTokenizer.from_pretrained(tiny_encoder_folder(tmp_path / "tiny"))
    train, dev, test = task.datasets(tok, 32, None, 0)
    task.hard_negatives(train, 2)
    pieces = train.corpus.pieces
    texts = [q.text for q in train.queries]
    mined = mine_hard_negatives(BM25.of(PASSAGES), texts, [q.passage for q in train.queries], k=2)
    for query, item, found in zip(train.queries, train.items, mined):
        assert item["negative_ids"] == [pieces[i] for i in found]
        assert pieces[query.passage] not in item["negative_ids"]  # its own is never a negative
    paris = [i for i, q in enumerate(train.queries) if q.passage == 4]  # "paris paris"
    assert paris and all(mined[i][0] == 3 for i in paris)  # the only other paragraph with paris
    assert not any("negative_ids" in item for item in [*dev.items, *test.items])


@pytest.mark.slow
def test_finetune_with_hard_negatives_scores_each_question_against_them_and_records_n(
    toy, tmp_path, monkeypatch
):
    seen = []  # (queries, negatives) of each loss the bi-encoder computed
    loss = in_batch.in_batch_loss

    def recording(queries, passages, temperature=0.05, negatives=None):
        seen.append((len(queries), None if negatives is None else len(negatives)))
        return loss(queries, passages, temperature, negatives)

    monkeypatch.setattr(in_batch, "in_batch_loss", recording)
    source, out = tiny_encoder_folder(tmp_path / "tiny"), tmp_path / "search"
    done = cli("finetune", "--model", str(source), "--task", "wiki-search", "--out", str(out),
               "--steps", "4", "--batch-size", "5", "--evaluations", "1",
               "--hard-negatives", "1")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "test (3 questions): MRR@10 " in done.stdout
    trained = [(q, n) for q, n in seen if n is not None]
    assert len(trained) == 4 and all(n == q == 5 for q, n in trained)  # one per question
    results = json.loads((out / "results.json").read_text())
    assert results["options"]["hard_negatives"] == 1


def test_hard_negatives_are_refused_in_one_line_for_another_task_a_negative_n_or_too_many(
    toy, tmp_path
):
    out = tmp_path / "out"
    done = cli("finetune", "--task", "rotten-tomatoes", "--hard-negatives", "1", "--out", str(out))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "hard negatives apply to wiki-search only" in done.stderr
    assert "rotten-tomatoes takes none: leave out --hard-negatives" in done.stderr
    done = cli("finetune", "--task", "wiki-ict", "--hard-negatives", "1", "--out", str(out))
    assert done.returncode == 2 and "wiki-ict takes none" in done.stderr
    done = cli("finetune", "--task", "wiki-search", "--hard-negatives", "-1", "--out", str(out))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "error: argument --hard-negatives: must be an int >= 0, got -1" in done.stderr
    source = tiny_encoder_folder(tmp_path / "tiny")  # five paragraphs: four wrong ones at most
    done = cli("finetune", "--model", str(source), "--task", "wiki-search", "--out", str(out),
               "--steps", "1", "--batch-size", "5", "--hard-negatives", "5")  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "hard_negatives must be at most 4 (the paragraphs that are not a question's own)" in (
        done.stderr
    )
    assert not (out / "model.safetensors").exists()
