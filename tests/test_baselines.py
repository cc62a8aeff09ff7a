"""minibert.teaching.baselines: the trivial baselines the lessons measure models against."""

import pytest
import torch

from minibert import assets, finetuning, frozen_features, tasks
from minibert import pretraining as P
from minibert.tasks import baselines as task_baselines
from minibert.tasks.capitalisation import capitalisation_examples
from minibert.teaching import baselines
from minibert.tokenization import BertTokenizer


@pytest.fixture(scope="module")
def minilm_tok():
    return BertTokenizer.from_pretrained(assets.path("minilm"))


@pytest.fixture(scope="module")
def course_tok():
    return BertTokenizer.from_pretrained(assets.course_checkpoint("course"))


# --- masked language modelling and next sentence prediction --------------------------------------


def test_ngram_table_predicts_between_neighbours_and_backs_off():
    table = baselines.NgramTable([[[5, 6, 7], [5, 6, 7]], [[5, 8, 9]]])
    assert table.predict(5, 7) == 6  # seen between 5 and 7
    assert table.predict(5, 9) == 8
    assert table.predict(5, 4, unknown=4) == 6  # right neighbour is [MASK]: left bigram, 6 > 8
    assert table.predict(1, 2) == table.top == 5  # never seen: the most frequent token
    with pytest.raises(ValueError, match="at least one token"):
        baselines.NgramTable([[]])


def test_mlm_baselines_score_mask_and_chosen_positions_apart(minilm_tok):
    the, cat = minilm_tok.convert_tokens_to_ids(["the", "cat"])
    cls, sep, mask = minilm_tok.cls_token_id, minilm_tok.sep_token_id, minilm_tok.mask_token_id
    train = [[[the, cat, the, cat, the]]]
    item = {  # [CLS] the [MASK] the cat [SEP]: "cat" masked, "cat" kept (copied), "the" random
        "input_ids": [cls, the, mask, the, cat, sep],
        "mlm_labels": [-100, -100, cat, cat, cat, -100],
    }
    scores = baselines.mlm_baselines([item], train, minilm_tok)
    assert scores["most_frequent"]["token"] == "the"
    assert scores["most_frequent"]["mask_accuracy"] == 0.0
    assert scores["most_frequent"]["mask_top5"] == 1.0
    assert scores["copy_or_frequent"]["chosen_accuracy"] == pytest.approx(1 / 3)
    assert scores["ngram"]["mask_accuracy"] == 1.0  # "cat" is what stands between the, the
    assert scores["ngram"]["chosen_accuracy"] == pytest.approx(2 / 3)


def test_topic_baseline_cosine_threshold_and_order_blindness():
    docs = [[[1, 2, 3], [2, 3, 4]], [[7, 8, 9], [8, 9, 10]]]
    topic = baselines.TopicBaseline(docs)
    assert topic.cosine([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    assert topic.cosine([1, 2, 3], [7, 8, 9]) == 0.0
    assert topic.cosine([], [1]) == 0.0
    assert topic.cosine([1, 2], [2, 3, 4]) == pytest.approx(topic.cosine([2, 3, 4], [1, 2]))

    def pair(a, b, label):
        return P.PretrainingExample(tuple(a), tuple(b), label, 0, 0, (0, 1), (1, 2))

    pairs = [pair([1, 2, 3], [2, 3, 4], P.IS_NEXT), pair([7, 8, 9], [8, 9, 10], P.IS_NEXT)]
    pairs += [pair([1, 2, 3], [8, 9, 10], P.NOT_NEXT), pair([7, 8], [2, 3, 4], P.NOT_NEXT)]
    assert topic.fit(pairs).accuracy(pairs) == 1.0
    assert 0.0 < topic.threshold < 1.0


# --- reviews: a bag of words, opinion words ------------------------------------------------------


def test_bag_of_words_and_logistic_regression_learn_a_separable_task():
    texts = ["good fun", "a good film", "not good", "bad film", "very bad", "good and fun"] * 5
    labels = [1, 1, 0, 0, 0, 1] * 5
    bow = task_baselines.BagOfWords(texts, min_count=2)
    assert "not_good" in bow.index and "good" in bow.index  # bigrams beside unigrams
    x = bow(texts)
    assert x.is_sparse and x.shape == (30, len(bow.index))
    norms = x.to_dense().norm(dim=1)
    torch.testing.assert_close(norms, torch.ones(30))
    linear = frozen_features.fit_logistic_regression(x, labels, l2=1e-4)
    assert frozen_features.predict(linear, x).tolist() == labels  # "not good" is negative: bigrams
    with pytest.raises(ValueError, match="occurs"):
        task_baselines.BagOfWords(["a", "b"], min_count=2)


def test_ngrams_are_words_and_joined_word_runs():
    assert task_baselines.ngrams("Not bad at all", 2) == [
        "not", "bad", "at", "all", "not_bad", "bad_at", "at_all"
    ]  # fmt: skip
    assert task_baselines.ngrams("not bad", 1) == ["not", "bad"]
    with pytest.raises(ValueError, match="n must be a positive int"):
        task_baselines.ngrams("not bad at all", 0)


def test_opinion_scores_and_strongest_word():
    texts = ["a dull dull film", "dull plot", "a great film", "great fun", "a film"]
    scores = baselines.opinion_scores(texts, [0, 0, 1, 1, 1], min_count=2)
    assert set(scores) == {"a", "dull", "film", "great"}
    assert scores["great"] > 0 > scores["dull"]
    assert baselines.strongest_word("A DULL but great film", scores) in ("dull", "great")
    assert baselines.strongest_word("nothing known here", scores) is None
    with pytest.raises(ValueError, match="2 texts but 1 labels"):
        baselines.opinion_scores(["a", "b"], [1])


# --- restoring capitalisation --------------------------------------------------------------------


def test_capitalisation_baselines_score_the_labelled_words(course_tok):
    train = capitalisation_examples(
        ["Paris is big.", "Paris is old.", "the paris rules"], course_tok
    )
    test = capitalisation_examples(["Paris is in France."], course_tok)
    data = tuple(finetuning.TokenLabellingDataset(d) for d in (train, train, test))
    got = tasks.get("capitalisation").baseline_scores(data, course_tok)
    # four labelled words: Paris (1), is (0), in (0), France (1, never seen in train)
    # scored as a model is: the task's scores of the rule's answers
    assert tasks.get("capitalisation").gold(data[2]) == [[1, 0, 0, 1]]  # one sentence
    assert got["always lower-case"] == tasks.get("capitalisation").scores(
        [1, 0, 0, 1], [0, 0, 0, 0]
    )
    assert got["always lower-case"]["accuracy"] == 0.5 and got["always lower-case"]["f1"] == 0.0
    assert got["always lower-case"]["confusion"] == [[2, 0], [2, 0]]
    assert got["per-word majority"]["confusion"] == [[2, 0], [1, 1]]  # Paris right, France not
    assert got["per-word majority"]["accuracy"] == 0.75
    assert got["sentence starts"]["confusion"] == [[2, 0], [1, 1]]  # Paris only: France is inside
    assert got["sentence starts or per-word"]["confusion"] == [[2, 0], [1, 1]]


def test_sentence_starts_follow_the_ends_of_sentences(course_tok):
    """The first cased word of a text and the first after . ! or ? (numbers and punctuation,
    which have no case, are not labelled and do not start anything); or-ed with the table."""
    text = ["1999: the end. Then Rome fell! and why? because Rome did"]
    test = capitalisation_examples(text, course_tok)
    # labelled: the end Then Rome fell and why because Rome did
    assert test[0]["labels"].count(1) == 3  # Then, Rome, Rome
    starts = task_baselines.starts(test[0], course_tok)
    assert starts == [1, 0, 1, 0, 0, 1, 0, 1, 0, 0]  # the, Then, and, because
    train = capitalisation_examples(["Rome is old", "Rome again"], course_tok)
    data = (train, train, test)
    either = task_baselines.sentence_starts_or_per_word_majority(*data, course_tok)
    assert either == [[1, 0, 1, 1, 0, 1, 0, 1, 1, 0]]  # and both Romes from the table
    assert task_baselines.sentence_starts(*data, course_tok) == [starts]


def test_review_baselines_fit_on_train_and_choose_on_dev(course_tok):
    texts = ["good fun", "a good film", "not good", "bad film", "very bad", "good and fun"] * 5
    labels = [1, 1, 0, 0, 0, 1] * 5
    data = tuple(
        finetuning.ClassificationDataset(t, y, course_tok, 16)
        for t, y in ((texts, labels), (texts[:6], labels[:6]), (["good fun", "very bad"], [1, 0]))
    )
    got = tasks.get("rotten-tomatoes").baseline_scores(data, course_tok)
    assert got["bag of words"]["accuracy"] == 1.0
    assert got["majority class"]["confusion"] == [[1, 0], [1, 0]]  # a tie: the smaller id, 0
