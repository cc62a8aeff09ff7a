"""minibert.squad: SQuAD v1.1's exact match and F1, as its official script computes them.

The hand-worked cases state the script's published behaviour; the property tests compare the
module with a re-statement, written for this test, of the logic of evaluate-v1.1.py (as stored,
for example, in allenai/bi-att-flow at squad/evaluate-v1.1.py) on many random strings.
"""

import re
import string
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minibert import squad

# --- the official script's logic, re-stated step by step (test-only: not part of the package) ---


def _reference_normalize(s):
    """lower -> drop ASCII punctuation -> articles to a space -> split and join on one space."""
    lowered = s.lower()
    no_punctuation = "".join(ch for ch in lowered if ch not in set(string.punctuation))
    no_articles = re.sub(r"\b(a|an|the)\b", " ", no_punctuation)
    return " ".join(no_articles.split())


def _reference_f1(prediction, ground_truth):
    """Token F1; 0 (an int, as in the script) when no token is shared."""
    pred_tokens = _reference_normalize(prediction).split()
    gold_tokens = _reference_normalize(ground_truth).split()
    num_same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_tokens)
    recall = 1.0 * num_same / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)


def _reference_exact(prediction, ground_truth):
    """A bool, as in the script."""
    return _reference_normalize(prediction) == _reference_normalize(ground_truth)


def _reference_best(metric, prediction, ground_truths):
    """The script's metric_max_over_ground_truths."""
    return max([metric(prediction, truth) for truth in ground_truths])


def _reference_evaluate(dataset, predictions):
    """The script's evaluate: SQuAD's nested articles, a dict of predictions by question id."""
    f1 = exact_match = total = 0
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                if qa["id"] not in predictions:  # unanswered: scores 0
                    continue
                truths = [answer["text"] for answer in qa["answers"]]
                exact_match += _reference_best(_reference_exact, predictions[qa["id"]], truths)
                f1 += _reference_best(_reference_f1, predictions[qa["id"]], truths)
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


# --- random strings that reach every step of the normalisation ----------------------------------

FRAGMENTS = [
    *("a", "an", "the", "The", "AN", "A", "tHe", "theatre", "another", "ant", "cat", "Cat"),
    *("é", "É", "ß", "İ", "ǅ", "1", "24", "_", "a_b", "ﬁ"),
    *(" ", "  ", "\t", "\n", "\u00a0", "\u2003", "\u3000"),
    *(".", ",", "-", "'", "!", '"', "(", ")", "a.", "the-", "“", "”", "–", "—", "…", "¿"),
]
texts = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join),
    st.text(max_size=20),
)
answer_lists = st.lists(texts, min_size=1, max_size=3)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_normalize_answer_matches_the_official_logic(s):
    assert squad.normalize_answer(s) == _reference_normalize(s)


@settings(max_examples=300, deadline=None)
@given(texts, answer_lists)
def test_exact_match_and_f1_match_the_official_logic(prediction, truths):
    assert squad.exact_match(prediction, truths) == float(
        _reference_best(_reference_exact, prediction, truths)
    )
    assert squad.f1(prediction, truths) == _reference_best(_reference_f1, prediction, truths)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(answer_lists, st.one_of(st.none(), texts)), min_size=1, max_size=8))
def test_evaluate_matches_the_official_script_on_a_squad_shaped_dataset(questions):
    qas = [
        {"id": f"q{i}", "answers": [{"text": t} for t in truths]}
        for i, (truths, _) in enumerate(questions)
    ]
    dataset = [{"paragraphs": [{"qas": qas[:3]}, {"qas": qas[3:]}]}]
    by_id = {f"q{i}": p for i, (_, p) in enumerate(questions) if p is not None}
    got = squad.evaluate([t for t, _ in questions], [p for _, p in questions])
    want = _reference_evaluate(dataset, by_id)
    assert got == {**want, "questions": len(questions)}


# --- hand-worked cases: what the official script does ---------------------------------------------


@pytest.mark.parametrize(
    "text, normalised",
    [
        ("The Denver Broncos!", "denver broncos"),  # case, article, punctuation
        ("  A  cat\tsat \n", "cat sat"),  # whitespace squeezed and trimmed
        ("An apple, an ANT and THE end.", "apple ant and end"),
        ("theatre another Anthem", "theatre another anthem"),  # articles only as whole words
        ("U.S.A.", "usa"),
        ("well-known", "wellknown"),  # punctuation goes first: the halves join
        ("the-end", "theend"),  # ... so this "the" is no longer a word
        ("a.b", "ab"),
        ("don't", "dont"),
        ("24–10", "24–10"),  # an en dash is not ASCII punctuation: it stays
        ("“Hello”", "“hello”"),  # nor are curly quotes
        ("the", ""),
        ("A an THE", ""),
        ("", ""),
    ],
)
def test_normalize_answer_hand_worked(text, normalised):
    assert squad.normalize_answer(text) == normalised


def test_exact_match_ignores_case_punctuation_articles_and_spacing():
    assert squad.exact_match("the  Broncos.", ["Denver Broncos", "broncos"]) == 1.0
    assert squad.exact_match("DENVER broncos!", ["Denver Broncos"]) == 1.0
    assert squad.exact_match("Broncos", ["Denver Broncos"]) == 0.0
    assert squad.exact_match("", ["Broncos"]) == 0.0


def _close(value: float, expected: Fraction) -> bool:
    """value is expected, to float rounding."""
    return abs(Fraction(value) - expected) < Fraction(1, 10**12)


def test_squad_f1_on_a_partial_overlap_is_the_hand_count():
    # "denver broncos" vs "broncos": 1 shared, precision 1/2, recall 1 -> 2/3
    assert _close(squad.f1("Denver Broncos", ["Broncos"]), Fraction(2, 3))
    # "cat cat sat" vs "cat sat on mat": shared cat (min(2, 1)) and sat -> P 2/3, R 2/4 -> 4/7
    assert _close(squad.f1("the cat, the cat sat", ["a cat sat on a mat"]), Fraction(4, 7))
    # order does not matter: a bag of tokens
    assert squad.f1("broncos denver", ["Denver Broncos"]) == 1.0
    assert squad.f1("Panthers", ["Denver Broncos"]) == 0.0


def test_a_question_takes_its_best_accepted_answer():
    # vs "panthers": P 1/2, R 1 -> 2/3; vs "carolina panthers team": P 1, R 2/3 -> 4/5
    truths = ["Panthers", "the Carolina Panthers team"]
    assert _close(squad.f1("Carolina Panthers", truths), Fraction(4, 5))
    assert squad.exact_match("panthers", truths) == 1.0


def test_an_answer_that_normalises_to_nothing():
    assert squad.f1("", ["Broncos"]) == 0.0  # empty prediction
    assert squad.f1("Broncos", ["the"]) == 0.0
    # the official v1.1 script: equal empty strings are an exact match but share no token
    assert squad.exact_match("The", ["a"]) == 1.0
    assert squad.f1("The", ["a"]) == 0.0
    assert squad.exact_match("...", ["the"]) == 1.0 and squad.f1("...", ["the"]) == 0.0


def test_evaluate_gives_percentages_over_questions():
    gold = [["Denver Broncos"], ["Santa Clara, California", "Santa Clara"], ["1990"]]
    scores = squad.evaluate(gold, ["Broncos", "santa clara", None])  # the third is unanswered
    assert scores["questions"] == 3
    assert _close(scores["exact_match"], Fraction(100, 3))  # 0, 1, 0
    assert _close(scores["f1"], Fraction(100, 3) * (Fraction(2, 3) + 1 + 0))


def test_errors_say_what_was_expected():
    with pytest.raises(TypeError, match="list of accepted answers"):
        squad.f1("Broncos", "Broncos")  # a bare string would be read letter by letter
    with pytest.raises(ValueError, match="at least one answer"):
        squad.exact_match("Broncos", [])
    with pytest.raises(TypeError, match="must be a str"):
        squad.f1("Broncos", [None])
    with pytest.raises(ValueError, match="2 questions in gold but 1 predictions"):
        squad.evaluate([["a"], ["b"]], ["a"])
    with pytest.raises(ValueError, match="no questions"):
        squad.evaluate([], [])
    with pytest.raises(TypeError, match=r"predictions\[0\] must be a str or None"):
        squad.evaluate([["a"]], [3])
