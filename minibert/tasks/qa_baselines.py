"""Two baselines for extractive question answering: each answers with a span of the context.

    sliding_window("Who won Super Bowl 50?", context)    # a short span near the question's words
    best_sentence("Who won Super Bowl 50?", context)     # the sentence sharing most question words
    sliding_window_span(question, context)              # AnswerSpan(text, start): the offsets too

Both are deterministic, need no training and no model, and answer thousands of SQuAD questions
in seconds. Their answer is always ``context[start:start + len(text)]`` (the empty string at 0
when the context has nothing to offer). Score them with ``minibert.squad``.

**sliding_window** is the baseline of the SQuAD paper (Rajpurkar et al., 2016, section 5), which
borrows the sliding window and distance scores of MCTest (Richardson et al., 2013, algorithms 1
and 2). Exactly what runs here:

1. Words: the runs of letters, digits and underscores (regex ``\\w+``), lower-cased. Sentences:
   the context is cut after ``.``, ``!`` or ``?`` (and any closing quotes or brackets) where
   whitespace and then an upper-case letter or a digit follow, except for a full stop after a
   single letter or a title such as "Dr" ("J. Smith", "U.S. Army" stay whole).
2. Candidates: every run of 1 to ``max_answer_words`` words inside one sentence that starts and
   ends with a word that is not a stop word, holds no content word (non-stop word) of the
   question and crosses no bracket, double quote, colon or semicolon. The answer is the
   context's text from its first word to its last, punctuation between them included
   ("February 7, 2016"). The paper used the constituents of a constituency parse; without a
   parser, word n-grams stand in (more candidates, not all of them phrases).
3. Filter (the paper's): a candidate's overlap is the number of the question's unigrams
   (stop words left out) and bigrams (pairs of adjacent words, not both stop words) found in its
   sentence outside the candidate; only the candidates with the largest overlap stay. Because a
   candidate holds no question content word and starts and ends on a non-stop word, removing
   it never changes the count: the overlap is its sentence's.
4. Sliding window (MCTest algorithm 1, over the candidate's sentence as in the paper):
   S = the question's content words with the candidate's; a window as long as S slides over
   the sentence and scores the sum of IC(w) = log(1 + 1/C(w)) over its words that are in S, C(w)
   counting w in the whole context; the candidate's score is the best window's (a window need
   not hold the candidate: the sentence plays the part of MCTest's passage).
5. Distance (MCTest algorithm 2, ``distance=True``): d is the smallest abs(i - k) over the
   positions i of question content words and k of the candidate's content words in the
   sentence (wherever they occur in it), divided by the sentence's length in words minus one;
   d = 1 when the sentence holds no question content word. The score becomes window - d.
6. The answer: the largest overlap, then the largest score; ties go to the earliest start, then
   the shortest candidate.

How it differs from the paper's: n-grams instead of parse constituents; question words are
excluded from candidates outright (the paper penalised them through the overlap of step 3, and
MCTest removes them from the answer's words in step 5); stop words (``STOP_WORDS``, this
module's own short list) never score in steps 3 to 5 (MCTest's window counts them, with small
weights); a regular expression in place of CoreNLP's tokenizer and sentence splitter; no
lemmas. The paper reports about 20% F1 for its version on SQuAD's dev set.

**best_sentence** returns the whole sentence sharing the most distinct question content words
(ties: the first; no sentence shares any: the first sentence). Its SQuAD F1 shows how far
pointing at the right sentence goes, and its gap to a span model shows what the span is worth.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "STOP_WORDS",
    "AnswerSpan",
    "best_sentence",
    "best_sentence_span",
    "sentence_spans",
    "sliding_window",
    "sliding_window_span",
]

STOP_WORDS = frozenset(
    """
    a an the this that these those some any each every no all both either neither another other
    such i me my mine myself we us our ours ourselves you your yours yourself yourselves he him
    his himself she her hers herself it its itself they them their theirs themselves
    what which who whom whose when where why how whether
    am is are was were be been being have has had having do does did doing done
    will would shall should can could may might must
    of in on at by for with about against between into through during before after above below
    to from up down out off over under again further then once upon within without along across
    among around behind beyond near since toward towards than via per
    and but or nor so yet if because as until while although though
    not only own same too very just also there here many much more most s t d ll re ve m
    """.split()
)

_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*\s+")
_OPENERS = "\"'\u201c\u2018(["
_SEPARATORS = frozenset('()[]{}"\u201c\u201d;:')  # no candidate crosses one
_LAST_WORD = re.compile(r"\w+(?=\W*\Z)")
_TITLES = frozenset("mr mrs ms dr st jr sr prof gen col lt sgt mt ft vs".split())


@dataclass(frozen=True)
class AnswerSpan:
    """An answer and where it starts in the context: context[start:end] == text."""

    text: str
    start: int  # character offset into the context

    @property
    def end(self) -> int:
        """The offset just past the answer's last character."""
        return self.start + len(self.text)


class _Word(NamedTuple):
    """A word of the context: its lower-cased form and its character offsets."""

    form: str
    start: int
    end: int


def _check(question: str, context: str) -> None:
    """Raise TypeError unless both are str."""
    for name, value in (("question", question), ("context", context)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")


def _words(text: str) -> list[_Word]:
    """The \\w+ runs of text, lower-cased, with their offsets."""
    return [_Word(m.group().lower(), m.start(), m.end()) for m in _WORD.finditer(text)]


def _ends_sentence(context: str, mark: int, after: int) -> bool:
    """Whether the punctuation at context[mark] ends a sentence (the next text starts at after)."""
    rest = context[after:].lstrip(_OPENERS)
    if not rest or not (rest[0].isupper() or rest[0].isdigit()):
        return False
    last = _LAST_WORD.search(context, max(0, mark - 40), mark)
    if last is None or context[mark] != ".":
        return True
    word = last.group().lower()
    return not (len(word) == 1 and word.isalpha() or word in _TITLES)  # "J. Smith", "Dr. No"


def sentence_spans(context: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of the context's sentences, surrounding whitespace trimmed."""
    if not isinstance(context, str):
        raise TypeError(f"context must be a str, got {type(context).__name__}")
    cuts = [0]
    for match in _SENTENCE_END.finditer(context):
        if _ends_sentence(context, match.start(), match.end()):
            cuts.append(match.end())
    cuts.append(len(context))
    spans = []
    for a, b in zip(cuts, cuts[1:]):
        text = context[a:b]
        if text.strip():
            spans.append((a + len(text) - len(text.lstrip()), a + len(text.rstrip())))
    return spans


def _content(words: list[str]) -> set[str]:
    """The words that are not stop words."""
    return {w for w in words if w not in STOP_WORDS}


def _bigrams(words: list[str]) -> set[tuple[str, str]]:
    """Adjacent pairs of words, leaving out pairs of two stop words."""
    return {(a, b) for a, b in zip(words, words[1:]) if not (a in STOP_WORDS and b in STOP_WORDS)}


def _overlap(question: list[str], sentence: list[str]) -> int:
    """Question unigrams (no stop words) and bigrams found in the sentence (the paper's filter)."""
    shared = _content(question) & _content(sentence)
    return len(shared) + len(_bigrams(question) & _bigrams(sentence))


def _candidates(
    sentence: list[str], apart: list[bool], asked: set[str], longest: int
) -> list[tuple[int, int]]:
    """(first, last) word indices of the n-grams that may answer: see the module docstring, 2.

    apart[i] is True where a bracket, quote, colon or semicolon lies between words i and i + 1.
    """
    found = []
    for first, word in enumerate(sentence):
        if word in STOP_WORDS or word in asked:
            continue
        for last in range(first, min(len(sentence), first + longest)):
            if sentence[last] in asked:
                break  # every longer candidate holds it too
            if sentence[last] not in STOP_WORDS:
                found.append((first, last))
            if apart[last]:
                break
    return found


def _apart(context: str, words: list[_Word]) -> list[bool]:
    """For each word, whether a bracket, quote, colon or semicolon separates it from the next."""
    gaps = [context[a.end : b.start] for a, b in zip(words, words[1:])]
    return [any(c in _SEPARATORS for c in gap) for gap in gaps] + [True]


def _window_score(values: list[float], size: int) -> float:
    """MCTest's sliding window: the largest sum of `size` consecutive values (all, if fewer)."""
    size = min(size, len(values))
    total = best = sum(values[:size])
    for j in range(size, len(values)):  # the window values[j - size + 1 : j + 1]
        total += values[j] - values[j - size]
        if total > best:
            best = total
    return best


def _distance(q_at: list[int], a_at: list[int], length: int) -> float:
    """MCTest's distance: the fewest positions from a question word to an answer word / (len - 1)."""
    if not q_at or not a_at:
        return 1.0
    return min(abs(i - k) for i in q_at for k in a_at) / (length - 1)


class _Paragraph(NamedTuple):
    """A context read once: its sentences' words and MCTest's inverse counts of its words."""

    spans: list[tuple[int, int]]  # sentence_spans(context)
    sentences: list[list[_Word]]  # the words of each sentence
    apart: list[list[bool]]  # per sentence: _apart
    ic: dict[str, float]  # IC(w) = log(1 + 1/C(w)), C counting w in the whole context


@functools.lru_cache(maxsize=64)  # SQuAD asks about five questions per paragraph
def _read(context: str) -> _Paragraph:
    """The context's words grouped by sentence (offsets into the context), and their weights."""
    words, spans, sentences, i = _words(context), sentence_spans(context), [], 0
    for start, end in spans:
        while i < len(words) and words[i].start < start:
            i += 1  # (never: the gaps between sentences are whitespace)
        group = []
        while i < len(words) and words[i].end <= end:
            group.append(words[i])
            i += 1
        sentences.append(group)
    counts = Counter(w.form for w in words)
    ic = {form: math.log(1 + 1 / c) for form, c in counts.items()}
    return _Paragraph(spans, sentences, [_apart(context, group) for group in sentences], ic)


def _best_in_sentence(
    words: list[_Word], found: list[tuple[int, int]], asked: set[str], ic: dict, distance: bool
) -> tuple[float, int, int]:
    """(score, start, end) of the sentence's best candidate (steps 4 to 6 of the module docs)."""
    forms = [w.form for w in words]
    at: dict[str, list[int]] = {}
    for i, form in enumerate(forms):
        at.setdefault(form, []).append(i)
    asked_values = [ic[f] if f in asked else 0.0 for f in forms]
    q_at = [i for i, f in enumerate(forms) if f in asked]
    best = None
    for first, last in found:
        answer = _content(forms[first : last + 1])
        a_at = [k for form in answer for k in at[form]]  # wherever the sentence holds them
        values = asked_values.copy()
        for k in a_at:
            values[k] = ic[forms[k]]
        score = _window_score(values, len(asked | answer))
        if distance:
            score -= _distance(q_at, a_at, len(forms))
        key = (-score, words[first].start, words[last].end)
        best = key if best is None or key < best else best
    return -best[0], best[1], best[2]


def sliding_window_span(
    question: str, context: str, *, max_answer_words: int = 4, distance: bool = True
) -> AnswerSpan:
    """The SQuAD paper's sliding-window baseline: the best n-gram of the context (module docs)."""
    _check(question, context)
    if isinstance(max_answer_words, bool) or not isinstance(max_answer_words, int):
        raise TypeError(f"max_answer_words must be an int, got {max_answer_words!r}")
    if max_answer_words < 1:
        raise ValueError(f"max_answer_words must be at least 1, got {max_answer_words}")
    q_forms = [w.form for w in _words(question)]
    asked = _content(q_forms)
    paragraph = _read(context)
    kept = []  # (overlap, words, candidates) of the sentences that have candidates
    for words, apart in zip(paragraph.sentences, paragraph.apart):
        forms = [w.form for w in words]
        found = _candidates(forms, apart, asked, max_answer_words)
        if found:
            kept.append((_overlap(q_forms, forms), words, found))
    if not kept:
        return AnswerSpan("", 0)
    top = max(overlap for overlap, _, _ in kept)
    scored = [
        _best_in_sentence(words, found, asked, paragraph.ic, distance)
        for overlap, words, found in kept
        if overlap == top
    ]
    score, start, end = max(scored, key=lambda s: (s[0], -s[1], -s[2]))
    return AnswerSpan(context[start:end], start)


def sliding_window(
    question: str, context: str, *, max_answer_words: int = 4, distance: bool = True
) -> str:
    """The sliding-window baseline's answer: a span of the context (see sliding_window_span)."""
    return sliding_window_span(
        question, context, max_answer_words=max_answer_words, distance=distance
    ).text


def best_sentence_span(question: str, context: str) -> AnswerSpan:
    """The sentence sharing the most distinct question content words (ties: the first), whole."""
    _check(question, context)
    asked = _content([w.form for w in _words(question)])
    paragraph = _read(context)
    best, best_shared = AnswerSpan("", 0), -1
    for (start, end), words in zip(paragraph.spans, paragraph.sentences):
        shared = len(asked & {w.form for w in words})
        if shared > best_shared:
            best, best_shared = AnswerSpan(context[start:end], start), shared
    return best


def best_sentence(question: str, context: str) -> str:
    """The best-sentence baseline's answer: a whole sentence of the context."""
    return best_sentence_span(question, context).text
