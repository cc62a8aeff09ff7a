"""Assignment: answering with a span. Fill in every function that raises NotImplementedError.

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
    raise NotImplementedError("your code here")


def answer_text(context, windows, max_answer_tokens):
    """context (str), windows (list of dicts) -> the answer's text, a slice of context.

    Each window holds "start_logits" and "end_logits" (lists of floats, one per piece of
    [CLS] question [SEP] context part [SEP]) and "offsets": for each piece, the [first, end)
    characters of context it covers, or None for [CLS], the question's pieces and [SEP]. The
    answer is the best span (best_span's rule) over every window, both ends among the window's
    context pieces; ties go to the earliest window. Return context[offsets[start][0] :
    offsets[end][1]] of the winning window.
    """
    raise NotImplementedError("your code here")


def squad_f1(prediction, truth):
    """SQuAD v1.1's token F1 of prediction against one accepted answer, a float in [0, 1].

    Normalise both texts (lower case; delete string.punctuation; delete the articles a, an, the
    as whole words; squeeze whitespace), split them into tokens and compare the two as multisets:
    precision = shared / predicted tokens, recall = shared / true tokens. F1 is 0 when they share
    no token (also when either normalises to nothing).
    """
    raise NotImplementedError("your code here")


# Silence "imported but unused" until you use them.
_ = re, string, Counter, torch
