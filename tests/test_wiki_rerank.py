"""wiki-rerank as a fine-tuning task: each question's pairs are its paragraph and BM25's best wrong
ones (never its paragraph or a copy of it), the baseline is BM25's own choice among them, and
`minibert finetune --task wiki-rerank` leaves a folder that re-ranks under 'bm25+rerank'."""

import json

import pytest
import torch
from conftest import TEXTS, cli, tiny_encoder_folder

from minibert import tasks
from minibert.retrieval import BM25, Passage, Query, corpus, retriever_of, words
from minibert.retrieval.rerank import LABELS, CrossEncoder, Reranker
from minibert.tasks.wiki_rerank import NEGATIVES, rerank_pairs
from minibert.tokenization import BertTokenizer

PASSAGES = [Passage(f"A{i}", 0, text) for i, text in enumerate(TEXTS)]
SPLITS = {"train": [0, 1, 2, 3, 4, 0, 1, 2], "dev": [0, 3], "test": [1, 2, 4]}


def _queries(split: str, passages=None) -> list[Query]:
    """Each query: the last and first words of its passage."""
    return [
        Query(f"{split}-{n}", f"{TEXTS[i].split()[-1]} {TEXTS[i].split()[0]}", i)
        for n, i in enumerate(SPLITS[split])
    ]


@pytest.fixture
def toy(monkeypatch):
    """The package's Wikipedia and questions replaced by the five passages and their queries."""
    monkeypatch.setattr(corpus, "wiki_passages", lambda: PASSAGES)
    monkeypatch.setattr(corpus, "wiki_queries", _queries)


def test_each_question_pairs_its_paragraph_with_bm25s_best_wrong_ones():
    passages = [*PASSAGES, Passage("Copy", 0, TEXTS[3])]  # paragraph 3 again, in another article
    queries = [Query("q0", "the tower paris", 3), Query("q1", "dog log", 1)]
    pairs = rerank_pairs(queries, passages, BM25.of(passages), negatives=3)
    assert len(pairs) == 2 * (1 + 3) and NEGATIVES == 3
    for q, group in zip(queries, (pairs[:4], pairs[4:])):
        assert group[0] == (q.text, passages[q.passage].text, 1)  # its paragraph first
        assert [label for _, _, label in group[1:]] == [0, 0, 0]
        assert all(text != passages[q.passage].text for _, text, _ in group[1:])  # nor a copy
    scores = BM25.of(passages).score_matrix([words(queries[1].text)])[0]
    negatives = [text for _, text, _ in pairs[5:]]
    order = sorted((i for i in range(6) if i != 1), key=lambda i: (-scores[i].item(), i))[:3]
    assert negatives == [passages[i].text for i in order]  # BM25's best, best first


def test_the_task_reads_pairs_of_every_split_and_bm25s_choice_is_its_baseline(toy, tmp_path):
    task = tasks.get("wiki-rerank")
    assert task.labels == LABELS and task.pairs and task.shape == "text"
    tok = BertTokenizer.from_pretrained(tiny_encoder_folder(tmp_path / "tiny"))
    data = task.datasets(tok, 32, None, 0)
    assert [len(d) for d in data] == [4 * len(SPLITS[s]) for s in ("train", "dev", "test")]
    assert all(sum(d.labels) == len(d) // 4 for d in data)  # one relevant pair per question
    test = data[2]
    assert len(test.first_stage) == len(test) and sum(test.first_stage) == len(SPLITS["test"])
    bm25 = BM25.of(PASSAGES)
    for start, q in zip(range(0, len(test), 4), _queries("test")):
        scores = bm25.score_matrix([words(q.text)])[0]
        group = [scores[TEXTS.index(t)].item() for t in test.text_pairs[start : start + 4]]
        own_first = group[0] > max(group[1:])  # a tie counts against the question's paragraph
        assert test.first_stage[start] == int(own_first)
    scored = task.baseline_scores(data, tok)
    assert set(scored) == {"BM25's first"} and scored["BM25's first"]["examples"] == len(test)


@pytest.mark.slow
def test_finetune_leaves_a_folder_that_reranks_bm25s_top_k(toy, tmp_path):
    source, out = tiny_encoder_folder(tmp_path / "tiny"), tmp_path / "rerank"
    done = cli("finetune", "--model", str(source), "--task", "wiki-rerank", "--out", str(out),
               "--steps", "20", "--batch-size", "8", "--lr", "3e-3", "--evaluations", "2")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "dev pair_order" in done.stdout and "test (12 pairs): accuracy" in done.stdout
    results = json.loads((out / "results.json").read_text())
    assert results["task"] == "wiki-rerank" and results["test"]["examples"] == 12
    cross = CrossEncoder.load(out)
    assert cross.max_length == 64  # its training length: the task's 256, cut to the positions
    retriever = retriever_of("bm25+rerank", reranker=out, depth=3)
    assert isinstance(retriever, Reranker) and retriever.passages == PASSAGES
    ids, _ = retriever.search(["log a", "paris the"], 2)
    assert ids.shape == (2, 2)


def test_its_training_batches_are_not_grouped_by_length():
    """A question's own paragraph is longer than BM25's best wrong ones, so batches grouped by
    length ran from mostly relevant to all irrelevant and the model learned one label; a task
    whose label goes with length trains on batches in random order (the others keep grouping)."""
    from minibert.config import BertConfig
    from minibert.recipes.finetune_recipe import FinetuneOptions, _finetune_loop
    from minibert.training import TrainOptions

    config = BertConfig(vocab_size=100, hidden_size=64, num_layers=1, num_heads=2,
                        intermediate_size=128)  # fmt: skip
    rerank = _finetune_loop(FinetuneOptions(task="wiki-rerank"), config, 256)
    assert rerank.group_by_length is False and tasks.get("wiki-rerank").group_by_length is False
    assert _finetune_loop(FinetuneOptions(task="wiki-qnli"), config, 256).group_by_length is True
    kept_off = FinetuneOptions(task="wiki-qnli", train=TrainOptions(group_by_length=False))
    assert _finetune_loop(kept_off, config, 256).group_by_length is False  # a caller's choice


def test_the_kept_evaluation_is_chosen_by_pair_order_not_by_a_threshold():
    """A cross-encoder whose log-odds are below 0 everywhere can still rank every relevant pair
    first: balanced accuracy calls it trivial (0.5), pair order gives it 1; one score for every
    pair is the trivial level (0.5), and a tie counts a half."""
    from types import SimpleNamespace

    from minibert.tasks.wiki_rerank import rerank_metrics

    labels = torch.tensor([1, 0, 0, 0, 1, 0])
    odds = torch.tensor([-0.5, -2.0, -3.0, -1.0, -0.8, -0.8])  # relevant: -0.5, -0.8
    out = SimpleNamespace(logits=torch.stack([torch.zeros(6), odds], dim=1))
    got = rerank_metrics({"labels": labels}, out)
    assert got["recall_0"] == (4, 4) and got["recall_1"] == (0, 2)  # balanced accuracy 0.5
    assert got["pair_order"] == (7.5, 8)  # 2 x 4 couples; -0.8 against -0.8 a tie
    flat = rerank_metrics({"labels": labels}, SimpleNamespace(logits=torch.zeros(6, 2)))
    assert flat["pair_order"] == (4.0, 8)  # one score everywhere: the trivial 0.5
    selection = tasks.get("wiki-rerank").selection
    assert selection.name == "pair_order" and selection.trivial == 0.5
    assert selection.of({"eval_pair_order": 7.5 / 8}) == 7.5 / 8
    assert selection.near_trivial(0.52) and not selection.near_trivial(7.5 / 8)
