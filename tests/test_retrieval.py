"""wiki-search's queries and passages, its measures on hand-worked rankings, BM25 against bm25s,
TF-IDF by hand, the hybrid's rule and the in-batch contrastive loss against a hand computation."""

import math

import numpy as np
import pytest
import torch

from minibert import retrieval
from minibert.retrieval import (
    BM25,
    TfIdf,
    hybrid_scores,
    per_query,
    ranks_of,
    retrieval_scores,
    words,
)

TOY = [
    "the cat sat on the mat",
    "a dog sat on a log and the dog slept",
    "cats and dogs are pets",
    "the eiffel tower is in paris",
    "paris is the capital of france and france is in europe",
]


def test_ranks_count_ties_against_the_relevant_passage():
    scores = torch.tensor(
        [
            [0.9, 0.1, 0.5, 0.2],  # relevant 0: first
            [0.9, 0.1, 0.5, 0.2],  # relevant 2: second
            [0.3, 0.3, 0.3, 0.0],  # relevant 1, tied with two others: third
            [0.0, 0.0, 0.0, 0.0],  # nothing scored: last
        ]
    )
    assert ranks_of(scores, [0, 2, 1, 3]).tolist() == [1, 2, 3, 4]
    with pytest.raises(ValueError, match=r"relevant passages must be in \[0, 4\)"):
        ranks_of(scores, [0, 2, 1, 4])
    with pytest.raises(ValueError, match="queries, passages"):
        ranks_of(scores[0], [0])


def test_recall_and_mrr_at_10_on_hand_worked_ranks():
    ranks = torch.tensor([1, 2, 5, 6, 10, 11, 20, 21])
    found = per_query(ranks)
    assert found["recall@1"].tolist() == [1, 0, 0, 0, 0, 0, 0, 0]
    assert found["recall@5"].tolist() == [1, 1, 1, 0, 0, 0, 0, 0]
    assert found["recall@20"].tolist() == [1, 1, 1, 1, 1, 1, 1, 0]
    # MS MARCO's MRR@10: 1 / rank within the first ten, 0 past it
    assert found["mrr@10"].tolist() == pytest.approx([1, 1 / 2, 1 / 5, 1 / 6, 1 / 10, 0, 0, 0])
    scores = retrieval_scores(ranks)
    assert scores == pytest.approx(
        {
            "recall@1": 1 / 8,
            "recall@5": 3 / 8,
            "recall@20": 7 / 8,
            "mrr@10": (1 + 1 / 2 + 1 / 5 + 1 / 6 + 1 / 10) / 8,
        }
    )
    with pytest.raises(ValueError, match="no queries"):
        retrieval_scores(torch.tensor([], dtype=torch.long))


def test_words_are_lower_cased_runs_of_letters_and_digits():
    assert words("The Eiffel-Tower, built 1889!") == ["the", "eiffel", "tower", "built", "1889"]


def test_bm25_by_hand_on_one_document():
    docs = [words(t) for t in TOY]
    bm25 = BM25(docs, k1=1.2, b=0.75)
    n, mean_length = len(docs), sum(map(len, docs)) / len(docs)
    # "paris" is in 2 of 5 documents, twice in none; document 3 has 6 words
    idf = math.log(1 + (n - 2 + 0.5) / (2 + 0.5))
    expected = idf * 1 / (1 + 1.2 * (1 - 0.75 + 0.75 * 6 / mean_length))
    assert bm25.scores(["paris"])[3].item() == pytest.approx(expected, rel=1e-12)
    assert bm25.scores(["paris", "paris"])[3].item() == pytest.approx(2 * expected, rel=1e-12)
    assert bm25.scores(["zebra"]).tolist() == [0.0] * 5  # a word no document has scores nothing


def test_bm25_agrees_with_bm25s_on_a_toy_corpus():
    import bm25s  # a dev dependency: CI has it

    docs = [words(t) for t in TOY]
    queries = [words(q) for q in ("where is paris", "the dog sat", "cat pets", "france europe")]
    for k1, b in ((1.2, 0.75), (0.9, 0.4), (1.5, 1.0)):
        reference = bm25s.BM25(k1=k1, b=b, method="lucene")
        reference.index(docs, show_progress=False)
        ours = BM25(docs, k1=k1, b=b).score_matrix(queries)  # (queries, docs)
        theirs = torch.from_numpy(np.stack([reference.get_scores(q) for q in queries])).double()
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)  # bm25s scores in float32
    with pytest.raises(ValueError, match="k1 must be >= 0 and b in"):
        BM25(docs, b=1.5)


def test_tf_idf_cosine_by_hand():
    docs = [["a", "b"], ["a", "a", "c"]]
    tfidf = TfIdf(docs)
    idf = {"a": 1.0, "b": math.log(3 / 2) + 1, "c": math.log(3 / 2) + 1}  # ln((1+N)/(1+df)) + 1
    d0 = torch.tensor([idf["a"], idf["b"], 0.0], dtype=torch.float64)
    d1 = torch.tensor([2 * idf["a"], 0.0, idf["c"]], dtype=torch.float64)
    q = torch.tensor([idf["a"], 0.0, idf["c"]], dtype=torch.float64)  # "a c z": z is unknown
    cosine = torch.nn.functional.cosine_similarity
    expected = torch.stack([cosine(q, d0, dim=0), cosine(q, d1, dim=0)])
    torch.testing.assert_close(tfidf.score_matrix([["a", "c", "z"]])[0], expected)
    assert tfidf.score_matrix([["z"]]).tolist() == [[0.0, 0.0]]


def test_tf_idf_agrees_with_scikit_learn():
    sklearn_text = pytest.importorskip("sklearn.feature_extraction.text", reason="scikit-learn")
    vectorizer = sklearn_text.TfidfVectorizer(analyzer=words)
    matrix = vectorizer.fit_transform(TOY)
    queries = ["where is paris", "the dog sat on the log"]
    expected = torch.tensor((vectorizer.transform(queries) @ matrix.T).toarray())
    ours = TfIdf([words(t) for t in TOY]).score_matrix([words(q) for q in queries])
    torch.testing.assert_close(ours, expected)


def test_hybrid_standardises_each_retrievers_scores_per_query():
    lexical = torch.tensor([[10.0, 0.0, 5.0]])
    dense = torch.tensor([[0.1, 0.3, 0.2]])
    assert hybrid_scores(lexical, dense, 0.0).argmax().item() == 0
    assert hybrid_scores(lexical, dense, 1.0).argmax().item() == 1
    z_lexical, z_dense = torch.tensor([1.0, -1.0, 0.0]), torch.tensor([-1.0, 1.0, 0.0])
    torch.testing.assert_close(
        hybrid_scores(lexical, dense, 0.25)[0], (0.75 * z_lexical + 0.25 * z_dense).double()
    )
    with pytest.raises(ValueError, match="weight in"):
        hybrid_scores(lexical, dense, 1.5)


def test_every_question_points_at_its_own_paragraph():
    passages = retrieval.wiki_passages()
    assert len(passages) == 7396  # data/README.md's count
    by_split = {s: retrieval.wiki_queries(s, passages) for s in ("train", "dev", "test")}
    assert sum(map(len, by_split.values())) == 965
    from minibert.tasks.qa import questions

    for split, queries in by_split.items():
        for query, question in zip(queries, questions(split)):
            assert passages[query.passage].text == question.context
            assert passages[query.passage].title == question.title
    test_titles = {passages[q.passage].title for q in by_split["test"]}
    train_titles = {passages[q.passage].title for q in by_split["train"] + by_split["dev"]}
    assert not test_titles & train_titles  # split by article
    assert retrieval.corpus_version(passages) != retrieval.corpus_version(passages[1:])
