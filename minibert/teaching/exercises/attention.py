"""Lesson 2, attention math: scaled dot-product attention, the padding mask, splitting and
merging heads, and the weights of equal keys worked out by hand."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from minibert.attention import merge_heads, padding_mask, scaled_dot_product_attention, split_heads
from minibert.teaching.exercises.common import Result, attention_problem, call_safely, report


def _attention_mistake(weights: Any, q: Any, k: Any, mask: Any) -> str:
    """A hint naming the classic mistake that gives these weights (batch, heads, q_len, k_len)."""
    scores = q @ k.transpose(-2, -1)  # (batch, heads, q_len, k_len), unscaled
    keep = torch.ones_like(scores, dtype=torch.bool) if mask is None else mask.expand_as(scores)
    low = torch.finfo(scores.dtype).min

    def masked(s: Any) -> Any:
        return s.masked_fill(~keep, low)

    d_k = q.shape[-1]
    candidates = {
        "the scores were not divided by sqrt(d_k): divide q @ k^T by sqrt(d_k) before the "
        "softmax": masked(scores).softmax(-1),
        "the scores were divided by d_k, not sqrt(d_k)": masked(scores / d_k).softmax(-1),
        "the softmax ran over the queries (dim=-2); each query's row of weights must sum to 1: "
        "softmax over the keys, the last dim": masked(scores / math.sqrt(d_k)).softmax(-2),
        "the mask was applied after the softmax: masked keys got weight 0 but the row no longer "
        "sums to 1; fill masked scores with a very negative number before the softmax": (
            (scores / math.sqrt(d_k)).softmax(-1) * keep
        ),
        "the mask was ignored: keys where the mask is False should get weight 0 (fill their "
        "scores with a very negative number before the softmax)": (
            (scores / math.sqrt(d_k)).softmax(-1)
        ),
    }
    finite = torch.nan_to_num(weights, nan=-1.0)
    for what, candidate in candidates.items():
        if torch.allclose(finite, candidate, atol=1e-5):
            return f" It looks like {what}."
    if torch.isnan(weights).any():
        return (
            " A row whose keys are all masked must not give NaN: fill masked scores with "
            "torch.finfo(scores.dtype).min, not -inf."
        )
    if not torch.allclose(weights.sum(-1), torch.ones(()), atol=1e-4):
        return " Each row (one query) should sum to 1: softmax over the last dim."
    return ""


def check_attention(fn: Callable[..., Any], cases: int = 20) -> Result:
    """Check ``fn(q, k, v, mask=None) -> (output, weights)`` against scaled dot-product attention.

    ``mask`` is boolean, True where a key may be attended; it broadcasts to (..., q_len, k_len).
    """
    name = "scaled dot-product attention"
    g = torch.Generator().manual_seed(0)
    for case in range(cases):
        batch, heads = (int(n) for n in torch.randint(1, 4, (2,), generator=g))
        q_len, k_len, d_k, d_v = (int(n) for n in torch.randint(1, 9, (4,), generator=g))
        q = torch.randn(batch, heads, q_len, d_k, generator=g)
        k = torch.randn(batch, heads, k_len, d_k, generator=g)
        v = torch.randn(batch, heads, k_len, d_v, generator=g)
        mask = None
        if case >= cases // 2:  # the second half masks keys
            mask = torch.rand(batch, 1, 1, k_len, generator=g) > 0.3
            mask[..., 0] = True  # at least one key to attend to ...
            if case == cases - 1:
                mask[0] = False  # ... except in the last case: all of example 0 is padding
        result, hint = (
            call_safely(fn, q, k, v, mask) if mask is not None else call_safely(fn, q, k, v)
        )
        if hint is not None:
            return report(name, hint, case)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            return report(name, "return a pair (output, weights).", case)
        output, weights = result
        expected_out, expected_w = scaled_dot_product_attention(q, k, v, mask)
        problem = attention_problem(weights, expected_w, "weights")
        if problem is not None:
            if isinstance(weights, torch.Tensor) and weights.shape == expected_w.shape:
                problem += _attention_mistake(weights, q, k, mask)
            return report(
                name, f"{problem} (case {case}: q {tuple(q.shape)}, k {tuple(k.shape)})", case
            )
        problem = attention_problem(output, expected_out, "output")
        if problem is not None:
            return report(name, f"{problem} The output is weights @ v.", case)
    return report(name, None, cases)


def check_padding_mask(fn: Callable[..., Any], cases: int = 20) -> Result:
    """Check ``fn(attention_mask) -> additive mask``: (batch, seq) 1/0 -> (batch, 1, 1, seq) float32.

    The additive mask holds 0.0 for real tokens and torch.finfo(torch.float32).min for padding.
    """
    name = "padding mask"
    g = torch.Generator().manual_seed(1)
    for case in range(cases):
        batch = int(torch.randint(1, 5, (1,), generator=g))
        seq = int(torch.randint(1, 10, (1,), generator=g))
        lengths = torch.randint(0, seq + 1, (batch,), generator=g)
        attention_mask = (torch.arange(seq)[None, :] < lengths[:, None]).long()  # (batch, seq)
        got, hint = call_safely(fn, attention_mask.clone())
        if hint is not None:
            return report(name, hint, case)
        expected = padding_mask(attention_mask, dtype=torch.float32)
        if isinstance(got, torch.Tensor) and got.dtype != torch.float32:
            return report(name, f"the mask should be float32 (additive), got {got.dtype}.", case)
        if isinstance(got, torch.Tensor) and torch.isinf(got).any():
            return report(
                name,
                "use torch.finfo(torch.float32).min, not -inf: with -inf a sequence that is all "
                "padding would give NaN after the softmax.",
                case,
            )
        problem = attention_problem(got, expected, "the mask", atol=0.0)
        if problem is not None:
            reversed_mask = padding_mask(1 - attention_mask, dtype=torch.float32)
            if isinstance(got, torch.Tensor) and torch.equal(got, reversed_mask):
                problem += (
                    " The mask is reversed: real tokens (1) get the most negative float and "
                    "padding (0) gets 0.0; it must be the other way round."
                )
            elif isinstance(got, torch.Tensor) and got.numel() == expected.numel():
                problem += (
                    " Real tokens (1) get 0.0 and padding (0) gets the most negative float; the "
                    "shape (batch, 1, 1, seq) broadcasts over heads and queries."
                )
            return report(
                name, f"{problem} (case {case}: attention_mask {attention_mask.tolist()})", case
            )
    return report(name, None, cases)


def check_split_heads(fn: Callable[..., Any], cases: int = 10) -> Result:
    """Check ``fn(x, num_heads)``: (batch, seq, hidden) -> (batch, heads, seq, head_dim)."""
    name = "split heads"
    g = torch.Generator().manual_seed(2)
    for case in range(cases):
        batch, seq, heads, head_dim = (int(n) for n in torch.randint(1, 6, (4,), generator=g))
        heads += 1  # at least two heads, so a wrong reshape shows
        x = torch.randn(batch, seq, heads * head_dim, generator=g)
        got, hint = call_safely(fn, x, heads)
        if hint is not None:
            return report(name, hint, case)
        expected = split_heads(x, heads)
        problem = attention_problem(got, expected, "the result", atol=0.0)
        if problem is not None:
            if isinstance(got, torch.Tensor) and got.shape == expected.shape:
                problem += (
                    " Right shape, wrong order: view as (batch, seq, heads, head_dim) first, then "
                    "transpose(1, 2); a direct view to (batch, heads, seq, head_dim) mixes tokens."
                )
            return report(name, f"{problem} (case {case}: x {tuple(x.shape)}, {heads} heads)", case)
    return report(name, None, cases)


def check_merge_heads(fn: Callable[..., Any], cases: int = 10) -> Result:
    """Check ``fn(x)``: (batch, heads, seq, head_dim) -> (batch, seq, heads * head_dim)."""
    name = "merge heads"
    g = torch.Generator().manual_seed(3)
    for case in range(cases):
        batch, heads, seq, head_dim = (int(n) for n in torch.randint(2, 6, (4,), generator=g))
        x = torch.randn(batch, heads, seq, head_dim, generator=g)
        got, hint = call_safely(fn, x)
        if hint is not None:
            return report(name, hint, case)
        expected = merge_heads(x)
        problem = attention_problem(got, expected, "the result", atol=0.0)
        if problem is not None:
            if isinstance(got, torch.Tensor) and got.shape == expected.shape:
                problem += (
                    " Right shape, wrong order: transpose(1, 2) back to (batch, seq, heads, "
                    "head_dim) before reshaping to (batch, seq, hidden)."
                )
            return report(name, f"{problem} (case {case}: x {tuple(x.shape)})", case)
    return report(name, None, cases)


def check_equal_keys(weights: Any) -> Result:
    """Conceptual question: 3 queries, 4 keys that are all the same vector; what are the weights?

    ``weights`` is the (3, 4) matrix (tensor, array or nested list) you predict, without running
    attention; it is checked against attention run with random queries and one repeated key.
    """
    name = "equal keys"
    try:
        got = torch.as_tensor(weights, dtype=torch.float32)
    except (TypeError, ValueError, RuntimeError) as exc:
        return report(name, f"give the weights as a (3, 4) tensor or nested list ({exc}).", 0)
    g = torch.Generator().manual_seed(4)
    cases = 5
    for case in range(cases):
        q = torch.randn(3, 8, generator=g) * 5  # queries of every size and direction
        k = torch.randn(1, 8, generator=g).expand(4, 8)  # four copies of one key
        v = torch.randn(4, 2, generator=g)
        _, expected = scaled_dot_product_attention(q, k, v)
        problem = attention_problem(got, expected, "your weights", atol=1e-4)
        if problem is not None:
            if got.shape == expected.shape:
                problem += (
                    " Hint: when every key is the same, every score in a row is the same number, "
                    "whatever the query is. What does softmax make of equal numbers?"
                )
            return report(name, problem, case)
    return report(name, None, cases)
