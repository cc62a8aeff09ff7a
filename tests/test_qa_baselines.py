"""minibert.tasks.qa_baselines: the sliding-window and best-sentence baselines for extractive QA."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minibert.tasks import qa_baselines as qa
from minibert.tasks.qa_baselines import AnswerSpan

CURIE = (
    "Marie Curie was born in Warsaw. She moved to Paris in 1891. "
    "In Paris she studied physics at the Sorbonne."
)


# --- sentences --------------------------------------------------------------------------------


def _sentences(context):
    return [context[a:b] for a, b in qa.sentence_spans(context)]


def test_sentences_end_at_a_full_stop_before_a_capital_or_a_digit():
    assert _sentences(CURIE) == [
        "Marie Curie was born in Warsaw.",
        "She moved to Paris in 1891.",
        "In Paris she studied physics at the Sorbonne.",
    ]
    assert _sentences("It rose! Did it? 1990 was the year.") == [
        "It rose!",
        "Did it?",
        "1990 was the year.",
    ]
    # a single letter is an initial only before a full stop
    assert _sentences("We chose plan B! Then it worked.") == ["We chose plan B!", "Then it worked."]


def test_sentences_keep_initials_titles_and_lower_case_continuations_whole():
    context = "Dr. Smith met J. R. Tolkien in the U.S. Army. Then, e.g. at noon, they left."
    assert _sentences(context) == [
        "Dr. Smith met J. R. Tolkien in the U.S. Army.",
        "Then, e.g. at noon, they left.",
    ]


def test_a_sentence_keeps_its_closing_quote_and_whitespace_is_trimmed():
    context = '  She said "Stop." Then he left (quietly.)  And nobody cared.\n'
    assert _sentences(context) == [
        'She said "Stop."',
        "Then he left (quietly.)",
        "And nobody cared.",
    ]
    assert qa.sentence_spans("") == [] and qa.sentence_spans(" \n ") == []


# --- best sentence ------------------------------------------------------------------------------


def test_best_sentence_returns_the_sentence_sharing_most_question_words():
    span = qa.best_sentence_span("What did Marie Curie study in Paris?", CURIE)
    # sentence 1 shares {marie, curie}, 2 shares {paris}, 3 shares {paris}: "study" != "studied"
    assert span == AnswerSpan("Marie Curie was born in Warsaw.", 0)
    span = qa.best_sentence_span("Which physics school did she attend in Paris?", CURIE)
    assert span.text == "In Paris she studied physics at the Sorbonne."
    assert CURIE[span.start : span.end] == span.text


def test_best_sentence_ties_go_to_the_first_and_stop_words_do_not_count():
    # "in" and "the" are stop words; "paris" is in sentences 2 and 3: the first of them wins
    assert qa.best_sentence("Was it in the Paris?", CURIE) == "She moved to Paris in 1891."
    # no question word anywhere: every sentence ties at 0, the first wins
    assert qa.best_sentence("Why?", CURIE) == "Marie Curie was born in Warsaw."


# --- sliding window ---------------------------------------------------------------------------


def test_sliding_window_answers_from_the_sentence_that_overlaps_the_question():
    # sentence 1 shares marie, curie, born and the bigram "marie curie": the only candidate there
    # that holds no question word is "Warsaw"
    span = qa.sliding_window_span("In which city was Marie Curie born?", CURIE)
    assert span == AnswerSpan("Warsaw", CURIE.index("Warsaw"))
    assert qa.sliding_window("In which city was Marie Curie born?", CURIE) == "Warsaw"


def test_sliding_window_span_keeps_the_punctuation_inside_an_answer():
    context = "The treaty was signed on June 28, 1919, in the Hall of Mirrors. It ended the war."
    # S = {treaty, signed, june, 28, 1919}: the window "signed on June 28, 1919" holds four of
    # them, more than any other candidate's window can
    span = qa.sliding_window_span("When was the treaty signed?", context)
    assert span == AnswerSpan("June 28, 1919", context.index("June"))


def test_the_window_favours_longer_candidates_and_never_returns_question_words():
    context = "The Acme Company was founded by John Smith in 1901."
    question = "Who founded the Acme Company?"
    # "John Smith in 1901": S has 6 words and its window "founded by John Smith in 1901" holds
    # four of them; "John Smith" (S of 5) reaches three
    assert qa.sliding_window(question, context) == "John Smith in 1901"
    # up to 2 words: "John", "John Smith" and "1901" all reach three ("Acme Company was
    # founded" is a window of four for the last); distance favours John's two (2/9 < 5/9) and
    # the tie between them goes to the shorter
    assert qa.sliding_window(question, context, max_answer_words=2) == "John"


def test_distance_breaks_a_tie_of_the_window_towards_the_question_words():
    # |S| = 7 > 6 words: every window is the whole sentence and both candidates score
    # IC(queen) + IC(own word); "Red" is 3 words from "queen", "Blue" 2: d = 3/5 and 2/5
    question = "Which colour did the queen choose for her grand royal banner?"
    context = "Red or the queen or Blue."
    assert qa.sliding_window(question, context, distance=False) == "Red"  # tie: the first
    assert qa.sliding_window(question, context) == "Blue"


def test_the_window_and_distance_scores_by_hand():
    assert qa._window_score([1.0, 0.0, 2.0, 0.5], 2) == 2.5
    assert qa._window_score([1.0, 0.0, 2.0], 9) == 3.0  # a window wider than the sentence
    assert qa._distance([1], [4, 6], 11) == 3 / 10
    assert qa._distance([], [4], 11) == 1.0  # no question word in the sentence


def test_inverse_counts_are_over_the_whole_context():
    paragraph = qa._read("Paris is big. Paris is old. Rome is old.")
    assert paragraph.ic["paris"] == math.log(1 + 1 / 2)
    assert paragraph.ic["rome"] == math.log(2)


def test_no_candidate_gives_the_empty_answer_at_zero():
    assert qa.sliding_window_span("Where is Paris?", "Paris. Paris is here.") == AnswerSpan("", 0)
    assert qa.sliding_window_span("Who?", "") == AnswerSpan("", 0)
    assert qa.best_sentence_span("Who?", "   ") == AnswerSpan("", 0)


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError, match="question must be a str, got NoneType"):
        qa.sliding_window(None, CURIE)
    with pytest.raises(TypeError, match="context must be a str, got list"):
        qa.best_sentence("Who?", [CURIE])
    with pytest.raises(ValueError, match="max_answer_words must be at least 1, got 0"):
        qa.sliding_window("Who?", CURIE, max_answer_words=0)
    with pytest.raises(TypeError, match="max_answer_words must be an int"):
        qa.sliding_window("Who?", CURIE, max_answer_words=True)


# --- properties on random paragraphs ---------------------------------------------------------

WORDS = ["Paris", "paris", "Rome", "the", "of", "in", "was", "Curie", "1891", "Warsaw", "city"]
GLUE = [" ", " ", " ", ", ", ". ", "! ", "? ", " (", ") ", ' "', '" ', "; ", "-", "'s ", "\n"]
paragraphs = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(GLUE)), max_size=40).map(
    lambda pairs: "".join(w + g for w, g in pairs)
)
questions = st.lists(st.sampled_from([*WORDS, "Who", "What", "where"]), max_size=6).map(
    lambda ws: " ".join(ws) + "?"
)


@settings(max_examples=300, deadline=None)
@given(questions, paragraphs, st.integers(1, 5), st.booleans())
def test_the_sliding_window_answer_is_a_span_of_one_sentence_without_question_words(
    question, context, longest, distance
):
    span = qa.sliding_window_span(question, context, max_answer_words=longest, distance=distance)
    assert context[span.start : span.start + len(span.text)] == span.text
    if not span.text:
        assert span.start == 0
        return
    words = [w.lower() for w in qa._WORD.findall(span.text)]
    asked = qa._content([w.lower() for w in qa._WORD.findall(question)])
    assert 1 <= len(words) <= longest
    assert not set(words) & asked
    assert words[0] not in qa.STOP_WORDS and words[-1] not in qa.STOP_WORDS
    assert any(a <= span.start and span.end <= b for a, b in qa.sentence_spans(context))
    assert not set(span.text) & qa._SEPARATORS
    qa._read.cache_clear()  # the same answer when the context is read afresh: deterministic
    assert (
        qa.sliding_window_span(question, context, max_answer_words=longest, distance=distance)
        == span
    )


@settings(max_examples=300, deadline=None)
@given(questions, paragraphs)
def test_the_best_sentence_is_a_whole_sentence_of_the_context(question, context):
    span = qa.best_sentence_span(question, context)
    assert context[span.start : span.start + len(span.text)] == span.text
    spans = qa.sentence_spans(context)
    assert (span.start, span.end) in spans if spans else span == AnswerSpan("", 0)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(WORDS + ["and", "city", "warsaw"]), max_size=10).map(
        lambda ws: [w.lower() for w in ws]
    ),
    st.lists(st.sampled_from(WORDS + ["and"]), max_size=15).map(lambda ws: [w.lower() for w in ws]),
)
def test_the_overlap_outside_a_candidate_is_its_sentences_overlap(question, sentence):
    """The paper scores the sentence without the candidate: with our candidates, no difference."""
    asked = qa._content(question)
    for first, last in qa._candidates(sentence, [False] * len(sentence), asked, 4):
        before, after = sentence[:first], sentence[last + 1 :]
        unigrams = asked & (qa._content(before) | qa._content(after))
        bigrams = qa._bigrams(question) & (qa._bigrams(before) | qa._bigrams(after))
        assert len(unigrams) + len(bigrams) == qa._overlap(question, sentence)
