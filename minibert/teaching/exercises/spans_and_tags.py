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
        (
            [NEG_INF, NEG_INF, NEG_INF, -3.0, -1.0, -2.0, -4.0, NEG_INF],
            [NEG_INF, NEG_INF, NEG_INF, -2.0, -5.0, -1.5, -3.0, NEG_INF],
            4,
            "forbidden",
        ),
    ]
    made = []
    for _ in range(cases - len(fixed)):
        n = g.randint(3, 16)
        start = [round(g.gauss(0, 2), 3) for _ in range(n)]
        end = [round(g.gauss(0, 2), 3) for _ in range(n)]
        question = g.randint(0, n // 3)  # a forbidden question region first, sometimes
        start[:question], end[:question] = [NEG_INF] * question, [NEG_INF] * question
        made.append((start, end, g.randint(1, 6), "random"))
    return fixed + made


def _span_hint(
    got: tuple[int, int],
    want: tuple[int, int],
    start: list[float],
    end: list[float],
    longest: int,
    about: str,
) -> str:
    """What a wrong (start, end) most likely got wrong, for one case (its logits, its longest
    answer, what it is about)."""
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
        start, end, longest, about = item
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
            return report(name, _span_hint(got, want, start, end, longest, about), case)
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
        made.append(
            [g.choice(["O", "O", *(f"{p}-{t}" for p in "BI" for t in types)]) for _ in range(n)]
        )
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
            return report(
                name, "return a new list and leave the tags you were given as they were.", case
            )
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


# ---- the answer over a context's windows, in characters ----------------------------------------

_WORDS = (
    "river",
    "stone",
    "king",
    "Troy",
    "ship",
    "sailed",
    "fifty",
    "north",
    "oracle",
    "Argos",
    "shield",
    "bronze",
    "gods",
    "city",
    "Achilles",
    "spear",
    "wall",
    "night",
)


def _windowed_case(g: random.Random, question: int, window: int, stride: int) -> tuple:
    """A context, its windows ({start_logits, end_logits, offsets}) and each window's context
    pieces: [CLS] question [SEP] context pieces [SEP], offsets None outside the context. Some words
    are two pieces (as WordPiece splits them), so an answer can end inside a word."""
    words = [g.choice(_WORDS) for _ in range(g.randint(8, 24))]
    context, pieces = " ".join(words), []
    at = 0
    for word in words:
        cut = g.randint(2, len(word) - 1) if len(word) > 4 and g.random() < 0.3 else len(word)
        pieces += [(at, at + cut)] + ([(at + cut, at + len(word))] if cut < len(word) else [])
        at += len(word) + 1
    windows, first = [], 0
    while True:
        part = pieces[first : first + window]
        offsets = [None] * (question + 2) + [list(p) for p in part] + [None]
        n = len(offsets)
        windows.append(
            {
                "start_logits": [round(g.gauss(0, 2), 3) for _ in range(n)],
                "end_logits": [round(g.gauss(0, 2), 3) for _ in range(n)],
                "offsets": offsets,
            }
        )
        if first + window >= len(pieces):
            return context, windows
        first += window - stride


def _answer(
    context: str,
    windows: Sequence[dict],
    longest: float,
    *,
    only_first: bool = False,
    exclusive: bool = False,
    separately: bool = False,
) -> str:
    """The reference (and, with a flag, a mistake): the best start + end logit over every window's
    context pieces, start <= end < start + longest; ties keep the earliest window, start, end."""
    best, found = NEG_INF, ""
    for w in windows[:1] if only_first else windows:
        inside = [i for i, o in enumerate(w["offsets"]) if o is not None]
        start, end, offsets = w["start_logits"], w["end_logits"], w["offsets"]
        if separately:  # each argmax alone, kept only when in order
            s, e = (max(inside, key=lambda i, x=x: (x[i], -i)) for x in (start, end))
            pairs = [(s, e)] if s <= e < s + longest else []
        else:
            pairs = [(s, e) for s in inside for e in inside if s <= e < s + longest]
        for s, e in pairs:
            if start[s] + end[e] > best:
                last = offsets[e][0] if exclusive else offsets[e][1]
                best, found = start[s] + end[e], context[offsets[s][0] : last]
    return found


def _windows_cases(g: random.Random, cases: int) -> list[tuple[str, list[dict], int, str]]:
    """(context, windows, max_answer_tokens, what the case is about): planted cases, then random."""
    made = []
    for n in range(cases):
        context, windows = _windowed_case(g, g.randint(1, 4), g.randint(5, 9), g.randint(1, 3))
        while len(windows) < 2:  # every case has at least two windows
            context, windows = _windowed_case(g, g.randint(1, 4), g.randint(5, 9), 2)
        about = ("question", "second window", "length", "random")[min(n, 3)]
        last = windows[-1]
        if about == "question":  # the question's pieces score highest: they are not the context
            first = next(i for i, o in enumerate(windows[0]["offsets"]) if o is not None)
            windows[0]["start_logits"][first] = windows[0]["end_logits"][first + 1] = 6.0
            windows[0]["start_logits"][1] = windows[0]["end_logits"][2] = 9.0
        if about == "second window":  # the answer is in a later window, never in the first
            inside = [i for i, o in enumerate(last["offsets"]) if o is not None]
            last["start_logits"][inside[0]] = last["end_logits"][inside[-1]] = 8.0
        made.append((context, windows, (3, 4, 1, g.randint(1, 6))[min(n, 3)], about))
    return made


def check_answer_over_windows(fn: Callable[..., Any], cases: int = 30) -> Result:
    """Check ``fn(context, windows, max_answer_tokens) -> str``: the answer's text.

    Each window is a dict: ``start_logits`` and ``end_logits`` (lists of floats, one per piece) and
    ``offsets`` (per piece, the [first, end) characters of context it covers, or None for
    [CLS], the question's pieces and [SEP]). The answer is the span with the highest start + end
    logit over every window, both ends among the window's context pieces, start <= end < start +
    max_answer_tokens (ties: the earliest window, then start, then end), returned as
    ``context[offsets[start][0] : offsets[end][1]]``.
    """
    name = "answer over windows"
    g = random.Random(11)
    for case, (context, windows, longest, about) in enumerate(_windows_cases(g, cases)):
        want = _answer(context, windows, longest)
        given = [dict(w) for w in windows]
        got, hint = call_safely(fn, context, given, longest)
        if hint is not None:
            return report(name, hint, case)
        if not isinstance(got, str):
            return report(
                name, f"return the answer's text (a str), got {type(got).__name__}.", case
            )
        if got == want:
            continue
        mistakes = {
            "an answer ends at the end of its last piece: offsets[end][1], not offsets[end][0].": dict(
                exclusive=True
            ),
            "search every window: a long context's answer may lie in a later one.": dict(
                only_first=True
            ),
            "you took the best start and the best end of a window separately; search pairs "
            "(start, end) with start <= end < start + max_answer_tokens.": dict(separately=True),
        }
        hint = next(
            (
                h
                for h, flags in mistakes.items()  # a mistake that gives this answer here
                if got == _answer(context, windows, longest, **flags) != ""
            ),
            None,
        )
        if hint is None and got == _answer(context, windows, float("inf")):
            hint = f"the answer may have at most max_answer_tokens = {longest} pieces."
        if hint is None and about == "question":
            hint = "[CLS], the question and [SEP] (offsets None) are never part of the answer."
        return report(name, hint or f"expected {want!r}, got {got!r:.80}.", case)
    return report(name, None, cases)


# ---- no answer: the null span against the best span ----------------------------------------------


def _answer_or_null(
    context: str, windows: Sequence[dict], longest: int, margin: float, *, null_of: str = "min"
) -> str:
    """The reference (and, with null_of "max" or "first", a mistake): "" when the null score
    (start + end logit at [CLS], position 0; the least over the windows) exceeds the best span's
    score by more than margin, else the best span's text (``_answer``)."""
    nulls = [w["start_logits"][0] + w["end_logits"][0] for w in windows]
    null = {"min": min(nulls), "max": max(nulls), "first": nulls[0]}[null_of]
    best, found = NEG_INF, ""
    for w in windows:
        inside = [i for i, o in enumerate(w["offsets"]) if o is not None]
        for s in inside:
            for e in (e for e in inside if s <= e < s + longest):
                if w["start_logits"][s] + w["end_logits"][e] > best:
                    best = w["start_logits"][s] + w["end_logits"][e]
                    found = context[w["offsets"][s][0] : w["offsets"][e][1]]
    return "" if null - best > margin else found


def _null_cases(g: random.Random, cases: int) -> list[tuple[str, list[dict], int, float, str]]:
    """(context, windows, max_answer_tokens, margin, what the case is about): planted, then random."""
    made = []
    for n, (context, windows, longest, _) in enumerate(_windows_cases(g, cases)):
        about = ("all null", "one window answers", "margin", "random")[min(n, 3)]
        margin = (0.0, 0.0, 3.0, g.choice((0.0, 1.0, -1.0, 2.5)))[min(n, 3)]
        if about in ("all null", "margin"):  # [CLS] scores high in every window
            for w in windows:
                w["start_logits"][0] = w["end_logits"][0] = 7.0
        if about == "margin":  # the null wins by less than the margin: the span is answered
            for w in windows:
                w["start_logits"][0] = w["end_logits"][0] = 0.0
            top = max(  # the best span's score, then the null set 1 above it
                w["start_logits"][s] + w["end_logits"][e]
                for w in windows
                for s, o in enumerate(w["offsets"])
                for e, p in enumerate(w["offsets"])
                if o is not None and p is not None and s <= e < s + longest
            )
            for w in windows:
                w["start_logits"][0] = w["end_logits"][0] = (top + 1.0) / 2
        if about == "random":  # [CLS] near the best spans' scores: some answer, some do not
            for w in windows:
                w["start_logits"][0] = w["end_logits"][0] = round(g.gauss(4.0, 1.5), 3)
        if about == "one window answers":  # the first window says "no answer", the last does not
            windows[0]["start_logits"][0] = windows[0]["end_logits"][0] = 9.0
            windows[-1]["start_logits"][0] = windows[-1]["end_logits"][0] = -9.0
        made.append((context, windows, longest, margin, about))
    return made


def check_answer_or_null(fn: Callable[..., Any], cases: int = 30) -> Result:
    """Check ``fn(context, windows, max_answer_tokens, null_margin) -> str``: the answer's text, or
    "" for no answer (SQuAD 2.0).

    The windows are ``check_answer_over_windows``'s, with [CLS] at position 0. The null score of a
    window is ``start_logits[0] + end_logits[0]``; the question's null score is the least over its
    windows (one window that sees the answer is enough); the best span is found as in
    ``check_answer_over_windows``. Return "" when null score - best span's score > null_margin.
    """
    name = "answer or no answer"
    g = random.Random(13)
    for case, (context, windows, longest, margin, about) in enumerate(_null_cases(g, cases)):
        want = _answer_or_null(context, windows, longest, margin)
        got, hint = call_safely(fn, context, [dict(w) for w in windows], longest, margin)
        if hint is not None:
            return report(name, hint, case)
        if got is None:
            return report(name, 'return "" for no answer, not None.', case)
        if not isinstance(got, str):
            return report(name, f"return a str, got {type(got).__name__}.", case)
        if got == want:
            continue
        if got in (
            _answer_or_null(context, windows, longest, margin, null_of="max"),
            _answer_or_null(context, windows, longest, margin, null_of="first"),
        ):
            hint = (
                "take the least null score over every window (not the largest, not the first "
                "window's): one window that holds the answer is enough to answer."
            )
        elif about == "margin" and got == "":
            hint = (
                f"no answer only when the null score beats the best span by more than "
                f"null_margin = {margin:g}."
            )
        elif about == "all null" and got:
            hint = "compare the null score, start_logits[0] + end_logits[0], with the best span's."
        return report(name, hint or f"expected {want!r}, got {got!r:.80}.", case)
    return report(name, None, cases)


# ---- SQuAD's F1 ----------------------------------------------------------------------------------


def _f1_variant(
    prediction: str, truth: str, *, lower=True, punctuation=True, articles=True, counts=True
) -> float:
    """SQuAD v1.1's token F1 of one answer (the reference), or it with one step left out."""
    import re
    import string
    from collections import Counter

    def normal(text: str) -> list[str]:
        text = text.lower() if lower else text
        text = text.translate(str.maketrans("", "", string.punctuation)) if punctuation else text
        text = re.sub(r"\b(a|an|the)\b", " ", text) if articles else text
        return text.split()

    p, t = normal(prediction), normal(truth)
    shared = sum((Counter(p) & Counter(t)).values()) if counts else len(set(p) & set(t))
    if shared == 0:
        return 0.0
    precision, recall = shared / len(p), shared / len(t)
    return 2 * precision * recall / (precision + recall)


def _f1_cases(g: random.Random, cases: int) -> list[tuple[str, str]]:
    """(prediction, truth) pairs: each step of the normalisation tested alone first, then random."""
    fixed = [
        ("The Denver Broncos", "denver broncos"),  # case and an article
        ("broncos!", "the broncos."),  # punctuation
        ("an oracle at Argos", "oracle"),  # an article inside
        ("fifty fifty ships", "fifty fifty"),  # a repeated word counts as often as it matches
        ("the", "a"),  # both normalise to nothing: F1 0 (SQuAD v1.1)
        ("Troy", "Argos"),  # nothing shared
        ("theatre and anchor", "the atre"),  # articles only as whole words
    ]
    words = ["the", "a", "ship", "Ship", "ships,", "king", "Troy.", "of", "an", "fifty"]
    made = [
        (
            " ".join(g.choices(words, k=g.randint(1, 6))),
            " ".join(g.choices(words, k=g.randint(1, 6))),
        )
        for _ in range(cases - len(fixed))
    ]
    return fixed + made


def check_squad_f1(fn: Callable[..., Any], cases: int = 40) -> Result:
    """Check ``fn(prediction, truth) -> float``: SQuAD v1.1's token F1 of one answer, in [0, 1].

    Both texts are normalised (lower case, ASCII punctuation deleted, the articles a/an/the deleted
    as words, whitespace squeezed), split on whitespace, and compared as multisets of tokens;
    F1 is 0 when they share no token (also when one normalises to nothing).
    """
    name = "SQuAD F1"
    g = random.Random(5)
    for case, (prediction, truth) in enumerate(_f1_cases(g, cases)):
        want = _f1_variant(prediction, truth)
        got, hint = call_safely(fn, prediction, truth)
        if hint is not None:
            return report(name, hint, case)
        try:
            got = float(got)
        except (TypeError, ValueError):
            return report(name, f"return a float, got {type(got).__name__}.", case)
        if abs(got - want) <= 1e-6:
            continue
        steps = {
            "lower-case both texts first": dict(lower=False),
            "delete punctuation (string.punctuation) before splitting": dict(punctuation=False),
            'delete the articles "a", "an" and "the" as whole words (re.sub(r"\\b(a|an|the)\\b", '
            '" ", text))': dict(articles=False),
            "count shared tokens as a multiset (collections.Counter's &), not a set: a word "
            "repeated in both counts as often as in the rarer": dict(counts=False),
        }
        hint = next(
            (
                h
                for h, flags in steps.items()
                if abs(got - _f1_variant(prediction, truth, **flags)) <= 1e-6
            ),
            None,
        )
        if hint is None and not _f1_variant(prediction, truth) and abs(got - 1.0) <= 1e-6:
            hint = "when the texts share no token (or normalise to nothing), F1 is 0."
        if hint is None and abs(got - 100 * want) <= 1e-4:
            hint = "return F1 in [0, 1], not in percent."
        return report(
            name,
            hint or f"for {prediction!r} against {truth!r}: expected {want:.4f}, got {got:.4f}.",
            case,
        )
    return report(name, None, cases)
