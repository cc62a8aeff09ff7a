"""wiki-qa and wiki-qnli: the question set, windows, span decoding, pairs and their baselines."""

import collections
import json

import pytest

from minibert import corpora, inference
from minibert.tasks import qa, qnli


def test_the_question_set_is_big_enough_and_every_answer_is_where_it_says():
    every = qa.questions("all")  # _read checks each answer's text at its offset
    by_split = collections.Counter(qa.split_of(q.title) for q in every)
    assert len(every) >= 800 and by_split["test"] >= 200, by_split
    assert len({q.id for q in every}) == len(every)  # ids are unique
    assert all(q.question.rstrip().endswith("?") and q.answers for q in every)
    titles = {a.title: a for a in corpora.wikipedia_articles("all")}
    for q in every:  # each context is a paragraph of its article, as the corpus reads it today
        assert q.context in titles[q.title].paragraphs, q.id
    # test holds only held-out articles; no article is in two splits
    assert {q.title for q in qa.questions("test")} == {
        q.title for q in every if corpora.heldout_article(q.title)
    }
    splits = collections.defaultdict(set)
    for q in every:
        splits[q.title].add(qa.split_of(q.title))
    assert all(len(s) == 1 for s in splits.values())


def test_a_misplaced_answer_is_refused(tmp_path):
    article = {"title": "X", "paragraphs": [{"index": 0, "context": "Paris is in France.",
               "qas": [{"id": "x-0-1", "question": "Where?",
                        "answers": [{"text": "France", "answer_start": 3}]}]}]}  # fmt: skip
    (tmp_path / "x.json").write_text(json.dumps(article))
    with pytest.raises(ValueError, match="'France' is not at 3"):
        qa.questions("all", folder=tmp_path)
    with pytest.raises(ValueError, match="split must be"):
        qa.questions("validation")


def test_best_span_keeps_inside_the_context_orders_and_limits_length():
    start = [9.0, 0.0, 5.0, 1.0, 0.0, 4.0]  # piece 0 ([CLS]) is not in the context
    end = [9.0, 3.0, 0.0, 2.0, 6.0, 0.0]
    context = [2, 3, 4, 5]
    assert inference.best_span(start, end, context) == (11.0, 2, 4)
    assert inference.best_span(start, end, context, max_pieces=2) == (7.0, 2, 3)  # 2..4 is too long
    # the best start after the best end: never that pair; ties keep the first found
    assert inference.best_span([0, 0, 0, 9.0], [0, 0, 9.0, 0], [2, 3]) == (9.0, 3, 3)
    assert inference.best_span(start, end, []) is None  # a window with no context piece


def test_pairs_take_every_sentence_and_drop_the_low_overlap_ones():
    context = "Paris is the capital. France is big. Cats sleep a lot. The French capital is old."
    q = qa.Question("t-0-1", "T", context, "Which city is the French capital?", (("Paris", 0),))
    # content words asked: city, french, capital; each sentence holds 1/3, 0, 0 and 2/3 of them
    assert qnli.pairs([q], min_overlap=0.0) == [
        (q.question, "Paris is the capital.", 1),
        (q.question, "France is big.", 0),
        (q.question, "Cats sleep a lot.", 0),
        (q.question, "The French capital is old.", 0),
    ]
    assert qnli.pairs([q], min_overlap=0.3) == [
        (q.question, "Paris is the capital.", 1),
        (q.question, "The French capital is old.", 0),
    ]
    # a positive below the filter is removed too, as GLUE removed any low-overlap pair
    assert qnli.pairs([q], min_overlap=0.5) == [(q.question, "The French capital is old.", 0)]
    late = qa.Question("t-0-2", "T", context, q.question, (("old", context.index("old")),))
    assert [y for _, _, y in qnli.pairs([late], min_overlap=0.0)] == [0, 0, 0, 1]


def test_min_overlap_is_the_smallest_step_that_balances_the_training_pairs():
    """The docstring's rule: the smallest multiple of 0.05 with at least half positives."""
    train = qa.questions("train")

    def positive_share(threshold: float) -> float:
        made = qnli.pairs(train, min_overlap=threshold)
        return sum(y for _, _, y in made) / len(made)

    assert positive_share(qnli.MIN_OVERLAP) >= 0.5
    assert positive_share(qnli.MIN_OVERLAP - 0.05) < 0.5


def test_word_overlap_counts_content_words():
    assert qnli.overlap("Who wrote the Iliad?", "Homer wrote the Iliad.") == 1.0
    assert qnli.overlap("Who wrote the Iliad?", "The poem is long.") == 0.0
    assert qnli.overlap("Who is he?", "Anything.") == 0.0  # no content word asked


@pytest.fixture(scope="module")
def minilm_tok():
    from minibert.assets import path
    from minibert.tokenization import BertTokenizer

    return BertTokenizer.from_pretrained(path("minilm"))


def _question(context: str, answer: str, at: int | None = None) -> qa.Question:
    start = context.index(answer) if at is None else at
    return qa.Question("t-0-1", "T", context, "where is it?", ((answer, start),))


def test_windows_overlap_and_each_labels_the_answer_it_holds_whole(minilm_tok):
    context = " ".join(f"word{i}" for i in range(60)) + " the answer is paris ."
    q = _question(context, "paris")
    data = qa.QADataset([q], minilm_tok, max_length=32, stride=8)
    assert len(data) > 2 and all(index == 0 for index, _, _ in data.windows)
    holding = [item for item in data.items if item["start_positions"] != 0]
    assert len(holding) >= 1  # the last window holds it; the others point at [CLS]
    for item, (_, context_pieces, offsets) in zip(data.items, data.windows):
        s, e = item["start_positions"], item["end_positions"]
        if s:
            assert context[offsets[s][0] : offsets[e][1]] == "paris"
            assert s in context_pieces and e == context_pieces[-2]  # before the final "."
    first, second = data.windows[0][1], data.windows[1][1]
    shared = {data.windows[0][2][i] for i in first} & {data.windows[1][2][i] for i in second}
    assert len(shared) == 8  # consecutive windows share `stride` pieces of the context


def test_an_answer_across_two_windows_is_labelled_only_where_it_is_whole(minilm_tok):
    words = [f"w{i}" for i in range(40)]
    context = " ".join(words)
    answer = ("w20 w21 w22 w23 w24 w25", context.index("w20 w21"))
    data = qa.QADataset([qa.Question("t", "T", context, "which?", (answer,))], minilm_tok, 24, 6)
    assert sum(item["start_positions"] != 0 for item in data.items) >= 1
    start, end = answer[1], answer[1] + len(answer[0])
    partial = 0
    for item, (_, pieces, offsets) in zip(data.items, data.windows):
        first, last = offsets[pieces[0]][0], offsets[pieces[-1]][1]
        held = first <= start and last >= end
        partial += not held and first < end and last > start  # a window cuts the answer
        assert (item["start_positions"] != 0) == held
    assert partial >= 1


def test_the_answer_at_the_contexts_last_piece_is_found(minilm_tok):
    context = "the tower stands in paris"
    data = qa.QADataset([_question(context, "paris")], minilm_tok, 64, 16)
    (item,), (_, pieces, offsets) = data.items, data.windows[0]
    assert item["start_positions"] == item["end_positions"] == pieces[-1]
    assert context[offsets[pieces[-1]][0] : offsets[pieces[-1]][1]] == "paris"


def test_decoding_maps_the_best_window_back_to_characters(minilm_tok):
    import torch

    context = " ".join(f"word{i}" for i in range(60)) + " the answer is paris ."
    data = qa.QADataset([_question(context, "paris")], minilm_tok, max_length=32, stride=8)

    class Oracle(torch.nn.Module):  # scores the labelled start and end high, in every window
        def __init__(self):
            super().__init__()
            self.p = torch.nn.Parameter(torch.zeros(1))

        def forward(self, input_ids, token_type_ids=None, attention_mask=None, **labels):
            start = torch.zeros(input_ids.shape)
            end = torch.zeros(input_ids.shape)
            for row, (s, e) in enumerate(zip(labels["start_positions"], labels["end_positions"])):
                start[row, s] += 5.0 + 5 * (s > 0)
                end[row, e] += 5.0 + 5 * (e > 0)
            return type("Out", (), {"start_logits": start, "end_logits": end, "loss": None})

    from minibert.finetuning import collate

    answers = qa.SPAN.predict(Oracle(), data, lambda b: collate(b, 0))
    assert answers == ["paris"]
    assert qa.WIKI_QA.scores(qa.SPAN.gold(data), answers)["exact_match"] == 100.0
