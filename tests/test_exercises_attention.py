"""minibert.teaching.exercises.attention, lesson 2: attention, the padding mask, heads, equal keys.

Each checker passes a right answer and catches the typical mistakes, naming them in its hint.
"""

from __future__ import annotations

import math

import pytest
import torch

from minibert.teaching import exercises


def attention_right(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, -1e9)  # d2l's large negative number is fine too
    weights = scores.softmax(-1)
    return weights @ v, weights


def attention_unscaled(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(-1)
    return weights @ v, weights


def attention_minus_inf(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(-1)
    return weights @ v, weights


def attention_ignores_mask(q, k, v, mask=None):
    return attention_right(q, k, v)


def attention_softmax_over_queries(q, k, v, mask=None):
    weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-2)
    return weights @ v, weights


def attention_mask_after_softmax(q, k, v, mask=None):
    weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


def attention_by_d_k(q, k, v, mask=None):
    weights = (q @ k.transpose(-2, -1) / q.shape[-1]).softmax(-1)
    return weights @ v, weights


def attention_weights_only(q, k, v, mask=None):
    return attention_right(q, k, v, mask)[1]


def attention_not_written(q, k, v, mask=None):
    raise NotImplementedError


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (attention_right, True, "PASS"),
        (attention_unscaled, False, "sqrt(d_k)"),
        (attention_minus_inf, False, "not -inf"),
        (attention_ignores_mask, False, "the mask was ignored"),
        (attention_softmax_over_queries, False, "over the queries (dim=-2)"),
        (attention_mask_after_softmax, False, "applied after the softmax"),
        (attention_by_d_k, False, "divided by d_k, not sqrt(d_k)"),
        (attention_weights_only, False, "pair (output, weights)"),
        (attention_not_written, False, "NotImplementedError"),
    ],
)
def test_check_attention(fn, passes, hint, capsys):
    assert exercises.check_attention(fn).passed is passes
    assert hint in capsys.readouterr().out


def padding_mask_right(attention_mask):
    additive = (1.0 - attention_mask.float()) * torch.finfo(torch.float32).min
    return additive[:, None, None, :]


def padding_mask_minus_inf(attention_mask):
    additive = torch.zeros(attention_mask.shape).masked_fill(attention_mask == 0, float("-inf"))
    return additive[:, None, None, :]


def padding_mask_reversed(attention_mask):
    return padding_mask_right(1 - attention_mask)


def padding_mask_2d(attention_mask):
    return padding_mask_right(attention_mask)[:, 0, 0, :]


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (padding_mask_right, True, "PASS"),
        (padding_mask_minus_inf, False, "not -inf"),
        (padding_mask_reversed, False, "The mask is reversed"),
        (padding_mask_2d, False, "expected shape (2, 1, 1,"),
        (lambda m: padding_mask_right(m).double(), False, "float32"),
    ],
)
def test_check_padding_mask(fn, passes, hint, capsys):
    assert exercises.check_padding_mask(fn).passed is passes
    assert hint in capsys.readouterr().out


def split_right(x, num_heads):
    batch, seq, hidden = x.shape
    return x.view(batch, seq, num_heads, hidden // num_heads).transpose(1, 2)


def split_direct_view(x, num_heads):
    batch, seq, hidden = x.shape
    return x.reshape(batch, num_heads, seq, hidden // num_heads)


def merge_right(x):
    batch, heads, seq, head_dim = x.shape
    return x.transpose(1, 2).reshape(batch, seq, heads * head_dim)


def merge_direct_reshape(x):
    batch, heads, seq, head_dim = x.shape
    return x.reshape(batch, seq, heads * head_dim)


def test_check_split_and_merge_heads(capsys):
    assert exercises.check_split_heads(split_right).passed is True
    assert exercises.check_merge_heads(merge_right).passed is True
    assert capsys.readouterr().out.count("PASS") == 2
    assert exercises.check_split_heads(split_direct_view).passed is False
    assert "transpose(1, 2)" in capsys.readouterr().out
    assert exercises.check_merge_heads(merge_direct_reshape).passed is False
    assert "transpose(1, 2) back" in capsys.readouterr().out
    assert exercises.check_merge_heads(lambda x: x.flatten(2)).passed is False
    assert "expected shape" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, passes, hint",
    [
        (torch.full((3, 4), 0.25), True, "PASS"),
        ([[0.25] * 4] * 3, True, "PASS"),
        (torch.full((3, 4), 1 / 3), False, "softmax make of equal numbers"),
        (torch.eye(3, 4), False, "whatever the query is"),
        (torch.full((4, 3), 0.25), False, "shape (3, 4)"),
        ("uniform", False, "nested list"),
    ],
)
def test_check_equal_keys(answer, passes, hint, capsys):
    assert exercises.check_equal_keys(answer).passed is passes
    assert hint in capsys.readouterr().out
