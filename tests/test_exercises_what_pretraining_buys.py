"""minibert.teaching.exercises.what_pretraining_buys, lesson 8: the opinion-word score.

Each checker passes a right answer and catches the typical mistakes, naming them in its hint.
"""

from __future__ import annotations

import math
import re

import pytest

from minibert.teaching import exercises


def opinion_scores_with(once=True, smooth=1, plus_vocab=True, sign=1, min_texts=True):
    def fn(texts, labels, min_count):
        counts = ({}, {})
        for text, label in zip(texts, labels):
            words = re.findall(r"[a-z]+", text.lower())
            for w in set(words) if once else words:
                counts[label][w] = counts[label].get(w, 0) + 1
        vocab = set(counts[0]) | set(counts[1])
        totals = [sum(c.values()) + (len(vocab) if plus_vocab else 0) for c in counts]
        out = {}
        for w in vocab:
            f, r = counts[1].get(w, 0), counts[0].get(w, 0)
            if (f + r if min_texts else 99) >= min_count:
                out[w] = sign * (
                    math.log((f + smooth) / totals[1]) - math.log((r + smooth) / totals[0])
                )
        return out

    return fn


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (opinion_scores_with(), True, "PASS"),
        (opinion_scores_with(once=False), False, "once per text"),
        (opinion_scores_with(smooth=0), False, "add one"),
        (opinion_scores_with(plus_vocab=False), False, "plus the vocabulary size"),
        (opinion_scores_with(sign=-1), False, "signs are reversed"),
        (opinion_scores_with(min_texts=False), False, "at least min_count"),
        (lambda texts, labels, m: [], False, "return a dict"),
    ],
)
def test_check_opinion_scores(fn, passes, hint, capsys):
    assert exercises.check_opinion_scores(fn).passed is passes
    assert hint in capsys.readouterr().out
