"""Hard negatives on hand-made rankings: the positives are never among them, a tie goes to the
passage that comes first whatever order the retriever lists its ties in, a k larger than the
negatives left is refused, and a paragraph repeated elsewhere counts as a positive."""

import pytest
import torch

from minibert.retrieval import BM25, Passage, Query, Ranking, mine_hard_negatives, positives_of


class Fixed:
    """A retriever whose scores are given: the query "i" scores the passages as row i; its ties
    are listed in the order `ties` says ("low": lower index first, "high": higher first)."""

    measure = "fixed score"

    def __init__(self, scores, ties="low"):
        self.scores = torch.tensor(scores, dtype=torch.float64)
        self.passages = [Passage("T", i, f"passage {i}") for i in range(self.scores.shape[1])]
        self.ties = ties

    def search(self, queries, k):
        rows = self.scores[[int(q) for q in queries]]  # (queries, passages)
        sign = 1 if self.ties == "low" else -1
        orders = [
            sorted(range(len(row)), key=lambda i, row=row: (-row[i].item(), sign * i))[:k]
            for row in rows
        ]
        ids = torch.tensor(orders)
        return Ranking(ids, rows.gather(1, ids))


def test_the_positive_is_never_a_negative_even_when_ranked_first():
    retriever = Fixed([[5.0, 9.0, 7.0, 1.0], [1.0, 2.0, 3.0, 4.0]])
    assert mine_hard_negatives(retriever, ["0", "1"], [1, 3], k=2) == [[2, 0], [2, 1]]
    assert mine_hard_negatives(retriever, ["0", "1"], [[1], [3]], k=1) == [[2], [2]]


def test_several_positives_are_all_set_aside():
    retriever = Fixed([[5.0, 9.0, 7.0, 1.0, 6.0]])
    assert mine_hard_negatives(retriever, ["0"], [[1, 2]], k=3) == [[4, 0, 3]]


@pytest.mark.parametrize("ties", ["low", "high"])
def test_a_tie_goes_to_the_passage_that_comes_first_whatever_the_retrievers_order(ties):
    retriever = Fixed([[3.0, 7.0, 7.0, 7.0, 1.0]], ties=ties)
    assert mine_hard_negatives(retriever, ["0"], [0], k=2) == [[1, 2]]
    assert mine_hard_negatives(retriever, ["0"], [1], k=2) == [[2, 3]]
    assert mine_hard_negatives(retriever, ["0"], [4], k=4) == [[1, 2, 3, 0]]
    # all tied (a query with no word in the passages): the first passages, its own set aside
    flat = Fixed([[0.0] * 5], ties=ties)
    assert mine_hard_negatives(flat, ["0"], [0], k=3) == [[1, 2, 3]]


def test_k_larger_than_the_negatives_left_is_refused():
    retriever = Fixed([[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]])
    assert mine_hard_negatives(retriever, ["0", "1"], [0, 1], k=3) == [[3, 2, 1], [0, 2, 3]]
    with pytest.raises(ValueError, match="k must be at most 3: the 4 passages less"):
        mine_hard_negatives(retriever, ["0", "1"], [0, 1], k=4)
    with pytest.raises(ValueError, match="k must be at most 2"):  # a query with two positives
        mine_hard_negatives(retriever, ["0", "1"], [0, [1, 2]], k=3)
    with pytest.raises(ValueError, match="k must be a positive int"):
        mine_hard_negatives(retriever, ["0"], [0], k=0)


def test_positives_out_of_range_missing_or_miscounted_are_refused():
    retriever = Fixed([[1.0, 2.0, 3.0]])
    for positives, match in (([3], "in \\[0, 3\\)"), ([[]], "at least one"), ([0, 1], "1 queries")):
        with pytest.raises(ValueError, match=match):
            mine_hard_negatives(retriever, ["0"], positives)
    with pytest.raises(ValueError, match="non-empty list of texts"):
        mine_hard_negatives(retriever, "0", [0])


PASSAGES = [
    Passage("Paris", 0, "the tower is in paris"),
    Passage("Cats", 0, "the cat sat on the mat"),
    Passage("Towers", 0, "a tower in a town"),
    Passage("Paris again", 0, "the tower is in paris"),  # the same paragraph in another article
    Passage("Dogs", 0, "a dog sat on a log"),
]


def test_a_paragraph_repeated_elsewhere_is_a_positive_never_a_negative():
    queries = [Query("q0", "where is the tower in paris", 0), Query("q1", "the cat", 1)]
    positives = positives_of(queries, PASSAGES)
    assert positives == [[0, 3], [1]]
    mined = mine_hard_negatives(BM25.of(PASSAGES), [q.text for q in queries], positives, k=2)
    assert mined[0] == [2, 1]  # BM25 ranks the copy of the paragraph first: set aside
    assert all(not set(m) & set(p) for m, p in zip(mined, positives))
