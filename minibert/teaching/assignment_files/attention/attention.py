"""Assignment: attention. Fill in every function and method that raises NotImplementedError.

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
    raise NotImplementedError("your code here")


def padding_mask(attention_mask):
    """attention_mask (batch, seq) of 1 (token) / 0 (padding) -> additive mask (batch, 1, 1, seq).

    The additive mask is float32: 0.0 where there is a token, torch.finfo(torch.float32).min at
    padding, so that adding it to the scores removes the padded keys.
    """
    raise NotImplementedError("your code here")


def split_heads(x, num_heads):
    """(batch, seq, hidden) -> (batch, num_heads, seq, hidden // num_heads)."""
    raise NotImplementedError("your code here")


def merge_heads(x):
    """(batch, heads, seq, head_dim) -> (batch, seq, heads * head_dim): split_heads undone."""
    raise NotImplementedError("your code here")


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
        raise NotImplementedError("your code here")


# Silence "imported but unused" until you use them.
_ = math, torch
