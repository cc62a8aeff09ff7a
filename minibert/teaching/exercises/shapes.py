"""Lesson 7, tagging, pairs and spans: decoding the best answer span, repairing BIO tags."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import torch

from minibert.teaching.exercises.common import Result, call_safely, report

NEG_INF = float("-inf")  # the logit of a position outside the context: never part of an answer


def _best_span(start: Sequence[float], end: Sequence[float], max_answer_tokens: int) -> tuple:
    """The reference: (first, last) maximising start[first] + end[last] with first <= last <
    first + max_answer_tokens; ties go to the earliest first, then the earliest last."""
    best, found = NEG_INF, (0, 0)
    for s in range(len(start)):
        for e in range(s, min(s + max_answer_tokens, len(end))):
            if start[s] + end[e] > best:
                best, found = start[s] + end[e], (s, e)
    return found


def _span_cases(g: random.Random, cases: int) -> list[tuple[list[float], list[float], int, str]]:
    """(start logits, end logits, max_answer_tokens, what the case is about): fixed cases first."""
    fixed = [
        # the best start comes after the best end: taking each one's argmax alone is wrong
        ([0.0, 1.0, 0.5, 4.0, 0.0], [0.0, 3.0, 2.0, 0.0, 0.5], 5, "order"),
        # the best pair is 4 pieces long, one more than allowed; a pair of exactly 3 is allowed
        ([5.0, 0.0, 0.0, 0.0, 1.0], [0.0, 3.0, 0.0, 5.0, 0.0], 3, "length"),
        ([5.0, 0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 4.5, 5.0, 0.0], 3, "exact length"),
        # four pairs tie at 10: the earliest start, then the earliest end
        ([0.0, 5.0, 5.0, 0.0], [0.0, 0.0, 5.0, 5.0], 3, "tie"),
        # the answer is the last piece
        ([0.0, 1.0, 0.0, 0.5, 3.0], [0.0, 0.5, 1.0, 0.0, 3.0], 4, "last"),
        # a question and [SEP] at -inf (outside the context), every context logit below zero
        ([NEG_INF, NEG_INF, NEG_INF, -3.0, -1.0, -2.0, -4.0, NEG_INF],
         [NEG_INF, NEG_INF, NEG_INF, -2.0, -5.0, -1.5, -3.0, NEG_INF], 4, "forbidden"),
    ]  # fmt: skip
    made = []
    for _ in range(cases - len(fixed)):
        n = g.randint(3, 16)
        start = [round(g.gauss(0, 2), 3) for _ in range(n)]
        end = [round(g.gauss(0, 2), 3) for _ in range(n)]
        question = g.randint(0, n // 3)  # a forbidden question region first, sometimes
        start[:question], end[:question] = [NEG_INF] * question, [NEG_INF] * question
        made.append((start, end, g.randint(1, 6), "random"))
    return fixed + made


def _span_hint(got: tuple[int, int], case: tuple, want: tuple[int, int]) -> str:
    """What a wrong (start, end) most likely got wrong, for one case."""
    start, end, longest, about = case
    s, e = got
    n = len(start)
    argmaxes = (
        max(range(n), key=lambda i: (start[i], -i)),
        max(range(n), key=lambda i: (end[i], -i)),
    )
    if (s, e - 1) == want:
        return "return the last piece of the span (inclusive), not the one after it."
    if not (0 <= s < n and 0 <= e < n):
        return f"({s}, {e}) is not a pair of positions of a sequence of {n}."
    if start[s] == NEG_INF or end[e] == NEG_INF:
        return (
            f"({s}, {e}) uses a position whose logit is -inf (outside the context): never pick it; "
            "if you mask invalid pairs, mask with -inf, not 0."
        )
    if e < s:
        if got == argmaxes:
            return (
                "you took the best start and the best end separately; here the end comes before "
                "the start: search over pairs (start, end) with start <= end."
            )
        return f"the end ({e}) comes before the start ({s}): an answer needs start <= end."
    if e - s + 1 > longest:
        return (
            f"({s}, {e}) is {e - s + 1} pieces long; the answer may have at most "
            f"max_answer_tokens = {longest} (end < start + max_answer_tokens)."
        )
    score, best = start[s] + end[e], start[want[0]] + end[want[1]]
    if score == best:
        return (
            f"({s}, {e}) ties with ({want[0]}, {want[1]}) at {best:g}: on a tie keep the earliest "
            "start, then the earliest end (replace the best only when a pair scores strictly more)."
        )
    if about == "exact length" and want[1] - want[0] + 1 == longest:
        return f"a span of exactly max_answer_tokens = {longest} pieces is allowed."
    if want[1] == n - 1 and got == _best_span(start[:-1], end[:-1], longest):
        return "the last piece can end (and start) the answer: include it in your search."
    return (
        f"the best allowed pair is ({want[0]}, {want[1]}), scoring {best:g}; yours, ({s}, {e}), "
        f"scores {score:g}."
    )


def check_best_span(fn: Callable[..., Any], cases: int = 30) -> Result:
    """Check ``fn(start_logits, end_logits, max_answer_tokens) -> (start, end)``.

    start_logits and end_logits are 1-D float tensors (seq,), -inf outside the context; the answer
    maximises start_logits[start] + end_logits[end] with start <= end < start + max_answer_tokens,
    ties going to the earliest start, then the earliest end.
    """
    name = "best span"
    g = random.Random(7)
    for case, item in enumerate(_span_cases(g, cases)):
        start, end, longest, _ = item
        want = _best_span(start, end, longest)
        got, hint = call_safely(fn, torch.tensor(start), torch.tensor(end), longest)
        if hint is not None:
            return report(name, hint, case)
        try:
            got = tuple(int(x) for x in got)
        except (TypeError, ValueError, RuntimeError):
            return report(name, f"return a pair of ints (start, end), got {got!r:.60}.", case)
        if len(got) != 2:
            return report(name, f"return a pair (start, end), got {len(got)} values.", case)
        if got != want:
            return report(name, _span_hint(got, item, want), case)
    return report(name, None, cases)


# ---- BIO repair ---------------------------------------------------------------------------------


def _repair_bio(tags: Sequence[str]) -> list[str]:
    """The reference: each I-X that starts a span (first tag, after O, or after another type)
    becomes B-X, as CoNLL's conlleval and seqeval read it; every other tag stays."""
    repaired, previous = [], "O"
    for tag in tags:
        if tag.startswith("I-") and (previous == "O" or previous[2:] != tag[2:]):
            tag = "B-" + tag[2:]
        repaired.append(tag)
        previous = tag
    return repaired


def _repair_variant(tags, at_start=True, on_type=True, drop=False, every_i=False) -> list[str]:
    """The reference with one thing changed, to name the mistake a wrong answer matches."""
    repaired, previous = [], None
    for tag in tags:
        starts = previous == "O" or (previous is None and at_start)
        starts = starts or (on_type and previous not in (None, "O") and previous[2:] != tag[2:])
        if tag.startswith("I-") and (starts or every_i):
            tag = "O" if drop else "B-" + tag[2:]
        repaired.append(tag)
        previous = tag
    return repaired


def _bio_cases(g: random.Random, cases: int) -> list[list[str]]:
    """Tag sequences: the fixed cases first (each invalid in one way, and valid ones), then random."""
    fixed = [
        ["O", "I-PER", "I-PER", "O"],  # an I- after O
        ["I-LOC", "I-LOC", "O", "B-PER"],  # an I- that starts the sentence
        ["B-PER", "I-LOC", "I-LOC", "O"],  # an I- after another type
        ["B-ORG", "I-ORG", "O", "B-ORG", "B-ORG", "I-ORG"],  # valid: nothing changes
        ["O", "I-MISC", "O", "I-MISC", "I-PER", "I-PER"],
        [],
    ]
    types = ("PER", "LOC")
    made = []
    for _ in range(cases - len(fixed)):
        n = g.randint(1, 12)
        made.append([g.choice(["O", "O", *(f"{p}-{t}" for p in "BI" for t in types)])
                     for _ in range(n)])  # fmt: skip
    return fixed + made


def check_repair_bio(fn: Callable[..., Any], cases: int = 40) -> Result:
    """Check ``fn(tags) -> tags``: a list of BIO tags ("O", "B-PER", "I-PER", ...) made valid the
    way conlleval and seqeval read it (an I-X that starts a span becomes B-X; nothing else changes)."""
    name = "BIO repair"
    g = random.Random(3)
    for case, tags in enumerate(_bio_cases(g, cases)):
        want = _repair_bio(tags)
        given = list(tags)
        got, hint = call_safely(fn, given)
        if hint is not None:
            return report(name, hint, case)
        if given != tags:
            return report(name, "return a new list and leave the tags you were given as they were.",
                          case)  # fmt: skip
        if not isinstance(got, Sequence) or isinstance(got, str) or len(got) != len(tags):
            return report(name, f"return a list of one tag per input tag ({len(tags)} here).", case)
        got = list(got)
        if got == want:
            continue
        if any(str(t).startswith(("B-I-", "B-B-")) for t in got):
            hint = 'keep the type: "I-PER" becomes "B-PER".'
        elif got == _repair_variant(tags, drop=True):
            hint = (
                "an I- that starts a span is read as the start of a span (conlleval, seqeval): "
                "make it B-, do not turn it into O."
            )
        elif got == _repair_variant(tags, on_type=False):
            hint = (
                "an I- after a span of another type starts a new span: I-LOC after B-PER is B-LOC."
            )
        elif got == _repair_variant(tags, at_start=False):
            hint = "an I- that is the first tag of the sentence starts a span too."
        elif got == _repair_variant(tags, every_i=True):
            hint = "an I- that continues a span of its own type stays I-."
        elif any(t != "O" and not t.startswith("I-") and r != t for t, r in zip(tags, got)):
            hint = "only I- tags change: O and B- tags stay as they are."
        else:
            hint = f"for {tags} the repaired tags are {want}, got {got}."
        return report(name, hint, case)
    return report(name, None, cases)
