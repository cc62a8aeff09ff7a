"""The one retriever interface: every retriever (BM25, TF-IDF, an encoder's index, the hybrid, and
one registered here) answers search(queries, k) with ranked ids and scores; a retriever registered
in a test is searched by `minibert search`, composed by the hybrid and read by `minibert ask`,
with no other file changed."""

import pytest
import torch
from conftest import cli, tiny_encoder_folder, tiny_reader_folder

from minibert.retrieval import Passage, Ranking, corpus, hits, register_retriever, retriever_of
from minibert.retrieval.hybrid import hybrid_scores
from minibert.retrieval.measures import every_score
from minibert.retrieval.retriever import RETRIEVERS

PASSAGES = [
    Passage("Cats", 0, "the cat sat on the mat"),
    Passage("Dogs", 0, "a dog sat on a log"),
    Passage("Pets", 0, "cats and dogs"),
    Passage("Paris", 0, "the tower is in paris"),
    Passage("Paris", 1, "paris is big"),
]
QUESTION = "where is the tower ?"


class Backwards:
    """A retriever that knows nothing: passage i scores i, so the last passage comes first."""

    measure = "backwards score"

    def __init__(self, passages):
        self.passages = list(passages)

    def search(self, queries, k):
        ids = torch.arange(len(self.passages) - 1, len(self.passages) - 1 - k, -1)
        ids = ids.expand(len(queries), k)  # (queries, k)
        return Ranking(ids, ids.double())


@pytest.fixture
def backwards(monkeypatch):
    """'backwards' registered for this test only, and the course's Wikipedia the five passages."""
    register_retriever("backwards", lambda passages, **settings: Backwards(passages))
    monkeypatch.setattr(corpus, "wiki_passages", lambda: PASSAGES)
    yield "backwards"
    del RETRIEVERS["backwards"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("retriever")
    texts = [p.text for p in PASSAGES] + [QUESTION]
    return tiny_encoder_folder(root / "encoder"), tiny_reader_folder(root / "reader", texts)


@pytest.mark.parametrize("name", ["bm25", "tfidf", "encoder", "hybrid", "backwards"])
def test_every_retriever_answers_search_with_ranked_ids_and_scores(name, folders, backwards):
    encoder, _ = folders
    retriever = retriever_of(encoder if name == "encoder" else name, PASSAGES, encoder=encoder)
    assert isinstance(retriever.measure, str) and list(retriever.passages) == PASSAGES
    ids, scores = retriever.search([QUESTION, "cats and dogs"], 3)
    assert ids.shape == scores.shape == (2, 3) and ids.dtype == torch.long
    for row_ids, row_scores in zip(ids.tolist(), scores.tolist()):
        assert len(set(row_ids)) == 3 and all(0 <= i < len(PASSAGES) for i in row_ids)
        assert row_scores == sorted(row_scores, reverse=True)  # best first
    every = retriever.search([QUESTION], len(PASSAGES))
    assert sorted(every.ids[0].tolist()) == list(range(len(PASSAGES)))  # k = all: every passage
    found = hits(retriever, QUESTION, 2)
    assert [h.rank for h in found] == [1, 2] and found[0].index == int(every.ids[0, 0])
    with pytest.raises(ValueError, match="top_k must be at most 5"):
        hits(retriever, QUESTION, 6)


def test_a_registered_retriever_is_searched_by_the_command(backwards):
    done = cli("search", "backwards", "anything at all", "--top-k", "2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == [
        "1\t4.000\tParis, paragraph 2",
        "    paris is big",
        "2\t3.000\tParis, paragraph 1",
        "    the tower is in paris",
    ]


def test_the_hybrid_composes_a_registered_retriever(backwards):
    alone = retriever_of("hybrid", PASSAGES, encoder="backwards", weight=1.0)
    assert alone.search([QUESTION], 5).ids[0].tolist() == [4, 3, 2, 1, 0]  # all its weight
    half = retriever_of("hybrid", PASSAGES, encoder="backwards", weight=0.5)
    bm25, fake = retriever_of("bm25", PASSAGES), Backwards(PASSAGES)
    lexical = every_score(bm25.search([QUESTION], 5), 5)
    want = hybrid_scores(lexical, torch.arange(5.0)[None], 0.5)  # (1, passages)
    torch.testing.assert_close(every_score(half.search([QUESTION], 5), 5), want)
    assert half.first.measure == "BM25 score" and isinstance(half.second, type(fake))


def test_ask_reads_a_registered_retriever_alone_and_in_the_hybrid(backwards, folders):
    _, reader = folders
    done = cli("ask", QUESTION, "--retriever", "backwards", "--reader", str(reader),
               "--top-k", "1", "--retrieval-weight", "0")  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("Paris, paragraph 2\tretrieved 1 of 1 (backwards score 4.000)")
    assert lines[2] == "    paris is big"
    done = cli("ask", QUESTION, "--retriever", "hybrid", "--encoder", "backwards",
               "--weight", "1", "--reader", str(reader), "--top-k", "1")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith("Paris, paragraph 2\tretrieved 1 of 1 (hybrid")


def test_a_taken_name_is_refused(backwards):
    for name in ("bm25", "backwards", ""):
        with pytest.raises(ValueError, match="a retriever's name must be a new non-empty str"):
            register_retriever(name, Backwards)
