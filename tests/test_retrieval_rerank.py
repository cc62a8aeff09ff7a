"""The cross-encoder re-ranker: its scores are each pair's log-odds read alone, it orders the first
stage's top depth by them (a tie keeps the first stage's order), it answers the one interface
under its registered names, and a folder that is no re-ranker is refused in one line."""

import pytest
import torch
from conftest import cli, tiny_encoder_folder, tiny_reader_folder

from minibert.model import BertForSequenceClassification
from minibert.retrieval import BM25, Passage, Ranking, corpus, hits, retriever_of
from minibert.retrieval import retriever as registry
from minibert.retrieval.rerank import LABELS, CrossEncoder, Reranker, interpolated

PASSAGES = [
    Passage("Cats", 0, "the cat sat on the mat"),
    Passage("Dogs", 0, "a dog sat on a log"),
    Passage("Pets", 0, "cats and dogs"),
    Passage("Paris", 0, "the tower is in paris"),
    Passage("Paris", 1, "paris is big"),
    Passage("Logs", 0, "a log is big"),
]
QUESTIONS = ["where is the tower ?", "the dog sat on a log"]


class Backwards:
    """A first stage that knows nothing: passage i scores i, so the last passage comes first."""

    measure = "backwards score"

    def __init__(self, passages):
        self.passages = list(passages)

    def search(self, queries, k):
        ids = torch.arange(len(self.passages) - 1, len(self.passages) - 1 - k, -1)
        ids = ids.expand(len(queries), k)  # (queries, k)
        return Ranking(ids, ids.double())


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A saved tiny pair classifier with wiki-rerank's labels (random weights, its head saved)."""
    texts = [p.text for p in PASSAGES] + QUESTIONS
    root = tmp_path_factory.mktemp("rerank")
    kind = {"cls": BertForSequenceClassification, "num_labels": 2, "label_names": LABELS}
    return tiny_reader_folder(root / "reranker", texts, **kind)


def by_hand(cross: CrossEncoder, question: str, passage: str) -> float:
    """One pair's log-odds of 'relevant', the pair read alone (no batch, no padding)."""
    enc = cross.tokenizer(question, passage, max_length=cross.max_length, truncation=True)
    with torch.no_grad():
        logits = cross.model(torch.tensor([enc.input_ids]), torch.tensor([enc.token_type_ids]))
    return float(logits.logits[0, 1] - logits.logits[0, 0])


def test_the_scores_are_each_pairs_log_odds_read_alone(folder):
    cross = CrossEncoder.load(folder)
    pairs = [(q, p.text) for q in QUESTIONS for p in PASSAGES]
    scores = cross.scores(pairs, batch_size=4)  # batches of similar length, padded
    want = torch.tensor([by_hand(cross, q, p) for q, p in pairs])
    torch.testing.assert_close(scores, want, atol=1e-5, rtol=0)
    assert cross.max_length == 64  # the tiny model's positions (no results.json)


def test_the_reranker_orders_the_first_stages_top_depth_by_the_cross_encoder(folder):
    cross = CrossEncoder.load(folder)
    reranker = Reranker(Backwards(PASSAGES), cross, depth=3)
    ids, scores = reranker.search(QUESTIONS, 2)
    assert ids.shape == scores.shape == (2, 2)
    for q, row_ids, row_scores in zip(QUESTIONS, ids, scores):
        read = {i: by_hand(cross, q, PASSAGES[i].text) for i in (5, 4, 3)}  # the first 3
        best = sorted(read, key=lambda i: -read[i])[:2]
        assert row_ids.tolist() == best
        torch.testing.assert_close(row_scores, torch.tensor([read[i] for i in best]), atol=1e-5, rtol=0)  # fmt: skip
    wide, _ = reranker.search(QUESTIONS, 5)  # k past depth: the first stage's k best read
    assert sorted(wide[0].tolist()) == [1, 2, 3, 4, 5]


def test_a_tie_keeps_the_first_stages_order(folder):
    cross = CrossEncoder.load(folder)
    with torch.no_grad():  # every pair scores 0: a tie everywhere
        cross.model.classifier.weight.zero_()
        cross.model.classifier.bias.zero_()
    ids, scores = Reranker(Backwards(PASSAGES), cross, depth=4).search(QUESTIONS, 4)
    assert ids.tolist() == [[5, 4, 3, 2]] * 2 and not scores.any()


def test_interpolated_standardises_each_querys_candidates_then_weighs_them():
    first = torch.tensor([[3.0, 2.0, 1.0], [5.0, 5.0, 5.0]])  # row 2: equal scores
    pair = torch.tensor([[0.0, 10.0, 20.0], [1.0, 2.0, 3.0]])
    z = torch.tensor([1.0, 0.0, -1.0]) * (3 / 2) ** 0.5  # (x - mean) / population std
    got = interpolated(first, pair, 0.25)
    torch.testing.assert_close(got[0], (0.75 * z + 0.25 * -z).double())
    torch.testing.assert_close(got[1], (0.25 * -z).double())  # equal scores standardise to 0
    torch.testing.assert_close(interpolated(first[:, :1], pair[:, :1], 0.5), torch.zeros(2, 1, dtype=torch.float64))  # fmt: skip
    with pytest.raises(ValueError, match="weight in \\[0, 1\\]"):
        interpolated(first, pair, 1.5)


def test_a_weight_below_one_interpolates_and_zero_keeps_the_first_stage(folder):
    cross = CrossEncoder.load(folder)
    backwards = Backwards(PASSAGES)
    alone = Reranker(backwards, cross, depth=6).search(QUESTIONS, 6)
    kept = Reranker(backwards, cross, depth=6, weight=0.0)
    assert kept.search(QUESTIONS, 6).ids.tolist() == [[5, 4, 3, 2, 1, 0]] * 2
    assert kept.measure == "interpolated score"
    half = Reranker(backwards, cross, depth=6, weight=0.5).search(QUESTIONS, 6)
    first = backwards.search(QUESTIONS, 6)
    by_pair = torch.tensor([[by_hand(cross, q, PASSAGES[i].text) for i in row] for q, row in zip(QUESTIONS, first.ids)])  # fmt: skip
    want = interpolated(first.scores, by_pair, 0.5)
    for row_ids, row_scores, ids, scores in zip(half.ids, half.scores, first.ids, want):
        best = scores.argsort(descending=True, stable=True)
        assert row_ids.tolist() == ids[best].tolist()
        torch.testing.assert_close(row_scores, scores[best], atol=1e-3, rtol=0)
    assert alone.ids.tolist() != [[5, 4, 3, 2, 1, 0]] * 2  # the pair scorer alone reorders
    with pytest.raises(ValueError, match="weight must be in \\[0, 1\\]"):
        Reranker(backwards, cross, weight=-0.1)


def test_a_folder_that_is_no_reranker_is_refused_in_one_line(folder, tmp_path):
    with pytest.raises(FileNotFoundError, match="minibert finetune --model minilm --task wiki-rerank"):  # fmt: skip
        CrossEncoder.load(tmp_path / "none")
    with pytest.raises(ValueError, match="is not a trained re-ranker"):  # no head: an encoder
        CrossEncoder.load(tiny_encoder_folder(tmp_path / "encoder"))
    other = tiny_reader_folder(tmp_path / "qnli", ["a b"], cls=BertForSequenceClassification)
    with pytest.raises(ValueError, match="labels \\('LABEL_0', 'LABEL_1'\\), expected"):
        CrossEncoder.load(other)
    with pytest.raises(ValueError, match="depth must be a positive int"):
        Reranker(Backwards(PASSAGES), folder, depth=0)


@pytest.mark.parametrize("name", ["bm25+rerank", "hybrid+rerank"])
def test_the_registered_rerankers_answer_the_one_interface(name, folder, tmp_path):
    settings = {"reranker": folder, "encoder": tiny_encoder_folder(tmp_path / "enc"), "depth": 4}
    retriever = retriever_of(name, PASSAGES, **settings)
    assert isinstance(retriever, Reranker) and retriever.depth == 4
    assert retriever.passages == PASSAGES and retriever.measure == "cross-encoder log-odds"
    ids, scores = retriever.search(QUESTIONS, 3)
    assert ids.shape == scores.shape == (2, 3)
    first = retriever.first.search(QUESTIONS, 4).ids  # re-ranked from the first stage's 4 best
    assert all(set(row.tolist()) <= set(top.tolist()) for row, top in zip(ids, first))
    found = hits(retriever, QUESTIONS[0], 2)
    assert [h.rank for h in found] == [1, 2] and found[0].index == int(ids[0, 0])
    if name == "bm25+rerank":
        assert isinstance(retriever.first, BM25)


def test_a_missing_reranker_is_said_by_minibert_search_before_the_first_stage(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(corpus, "wiki_passages", lambda: PASSAGES)
    monkeypatch.setattr(registry, "default_reranker", lambda: tmp_path / "wiki-rerank")
    monkeypatch.setattr(registry, "BM25", None)  # building the first stage would fail
    done = cli("search", "bm25+rerank", "where is the tower ?")
    assert done.returncode == 2
    assert f"no re-ranker in {tmp_path / 'wiki-rerank'}" in done.stderr
    assert "minibert finetune --model minilm --task wiki-rerank" in done.stderr
