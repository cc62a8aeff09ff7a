"""Assignment: the encoder. Fill in every forward method that raises NotImplementedError.

Use only torch here (not minibert or transformers). The grader loads the real MiniLM's weights
into your BertModel and compares it with Hugging Face transformers to 1e-5, so keep every
attribute name in the __init__ methods as it is. There is no dropout: this model is for inference.
config holds the fields of a minibert BertConfig: vocab_size, hidden_size, num_layers, num_heads,
intermediate_size, max_position_embeddings, type_vocab_size, layer_norm_eps.
Shapes: batch, seq, hidden, heads, head_dim = hidden // heads.
Grade it with: minibert assignment grade .
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


class Embeddings(nn.Module):
    """Token + segment + learned position embeddings, then LayerNorm."""

    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, input_ids, token_type_ids):
        """input_ids, token_type_ids (batch, seq) -> (batch, seq, hidden)."""
        raise NotImplementedError("your code here")


class SelfAttention(nn.Module):
    """Multi-head self-attention: Q, K, V projections, attention in every head, output projection."""

    def __init__(self, config):
        super().__init__()
        h = config.hidden_size
        self.num_heads = config.num_heads
        self.head_dim = h // config.num_heads
        self.query = nn.Linear(h, h)
        self.key = nn.Linear(h, h)
        self.value = nn.Linear(h, h)
        self.output = nn.Linear(h, h)

    def forward(self, x, mask=None):
        """x (batch, seq, hidden), additive mask (batch, 1, 1, seq) or None -> (batch, seq, hidden).

        mask holds 0.0 for tokens and a very negative number for padding: add it to the scores.
        """
        raise NotImplementedError("your code here")


class EncoderLayer(nn.Module):
    """One post-LN Transformer layer: attention, add & norm, feed-forward (GELU), add & norm."""

    def __init__(self, config):
        super().__init__()
        h = config.hidden_size
        self.attention = SelfAttention(config)
        self.attention_norm = nn.LayerNorm(h, eps=config.layer_norm_eps)
        self.ffn_in = nn.Linear(h, config.intermediate_size)
        self.ffn_out = nn.Linear(config.intermediate_size, h)
        self.ffn_norm = nn.LayerNorm(h, eps=config.layer_norm_eps)

    def forward(self, x, mask=None):
        """x (batch, seq, hidden), additive mask (batch, 1, 1, seq) or None -> (batch, seq, hidden)."""
        raise NotImplementedError("your code here")


class Encoder(nn.Module):
    """num_layers encoder layers, one after the other (given)."""

    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.num_layers))

    def forward(self, x, mask=None):
        """x (batch, seq, hidden), additive mask -> (batch, seq, hidden)."""
        for layer in self.layers:
            x = layer(x, mask)
        return x


class Pooler(nn.Module):
    """The [CLS] vector through dense + tanh (its forward is part of BertModel's part)."""

    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden):
        """hidden (batch, seq, hidden) -> (batch, hidden)."""
        raise NotImplementedError("your code here")


class BertModel(nn.Module):
    """Embeddings, the encoder and the pooler."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        self.encoder = Encoder(config)
        self.pooler = Pooler(config)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None):
        """input_ids, token_type_ids, attention_mask (batch, seq) -> (last_hidden, pooled).

        token_type_ids default to 0 (one segment); attention_mask (1 token, 0 padding) defaults
        to all ones. last_hidden is (batch, seq, hidden), pooled (batch, hidden).
        """
        raise NotImplementedError("your code here")


# Silence "imported but unused" until you use them.
_ = math, torch, F
