"""Reference solution of the assignment: answering with a span (for the tests and the teacher).

Use Python and torch (not minibert). Grade it with: minibert assignment grade .
"""

import re
import string
from collections import Counter

import torch


def best_span(start_logits, end_logits, max_answer_tokens):
    """start_logits, end_logits (seq,) tensors -> (start, end): the best span of one window.

    The span maximises start_logits[start] + end_logits[end] with start <= end < start +
    max_answer_tokens (end is the span's last piece, inclusive). A position whose logits are -inf
    (outside the context) is never part of it. Ties go to the earliest start, then the earliest end.
    """
    best, found = float("-inf"), (0, 0)
    n = len(start_logits)
    for start in range(n):
        for end in range(start, min(start + max_answer_tokens, n)):
            score = float(start_logits[start] + end_logits[end])
            if score > best:
                best, found = score, (start, end)
    return found


def answer_text(context, windows, max_answer_tokens):
    """context (str), windows (list of dicts) -> the answer's text, a slice of context.

    Each window holds "start_logits" and "end_logits" (lists of floats, one per piece of
    [CLS] question [SEP] context part [SEP]) and "offsets": for each piece, the [first, end)
    characters of context it covers, or None for [CLS], the question's pieces and [SEP]. The
    answer is the best span (best_span's rule) over every window, both ends among the window's
    context pieces; ties go to the earliest window. Return context[offsets[start][0] :
    offsets[end][1]] of the winning window.
    """
    best, text = float("-inf"), ""
    for window in windows:
        offsets = window["offsets"]
        outside = torch.tensor([o is None for o in offsets])
        start = torch.tensor(window["start_logits"]).masked_fill(outside, float("-inf"))
        end = torch.tensor(window["end_logits"]).masked_fill(outside, float("-inf"))
        first, last = best_span(start, end, max_answer_tokens)
        score = float(start[first] + end[last])
        if score > best:
            best, text = score, context[offsets[first][0] : offsets[last][1]]
    return text


def squad_f1(prediction, truth):
    """SQuAD v1.1's token F1 of prediction against one accepted answer, a float in [0, 1].

    Normalise both texts (lower case; delete string.punctuation; delete the articles a, an, the
    as whole words; squeeze whitespace), split them into tokens and compare the two as multisets:
    precision = shared / predicted tokens, recall = shared / true tokens. F1 is 0 when they share
    no token (also when either normalises to nothing).
    """

    def tokens(text):
        text = text.lower().translate(str.maketrans("", "", string.punctuation))
        return re.sub(r"\b(a|an|the)\b", " ", text).split()

    predicted, true = tokens(prediction), tokens(truth)
    shared = sum((Counter(predicted) & Counter(true)).values())
    if shared == 0:
        return 0.0
    precision, recall = shared / len(predicted), shared / len(true)
    return 2 * precision * recall / (precision + recall)
