"""SQuAD v1.1's scores, computed the way its official script (evaluate-v1.1.py) computes them.

    normalize_answer("The  Denver Broncos!")           # "denver broncos"
    exact_match("Broncos", ["the Broncos", "Denver"])  # 1.0: equal after normalisation
    f1("Denver Broncos", ["Broncos"])                  # 0.666...: token overlap, best answer
    evaluate([["Broncos"], ["1990"]], ["broncos", "1991"])
    # {"exact_match": 50.0, "f1": 50.0, "questions": 2}

Both scores compare *normalised* strings: lower-cased, ASCII punctuation deleted, the articles
"a", "an", "the" deleted as whole words, runs of whitespace joined into one space. A question
counts its best score over its accepted answers (SQuAD's dev set has about three per question),
and the dataset's scores are means over the questions, in percent (Rajpurkar et al., 2016,
"SQuAD: 100,000+ Questions for Machine Comprehension of Text").

Where the official script is quiet or surprising, this module does what the script does:

- F1 on an answer that normalises to nothing ("the", "...") is 0, even against another empty
  answer, while exact match says 1: so F1 can be below exact match on such a question. (SQuAD
  2.0's script changed this case to 1; v1.1's did not.)
- Only ASCII punctuation (``string.punctuation``) is deleted: an en dash or a curly quote stays,
  so "24–10" is one token. Deleting punctuation before the articles joins words: "well-known" ->
  "wellknown", "the-end" -> "theend" (no article left).
- Articles are found with Python 3's Unicode-aware ``\\b`` (the script run under Python 2 used
  ASCII word boundaries, which differ only for an article touching a non-ASCII letter).
- An unanswered question (a missing prediction) scores 0 on both measures: pass ``None``.
- A question with no accepted answer is an error here (the script's ``max`` fails on it).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

__all__ = ["evaluate", "exact_match", "f1", "normalize_answer"]

_PUNCTUATION = str.maketrans("", "", string.punctuation)  # ASCII only, as the official script
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(s: str) -> str:
    """Lower-case, delete ASCII punctuation, then the articles a/an/the, then squeeze whitespace."""
    text = s.lower().translate(_PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _check_answers(ground_truths: Sequence[str]) -> None:
    """Raise unless ground_truths is a non-empty sequence of strings (a bare str is refused)."""
    if isinstance(ground_truths, str):
        raise TypeError(
            f"ground_truths must be a list of accepted answers, got the string {ground_truths!r}:"
            " wrap it in a list"
        )
    if len(ground_truths) == 0:
        raise ValueError("ground_truths is empty: a SQuAD question has at least one answer")
    for answer in ground_truths:
        if not isinstance(answer, str):
            raise TypeError(f"each accepted answer must be a str, got {type(answer).__name__}")


def _exact_match_one(prediction: str, ground_truth: str) -> float:
    """1.0 when the two normalise to the same string, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(ground_truth))


def _f1_one(prediction: str, ground_truth: str) -> float:
    """Harmonic mean of token precision and recall over the normalised tokens (0 if none shared)."""
    predicted = normalize_answer(prediction).split()
    gold = normalize_answer(ground_truth).split()
    shared = sum((Counter(predicted) & Counter(gold)).values())  # each token at most min(counts)
    if shared == 0:  # also when either side normalises to nothing
        return 0.0
    precision, recall = shared / len(predicted), shared / len(gold)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, ground_truths: Sequence[str]) -> float:
    """1.0 if prediction equals any accepted answer after normalisation, else 0.0."""
    _check_answers(ground_truths)
    return max(_exact_match_one(prediction, truth) for truth in ground_truths)


def f1(prediction: str, ground_truths: Sequence[str]) -> float:
    """The best token-level F1 (in [0, 1]) of prediction against any accepted answer."""
    _check_answers(ground_truths)
    return max(_f1_one(prediction, truth) for truth in ground_truths)


def evaluate(gold: Sequence[Sequence[str]], predictions: Sequence[str | None]) -> dict:
    """{"exact_match": %, "f1": %, "questions": n}: the means over the questions, in percent.

    gold[i] holds question i's accepted answers, predictions[i] its predicted answer (None for an
    unanswered question, which scores 0 on both, as a missing id does in the official script).
    """
    if isinstance(gold, str) or isinstance(predictions, str):
        raise TypeError("gold and predictions must be sequences (one entry per question)")
    if len(gold) != len(predictions):
        raise ValueError(
            f"{len(gold)} questions in gold but {len(predictions)} predictions: give one"
            " prediction per question (None for an unanswered one)"
        )
    if len(gold) == 0:
        raise ValueError("no questions to evaluate: gold is empty")
    total_em = total_f1 = 0.0
    for i, (answers, prediction) in enumerate(zip(gold, predictions)):
        _check_answers(answers)
        if prediction is None:
            continue
        if not isinstance(prediction, str):
            raise TypeError(
                f"predictions[{i}] must be a str or None, got {type(prediction).__name__}"
            )
        total_em += exact_match(prediction, answers)
        total_f1 += f1(prediction, answers)
    n = len(gold)
    return {"exact_match": 100.0 * total_em / n, "f1": 100.0 * total_f1 / n, "questions": n}
