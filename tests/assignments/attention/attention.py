"""Reference solution of the assignment: attention (for the tests and the teacher; not shipped).

Use only torch here (not minibert): the grader compares your code with minibert's reference and
with torch.nn.MultiheadAttention. Shapes: batch, heads, seq (q_len, k_len), d_k, d_v, hidden.
Grade it with: minibert assignment grade .
"""

import math

import torch
from torch import nn


def scaled_dot_product_attention(q, k, v, mask=None):
    """q (..., q_len, d_k), k (..., k_len, d_k), v (..., k_len, d_v), boolean mask -> (output, weights).

    mask, if given, is True where a query may attend to a key and broadcasts to
    (..., q_len, k_len). output is (..., q_len, d_v) and weights (..., q_len, k_len). A row whose
    keys are all masked must not give NaN.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., q_len, k_len)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


def padding_mask(attention_mask):
    """attention_mask (batch, seq) of 1 (token) / 0 (padding) -> additive mask (batch, 1, 1, seq).

    The additive mask is float32: 0.0 where there is a token, torch.finfo(torch.float32).min at
    padding, so that adding it to the scores removes the padded keys.
    """
    keep = attention_mask[:, None, None, :].bool()  # (batch, 1, 1, seq)
    return torch.zeros(keep.shape).masked_fill(~keep, torch.finfo(torch.float32).min)


def split_heads(x, num_heads):
    """(batch, seq, hidden) -> (batch, num_heads, seq, hidden // num_heads)."""
    batch, seq, hidden = x.shape
    return x.view(batch, seq, num_heads, hidden // num_heads).transpose(1, 2)


def merge_heads(x):
    """(batch, heads, seq, head_dim) -> (batch, seq, heads * head_dim): split_heads undone."""
    batch, heads, seq, head_dim = x.shape
    return x.transpose(1, 2).reshape(batch, seq, heads * head_dim)


class MultiHeadSelfAttention(nn.Module):
    """BERT's self-attention: project to Q, K, V, attend in every head, merge, project out."""

    def __init__(self, hidden_size, num_heads):
        super().__init__()
        assert hidden_size % num_heads == 0, "hidden_size must be divisible by num_heads"
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)
        self.output = nn.Linear(hidden_size, hidden_size)

    def forward(self, x, attention_mask=None):
        """x (batch, seq, hidden), attention_mask (batch, seq) 1/0 or None -> (output, weights).

        output is (batch, seq, hidden), weights (batch, heads, seq, seq). Use your functions above.
        """
        q = split_heads(self.query(x), self.num_heads)  # (batch, heads, seq, head_dim)
        k = split_heads(self.key(x), self.num_heads)
        v = split_heads(self.value(x), self.num_heads)
        mask = None if attention_mask is None else attention_mask[:, None, None, :].bool()
        y, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.output(merge_heads(y)), weights
