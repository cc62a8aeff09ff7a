"""minibert.teaching.exercises.spans_and_tags, lesson 7: span decoding and BIO repair.

Each checker passes a right answer and catches the typical mistakes, naming them in its hint; each
reference agrees with what minibert's decoding and seqeval compute.
"""

from __future__ import annotations

import random

import pytest
import torch

from minibert import inference
from minibert.teaching import exercises
from minibert.teaching.exercises import spans_and_tags


def best_span_with(
    pairs=True, ordered=True, limit=0, inclusive=True, ties="first", last=True, mask=float("-inf")
):
    """A span decoder with one deliberate change (or none): the pairs (start, end) as a matrix of
    start + end scores, invalid pairs masked, the first maximum taken."""

    def fn(start, end, max_answer_tokens):
        n = len(start) - (0 if last else 1)
        start, end = start[:n], end[:n]
        if not pairs:  # each argmax on its own
            return int(start.argmax()), int(end.argmax()) + (0 if inclusive else 1)
        scores = start[:, None] + end[None, :]  # (n, n): start s, end e
        offset = torch.arange(n)[None, :] - torch.arange(n)[:, None]  # e - s
        allowed = offset < max_answer_tokens + limit
        if ordered:
            allowed &= offset >= 0
        if mask == 0:  # zeroing the invalid pairs, as torch.triu does
            scores = torch.where(allowed, scores, torch.zeros(()))
        else:
            scores = scores.masked_fill(~allowed, mask)
        flat = scores.flatten()
        # ties "last": the last of the best, as `>=` while scanning keeps
        best = len(flat) - 1 - int(flat.flip(0).argmax()) if ties == "last" else int(flat.argmax())
        s, e = divmod(best, n)
        return s, e + (0 if inclusive else 1)

    return fn


def not_implemented(*args):
    raise NotImplementedError


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (best_span_with(), True, "PASS"),
        (spans_and_tags._best_span, True, "PASS"),  # lists or tensors alike
        (best_span_with(pairs=False), False, "best start and the best end separately"),
        (best_span_with(ordered=False), False, "comes before the start"),
        (best_span_with(limit=1), False, "at most max_answer_tokens"),
        (best_span_with(limit=-1), False, "exactly max_answer_tokens"),
        (best_span_with(inclusive=False), False, "inclusive"),
        (best_span_with(ties="last"), False, "earliest start"),
        (best_span_with(last=False), False, "last piece"),
        (best_span_with(mask=0), False, "mask with -inf, not 0"),
        (lambda s, e, m: 3, False, "pair of ints"),
        (lambda s, e, m: (0, 0, 0), False, "pair (start, end)"),
        (not_implemented, False, "NotImplementedError"),
    ],
)
def test_check_best_span(fn, passes, hint, capsys):
    assert exercises.check_best_span(fn).passed is passes
    assert hint in capsys.readouterr().out


def test_the_span_reference_is_minibert_s_decoding():
    """On random logits without ties, the reference picks the pair inference.best_span picks over
    the context (the positions that are not -inf)."""
    g = random.Random(0)
    for _ in range(200):
        n = g.randint(2, 40)
        start, end = [g.gauss(0, 2) for _ in range(n)], [g.gauss(0, 2) for _ in range(n)]
        question = g.randint(0, n // 2)
        start[:question] = end[:question] = [float("-inf")] * question
        longest = g.randint(1, 8)
        found = inference.best_span(start, end, range(question, n), longest, n_best=n)
        if found is None:  # no context: nothing to compare
            continue
        assert spans_and_tags._best_span(start, end, longest) == found[1:]


def repair_with(at_start=True, on_type=True, drop=False, every_i=False, keep_type=True):
    """A BIO repair with one deliberate change (or none)."""

    def fn(tags):
        out, previous = [], None
        for tag in tags:
            starts = previous == "O" or (previous is None and at_start)
            starts |= on_type and previous not in (None, "O") and previous[2:] != tag[2:]
            if tag.startswith("I-") and (starts or every_i):
                tag = "O" if drop else "B-" + (tag[2:] if keep_type else tag)
            out.append(tag)
            previous = tag
        return out

    return fn


def repair_and_join(tags):
    """Right, then a B- right after a span of its type made I- (two spans merged)."""
    out = spans_and_tags._repair_bio(tags)
    for i in range(1, len(out)):
        if out[i].startswith("B-") and out[i - 1] != "O" and out[i - 1][2:] == out[i][2:]:
            out[i] = "I-" + out[i][2:]
    return out


def repair_in_place(tags):
    for i, tag in enumerate(tags):
        if tag.startswith("I-") and (i == 0 or tags[i - 1] == "O" or tags[i - 1][2:] != tag[2:]):
            tags[i] = "B-" + tag[2:]
    return tags


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (repair_with(), True, "PASS"),
        (spans_and_tags._repair_bio, True, "PASS"),
        (repair_with(drop=True), False, "do not turn it into O"),
        (repair_with(on_type=False), False, "another type starts a new span"),
        (repair_with(at_start=False), False, "first tag of the sentence"),
        (repair_with(every_i=True), False, "continues a span of its own type stays I-"),
        (repair_with(keep_type=False), False, "keep the type"),
        (repair_and_join, False, "only I- tags change"),
        (repair_in_place, False, "leave the tags you were given"),
        (lambda tags: " ".join(tags), False, "one tag per input tag"),
        (not_implemented, False, "NotImplementedError"),
    ],
)
def test_check_repair_bio(fn, passes, hint, capsys):
    assert exercises.check_repair_bio(fn).passed is passes
    assert hint in capsys.readouterr().out


def test_the_repaired_tags_are_valid_and_read_as_seqeval_reads_the_original():
    from seqeval.metrics.sequence_labeling import get_entities  # a dev dependency: CI has it

    g = random.Random(1)
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    for _ in range(500):
        original = [g.choice(tags) for _ in range(g.randint(0, 15))]
        repaired = spans_and_tags._repair_bio(original)
        assert get_entities(repaired) == get_entities(original)
        for before, tag in zip(["O", *repaired], repaired):  # valid: an I- continues its type
            assert not tag.startswith("I-") or before[2:] == tag[2:]
        assert spans_and_tags._repair_bio(repaired) == repaired  # valid tags stay as they are


# ---- the answer over windows, SQuAD's F1 (the spans assignment) ---------------------------------


def answer_with(first_only=False, exclusive=False, every_piece=False, limit=True):
    """A learner's answer_text: right by default, or with one typical mistake."""

    def answer(context, windows, longest):
        best, text = float("-inf"), ""
        for w in windows[:1] if first_only else windows:
            offsets = w["offsets"]
            pieces = range(len(offsets)) if every_piece else [i for i, o in enumerate(offsets) if o]
            for s in pieces:
                for e in pieces:
                    if s <= e and (e < s + longest or not limit):
                        score = w["start_logits"][s] + w["end_logits"][e]
                        if score > best:
                            a, b = offsets[s] or (0, 0), offsets[e] or (0, 0)
                            best, text = score, context[a[0] : b[0] if exclusive else b[1]]
        return text

    return answer


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (answer_with(), True, "PASS"),
        (answer_with(exclusive=True), False, "offsets[end][1], not offsets[end][0]"),
        (answer_with(first_only=True), False, "search every window"),
        (answer_with(limit=False), False, "at most max_answer_tokens"),
        (answer_with(every_piece=True), False, "the question and [SEP] (offsets None)"),
        (lambda context, windows, longest: None, False, "return the answer's text"),
        (not_implemented, False, "NotImplementedError"),
    ],
)
def test_check_answer_over_windows(fn, passes, hint, capsys):
    assert exercises.check_answer_over_windows(fn).passed is passes
    assert hint in capsys.readouterr().out


def answer_or_null_with(null_of=min, margin=True, none=False):
    """A learner's answer_or_null: right by default, or with one typical mistake."""

    def answer(context, windows, longest, null_margin):
        text = answer_with()(context, windows, longest)
        best = max(
            w["start_logits"][s] + w["end_logits"][e]
            for w in windows
            for s, a in enumerate(w["offsets"])
            for e, b in enumerate(w["offsets"])
            if a and b and s <= e < s + longest
        )
        nulls = [w["start_logits"][0] + w["end_logits"][0] for w in windows]
        null = nulls[0] if null_of == "first" else null_of(nulls)
        if null - best > (null_margin if margin else 0.0):
            return None if none else ""
        return text

    return answer


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (answer_or_null_with(), True, "PASS"),
        (answer_or_null_with(null_of=max), False, "the least null score over every"),
        (answer_or_null_with(null_of="first"), False, "the least null score over every"),
        (answer_or_null_with(margin=False), False, "by more than null_margin"),
        (answer_or_null_with(none=True), False, "not None"),
        (lambda c, w, n, m: answer_with()(c, w, n), False, "compare the null score"),
        (not_implemented, False, "NotImplementedError"),
    ],
)
def test_check_answer_or_null(fn, passes, hint, capsys):
    assert exercises.check_answer_or_null(fn).passed is passes
    assert hint in capsys.readouterr().out


def test_the_null_cases_hold_both_answers_and_no_answers():
    """The checker's cases are not all one kind: some answer, some do not, at each margin."""
    said = [
        spans_and_tags._answer_or_null(c, w, n, m)
        for c, w, n, m, _ in spans_and_tags._null_cases(random.Random(13), 30)
    ]
    assert 3 <= sum(a == "" for a in said) <= 27


def test_the_windows_reference_is_minibert_decoding_window_by_window():
    for context, windows, longest, _ in spans_and_tags._windows_cases(random.Random(11), 30):
        best, text = None, ""
        for w in windows:
            inside = [i for i, o in enumerate(w["offsets"]) if o is not None]
            found = inference.best_span(w["start_logits"], w["end_logits"], inside, longest)
            if found is not None and (best is None or found[0] > best):
                best = found[0]
                text = context[w["offsets"][found[1]][0] : w["offsets"][found[2]][1]]
        assert spans_and_tags._answer(context, windows, longest) == text


def test_the_f1_reference_is_minibert_squad_and_each_mistake_is_named(capsys):
    from minibert import squad

    for prediction, truth in spans_and_tags._f1_cases(random.Random(5), 40):
        assert spans_and_tags._f1_variant(prediction, truth) == squad.f1(prediction, [truth])
    assert exercises.check_squad_f1(lambda p, t: squad.f1(p, [t])).passed
    for flags, hint in (
        (dict(lower=False), "lower-case"),
        (dict(punctuation=False), "delete punctuation"),
        (dict(articles=False), "articles"),
        (dict(counts=False), "multiset"),
    ):
        assert not exercises.check_squad_f1(
            lambda p, t, f=flags: spans_and_tags._f1_variant(p, t, **f)
        )
        assert hint in capsys.readouterr().out
    assert not exercises.check_squad_f1(lambda p, t: 100 * squad.f1(p, [t]))
    assert "not in percent" in capsys.readouterr().out
