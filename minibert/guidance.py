"""The plateau's cure: neighbour heads taught while pretraining, and gone before the model is saved.

A freshly initialised BERT knows word order only through its position table, 128 random vectors.
Until attention learns to use them, every [MASK] looks alike and the best answer is "the": the
MLM plateau (Chen et al., ICLR 2024). Pretrained BERTs have heads that look at the previous or
the next token (Clark et al., 2019); once such heads form, the loss drops. On a CPU budget a
plain small BERT may not get there.

``NeighbourGuidance`` wraps a BertForPreTraining for the early part of training:

- in layer 0, head 0 gets a bonus of ``bias`` on its score for the previous token and head 1 on
  the next token, so the heads work from step 1 and the layers above learn to use them;
- an auxiliary loss, ``aux_weight`` times the cross-entropy between those heads' *own* attention
  (without the bonus) and the neighbour, teaches the position table and layer 0's Q and K to
  produce the pattern themselves;
- both fall linearly to zero over ``steps`` training steps; after that it is plain BERT training.

Evaluation (``model.eval()``) never applies the bonus, so held-out measures are those of the
plain model. ``finish()`` returns the wrapped model with standard attention: the same
parameters, a standard BERT that transformers loads::

    guided = NeighbourGuidance(model, bias=8.0, aux_weight=1.0, steps=3000)
    train(guided, ...)            # forward(**batch) as the model's; loss = MLM + NSP + aux
    model = guided.finish()
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from minibert.attention import (
    MultiHeadSelfAttention,
    attention_scores,
    merge_heads,
    split_heads,
)

__all__ = ["GuidedAttention", "NeighbourGuidance"]

OFFSETS = (-1, 1)  # head 0: the previous token, head 1: the next token


class GuidedAttention(MultiHeadSelfAttention):
    """Self-attention whose first heads get a score bonus at fixed offsets and an auxiliary loss."""

    def __init__(self, hidden_size: int, num_heads: int, dropout: float = 0.0):
        super().__init__(hidden_size, num_heads, dropout)
        if num_heads < len(OFFSETS):
            raise ValueError(f"neighbour guidance needs {len(OFFSETS)} heads, got {num_heads}")
        self.bias = 0.0  # the bonus on the guided heads' neighbour scores, set by NeighbourGuidance
        self.guide = False  # compute aux_loss in the next training forward
        self.aux_loss: Tensor | None = None

    def forward(
        self, x: Tensor, mask: Tensor | None = None, output_attentions: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """As MultiHeadSelfAttention; while training with guidance, also sets self.aux_loss."""
        self.aux_loss = None
        if not self.training or not (self.guide or self.bias):
            return super().forward(x, mask, output_attentions)
        batch, seq, _ = x.shape
        g = len(OFFSETS)
        q = split_heads(self.query(x), self.num_heads)  # (batch, heads, seq, head_dim)
        k = split_heads(self.key(x), self.num_heads)  # (batch, heads, seq, head_dim)
        v = split_heads(self.value(x), self.num_heads)  # (batch, heads, seq, head_dim)
        scores = attention_scores(q, k, mask)  # (batch, heads, seq, seq), masked
        real = torch.ones(batch, seq, dtype=torch.bool, device=x.device)  # (batch, seq)
        if mask is not None:  # (batch, 1, 1, seq): True = real, or additive 0 = real
            real = mask[:, 0, 0] if mask.dtype == torch.bool else mask[:, 0, 0] == 0
        i = torch.arange(seq, device=x.device)
        target = torch.stack([(i + o).clamp(0, seq - 1) for o in OFFSETS])  # (g, seq)
        valid = torch.stack([(i + o >= 0) & (i + o < seq) for o in OFFSETS])  # (g, seq)
        valid = valid & real[:, None, :] & real.gather(1, target.reshape(1, -1).expand(batch, -1)).view(batch, g, seq)  # fmt: skip
        index = target.view(1, g, seq, 1).expand(batch, g, seq, 1)  # (batch, g, seq, 1)
        if self.guide:
            own = scores[:, :g].log_softmax(-1).gather(-1, index).squeeze(-1)  # (batch, g, seq)
            self.aux_loss = -(own * valid).sum() / valid.sum().clamp(min=1)
        if self.bias:
            bonus = torch.zeros_like(scores[:, :g]).scatter(-1, index, self.bias)
            scores = torch.cat([scores[:, :g] + bonus * valid[..., None], scores[:, g:]], 1)
        weights = scores.softmax(-1)  # (batch, heads, seq, seq)
        weights = nn.functional.dropout(weights, p=self.dropout, training=True)
        y = merge_heads(weights @ v)  # (batch, seq, hidden)
        return self.output(y), weights if output_attentions else None


class NeighbourGuidance(nn.Module):
    """A BertForPreTraining whose layer-0 heads are guided to the neighbours for its first steps."""

    def __init__(self, model: nn.Module, bias: float, aux_weight: float, steps: int):
        super().__init__()
        if bias < 0 or aux_weight < 0 or steps < 1:
            raise ValueError(
                f"bias and aux_weight must be >= 0 and steps >= 1, got {bias}, {aux_weight}, {steps}"
            )
        self.model, self.bias, self.aux_weight, self.steps = model, bias, aux_weight, steps
        plain = model.bert.encoder.layers[0].attention
        guided = GuidedAttention(plain.hidden_size, plain.num_heads, plain.dropout)
        guided.load_state_dict(plain.state_dict())
        model.bert.encoder.layers[0].attention = guided
        self.register_buffer("step", torch.zeros((), dtype=torch.long))  # training forwards so far

    @property
    def label_losses(self) -> dict[str, str]:
        """The guided model's labels and their losses (for the training loop's weighting)."""
        return self.model.label_losses

    @property
    def attention(self) -> GuidedAttention:
        return self.model.bert.encoder.layers[0].attention

    def strength(self) -> float:
        """1 at the start, falling linearly to 0 after `steps` training forwards."""
        return max(0.0, 1.0 - int(self.step) / self.steps)

    def forward(self, **inputs):
        """The model's forward; while training, with the bonus and the auxiliary loss added."""
        if not self.training:
            return self.model(**inputs)
        s = self.strength()
        self.attention.bias, self.attention.guide = self.bias * s, self.aux_weight * s > 0
        out = self.model(**inputs)
        if self.attention.aux_loss is not None and out.loss is not None:
            out.loss = out.loss + self.aux_weight * s * self.attention.aux_loss
        self.step += 1
        return out

    def finish(self) -> nn.Module:
        """The wrapped model with layer 0's standard attention back (same weights)."""
        guided = self.attention
        plain = MultiHeadSelfAttention(guided.hidden_size, guided.num_heads, guided.dropout)
        plain.load_state_dict(guided.state_dict())
        self.model.bert.encoder.layers[0].attention = plain.to(next(guided.parameters()).device)
        return self.model
