"""Scaled dot-product attention, its masks, and BERT's multi-head self-attention.

Attention (Vaswani et al. 2017, section 3.2; BERT paper section 3) turns every token into a
weighted average of all tokens' values, weighted by how well its query matches their keys:

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k) + mask) V

Two implementations live here and agree to 1e-6 in float32: the explicit one written out step by
step (it also returns the weights, for plots), and PyTorch's fused
``torch.nn.functional.scaled_dot_product_attention`` (faster, no weights).

Masks follow Hugging Face: a token mask ``attention_mask`` is 1 for real tokens and 0 for
padding; it becomes an additive mask holding 0 where a key may be attended and the dtype's most
negative finite number (``torch.finfo(dtype).min``) where it may not. Never ``-inf``: a query
whose keys are all masked then still has a defined result, uniform weights over all its keys
(so its output is the mean of the values), exactly what Hugging Face's eager BertModel gives,
instead of NaN.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

# --- masks -------------------------------------------------------------------------------------


def padding_mask(attention_mask: Tensor, dtype: torch.dtype | None = None) -> Tensor:
    """Token mask (batch, seq) of 1 = real / 0 = padding -> key mask (batch, 1, 1, seq).

    With ``dtype=None`` the result is boolean (True = may be attended, as in
    ``torch.nn.functional.scaled_dot_product_attention``); with a floating dtype it is additive:
    0.0 for real tokens and ``torch.finfo(dtype).min`` for padding, as in Hugging Face's BERT.
    """
    if not isinstance(attention_mask, Tensor):
        raise TypeError(
            f"attention_mask must be a torch.Tensor of shape (batch, seq), got "
            f"{type(attention_mask).__name__}; wrap it with torch.tensor(...)."
        )
    if attention_mask.dim() != 2:
        raise ValueError(
            f"attention_mask must have shape (batch, seq), got shape {tuple(attention_mask.shape)}; "
            f"for a single sequence use attention_mask.unsqueeze(0)."
        )
    if attention_mask.is_complex():
        raise ValueError(
            f"attention_mask must be real 1/0 values, got dtype {attention_mask.dtype}."
        )
    if attention_mask.dtype != torch.bool and not torch.compiler.is_compiling():
        bad = attention_mask[(attention_mask != 0) & (attention_mask != 1)]
        if bad.numel():
            if bool(bad.isnan().any()):
                hint = "it holds NaN"
            elif bool((bad < 0).all()):
                hint = "it looks like an additive mask (0 / -10000), already prepared"
            else:
                hint = f"it holds {sorted(set(bad.flatten().tolist()))[:5]}"
            raise ValueError(
                f"attention_mask must hold only 1 (real token) and 0 (padding), but {hint}; "
                "pass the tokenizer's attention_mask, not scores or an additive mask."
            )
    keep = attention_mask.bool()[:, None, None, :]  # (batch, 1, 1, seq)
    if dtype is None:
        return keep
    if not dtype.is_floating_point:
        raise ValueError(
            f"dtype must be a floating dtype for an additive mask (or None for a boolean one), "
            f"got {dtype}."
        )
    additive = torch.zeros(keep.shape, dtype=dtype, device=keep.device)
    return additive.masked_fill(~keep, torch.finfo(dtype).min)  # (batch, 1, 1, seq)


def causal_mask(n: int, device: torch.device | str | None = None) -> Tensor:
    """Boolean (n, n) mask, True on and below the diagonal: token i sees tokens 0..i (GPT, not BERT)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a positive int (the sequence length), got {n!r}.")
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()  # (n, n)


# --- scaled dot-product attention --------------------------------------------------------------


def attention_scores(q: Tensor, k: Tensor, mask: Tensor | None = None) -> Tensor:
    """Scaled, masked scores q k^T / sqrt(d_k) before the softmax: (..., q_len, k_len).

    ``mask`` broadcasts to (..., q_len, k_len): boolean (True = attend) or additive floats;
    a masked score becomes the dtype's most negative number (never -inf, so never NaN).
    """
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))  # (..., q_len, k_len)
    if mask is not None and mask.dtype == torch.bool:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    elif mask is not None:
        scores = (scores + mask).clamp(min=torch.finfo(scores.dtype).min)  # a -inf mask: no NaN
    return scores


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    training: bool = False,
) -> tuple[Tensor, Tensor]:
    """Explicit attention: q (..., q_len, d_k), k (..., k_len, d_k), v (..., k_len, d_v).

    ``mask`` broadcasts to (..., q_len, k_len): boolean (True = attend) or additive floats.
    Returns (output (..., q_len, d_v), weights (..., q_len, k_len)); the weights are returned
    after dropout, as Hugging Face does. Dropout is applied only when ``training`` is True.
    No argument checks: the model checks its inputs once, the exercise checker checks yours.
    """
    scores = attention_scores(q, k, mask)  # (..., q_len, k_len)
    weights = scores.softmax(dim=-1)  # (..., q_len, k_len), each row sums to 1
    weights = F.dropout(weights, p=dropout_p, training=training)
    return weights @ v, weights  # (..., q_len, d_v), (..., q_len, k_len)


# --- heads -------------------------------------------------------------------------------------


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    """(batch, seq, hidden) -> (batch, heads, seq, head_dim), head_dim = hidden // num_heads."""
    if x.dim() != 3:
        raise ValueError(f"x must have shape (batch, seq, hidden), got {tuple(x.shape)}.")
    batch, seq, hidden = x.shape
    if not isinstance(num_heads, int) or num_heads < 1 or hidden % num_heads != 0:
        raise ValueError(
            f"num_heads must be a positive int dividing hidden={hidden}, got {num_heads!r}."
        )
    x = x.view(batch, seq, num_heads, hidden // num_heads)  # (batch, seq, heads, head_dim)
    return x.transpose(1, 2)  # (batch, heads, seq, head_dim)


def merge_heads(x: Tensor) -> Tensor:
    """(batch, heads, seq, head_dim) -> (batch, seq, hidden): the inverse of split_heads."""
    if x.dim() != 4:
        raise ValueError(f"x must have shape (batch, heads, seq, head_dim), got {tuple(x.shape)}.")
    batch, heads, seq, head_dim = x.shape
    x = x.transpose(1, 2)  # (batch, seq, heads, head_dim)
    return x.reshape(batch, seq, heads * head_dim)  # (batch, seq, hidden)


class MultiHeadSelfAttention(nn.Module):
    """BERT's self-attention: project to Q, K, V, attend in each head, merge, project out."""

    def __init__(self, hidden_size: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        for name, value in (("hidden_size", hidden_size), ("num_heads", num_heads)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}.")
        if hidden_size % num_heads != 0:
            raise ValueError(
                f"hidden_size ({hidden_size}) must be divisible by num_heads ({num_heads}); "
                f"choose num_heads among the divisors of {hidden_size}."
            )
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}.")
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.dropout = float(dropout)  # on the attention weights, as BERT's attention_probs
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)
        self.output = nn.Linear(hidden_size, hidden_size)

    def forward(
        self, x: Tensor, mask: Tensor | None = None, output_attentions: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """x (batch, seq, hidden), mask (batch, 1, 1, seq) additive -> (batch, seq, hidden), weights.

        ``mask`` is the prepared additive mask, built once per forward by ``BertModel`` with
        ``padding_mask(attention_mask, dtype)`` (or None: attend everywhere); it is trusted as
        given. The weights, (batch, heads, seq, seq), come back only with
        ``output_attentions=True`` (the explicit path); otherwise the fused kernel runs and the
        second item is None.
        """
        q = split_heads(self.query(x), self.num_heads)  # (batch, heads, seq, head_dim)
        k = split_heads(self.key(x), self.num_heads)  # (batch, heads, seq, head_dim)
        v = split_heads(self.value(x), self.num_heads)  # (batch, heads, seq, head_dim)
        if output_attentions:
            y, weights = scaled_dot_product_attention(
                q, k, v, mask, dropout_p=self.dropout, training=self.training
            )
        else:
            p = self.dropout if self.training else 0.0
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
            weights = None
        y = merge_heads(y)  # (batch, seq, hidden)
        return self.output(y), weights

    def extra_repr(self) -> str:
        return f"hidden_size={self.hidden_size}, num_heads={self.num_heads}, dropout={self.dropout}"
