"""Lesson 8, what pretraining buys: the opinion-word score (each word's log-count ratio)."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

from minibert.teaching.baselines import WORD, opinion_scores
from minibert.teaching.exercises.common import Result, call_safely, report


def check_opinion_scores(fn: Callable[..., Any], cases: int = 20) -> Result:
    """Check ``fn(texts, labels, min_count) -> {word: log-count ratio}`` (baselines.opinion_scores)."""

    def variant(texts, labels, min_count, once=True, plus_vocab=True):
        # the reference with one thing changed, to name the mistake a wrong answer matches
        counts = (Counter(), Counter())
        for text, label in zip(texts, labels):
            words = WORD.findall(text.lower())
            counts[label].update(set(words) if once else words)
        vocab = counts[0].keys() | counts[1].keys()
        totals = [sum(c.values()) + (len(vocab) if plus_vocab else 0) for c in counts]
        return {
            w: math.log((counts[1][w] + 1) / totals[1]) - math.log((counts[0][w] + 1) / totals[0])
            for w in vocab
            if counts[0][w] + counts[1][w] >= min_count
        }

    def close(got: dict, want: dict) -> bool:
        return got.keys() == want.keys() and all(abs(got[w] - want[w]) < 1e-9 for w in want)

    name = "opinion scores"
    rng = random.Random(1)
    words = "good bad dull fun great boring film plot the a not".split()
    for case in range(cases):
        texts = [
            " ".join(rng.choices(words, k=rng.randint(2, 8))) for _ in range(rng.randint(6, 20))
        ]
        labels = [rng.randint(0, 1) for _ in texts]
        if case == 0:  # a word only in fresh texts, repeated, and Capitalised
            texts += ["Wonderful wonderful wonderful film"] * 3
            labels += [1, 1, 1]
        min_count = rng.choice([1, 2, 3])
        want = opinion_scores(texts, labels, min_count)
        got, hint = call_safely(fn, texts, labels, min_count)
        if hint is not None:
            if "ZeroDivision" in hint or "math domain" in hint:
                hint += " (a word never seen with one label: add one to every count)"
            return report(name, hint, case)
        if not isinstance(got, dict):
            return report(name, f"return a dict word -> score, got {type(got).__name__}.", case)
        got = {str(w): float(v) for w, v in got.items()}
        if close(got, want):
            continue
        if any(math.isinf(v) or math.isnan(v) for v in got.values()):
            hint = "a score is infinite: add one to every count (add-one smoothing)."
        elif close({w: -v for w, v in got.items()}, want):
            hint = "the signs are reversed: log P(word | fresh) - log P(word | rotten), fresh is 1."
        elif close(got, variant(texts, labels, min_count, once=False)):
            hint = "count a word once per text it is in, not every time it occurs."
        elif close(got, variant(texts, labels, min_count, plus_vocab=False)):
            hint = (
                "with add-one smoothing each label's total is its word count plus the vocabulary "
                "size, so that the probabilities sum to one."
            )
        elif got.keys() != want.keys():
            extra, missing = sorted(got.keys() - want.keys()), sorted(want.keys() - got.keys())
            hint = (
                f"score exactly the words in at least min_count={min_count} texts (lower-cased); "
                f"extra {extra[:3]}, missing {missing[:3]}."
            )
        else:
            w = next(w for w in sorted(want) if abs(got[w] - want[w]) >= 1e-9)
            hint = f"the score of {w!r} should be {want[w]:.4f}, got {got[w]:.4f}."
        return report(name, hint, case)
    return report(name, None, cases)
