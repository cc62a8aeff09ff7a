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
    padding_mask,
    split_heads,
)

__all__ = ["GuidedAttention", "NeighbourGuidance", "neighbour_loss", "neighbours"]

OFFSETS = (-1, 1)  # head 0: the previous token, head 1: the next token


class GuidedAttention(MultiHeadSelfAttention):
    """Self-attention whose first heads get a score bonus at fixed offsets, falling to zero.

    The bonus is ``bias`` at the first training forward and falls linearly to zero over ``steps``
    training forwards; the module counts them itself (the ``step`` buffer, saved with the model
    while training, so a resumed run continues the schedule). Evaluation never applies it.
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: float = 0.0,
        steps: int = 1,
    ):
        super().__init__(hidden_size, num_heads, dropout)
        if num_heads < len(OFFSETS):
            raise ValueError(f"neighbour guidance needs {len(OFFSETS)} heads, got {num_heads}")
        if bias < 0 or steps < 1:
            raise ValueError(f"bias must be >= 0 and steps >= 1, got {bias}, {steps}")
        self.bias, self.steps = bias, steps
        self.register_buffer("step", torch.zeros((), dtype=torch.long))  # training forwards so far

    def strength(self) -> float:
        """1 at the start, falling linearly to 0 after `steps` training forwards."""
        return max(0.0, 1.0 - int(self.step) / self.steps)

    def forward(
        self, x: Tensor, mask: Tensor | None = None, output_attentions: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """As MultiHeadSelfAttention; a training forward adds the bonus and counts one step."""
        if not self.training:
            return super().forward(x, mask, output_attentions)
        bonus = self.bias * self.strength()
        self.step += 1
        if not bonus:
            return super().forward(x, mask, output_attentions)
        q = split_heads(self.query(x), self.num_heads)  # (batch, heads, seq, head_dim)
        k = split_heads(self.key(x), self.num_heads)  # (batch, heads, seq, head_dim)
        v = split_heads(self.value(x), self.num_heads)  # (batch, heads, seq, head_dim)
        scores = attention_scores(q, k, mask)  # (batch, heads, seq, seq), masked
        g = len(OFFSETS)
        index, valid = neighbours(
            mask, *x.shape[:2], x.device
        )  # (batch, g, seq, 1), (batch, g, seq)
        extra = torch.zeros_like(scores[:, :g]).scatter(-1, index, bonus)  # (batch, g, seq, seq)
        scores = torch.cat([scores[:, :g] + extra * valid[..., None], scores[:, g:]], 1)
        weights = scores.softmax(-1)  # (batch, heads, seq, seq)
        weights = nn.functional.dropout(weights, p=self.dropout, training=True)
        y = merge_heads(weights @ v)  # (batch, seq, hidden)
        return self.output(y), weights if output_attentions else None


def neighbours(
    mask: Tensor | None, batch: int, seq: int, device: torch.device
) -> tuple[Tensor, Tensor]:
    """Each guided head's target position (batch, g, seq, 1) and where it is a real token (batch, g, seq).

    ``mask`` is the attention's padding mask (batch, 1, 1, seq): True or additive 0 = real.
    """
    real = torch.ones(batch, seq, dtype=torch.bool, device=device)  # (batch, seq)
    if mask is not None:
        real = mask[:, 0, 0] if mask.dtype == torch.bool else mask[:, 0, 0] == 0
    g, i = len(OFFSETS), torch.arange(seq, device=device)
    target = torch.stack([(i + o).clamp(0, seq - 1) for o in OFFSETS])  # (g, seq)
    valid = torch.stack([(i + o >= 0) & (i + o < seq) for o in OFFSETS])  # (g, seq)
    there = real.gather(1, target.reshape(1, -1).expand(batch, -1)).view(batch, g, seq)
    valid = valid & real[:, None, :] & there  # (batch, g, seq)
    return target.view(1, g, seq, 1).expand(batch, g, seq, 1), valid


def neighbour_loss(
    attention: MultiHeadSelfAttention, x: Tensor, attention_mask: Tensor | None = None
) -> Tensor:
    """Cross-entropy of the first heads' own attention (no bonus) against their neighbours: a scalar.

    x (batch, seq, hidden) is the attention's input; attention_mask (batch, seq): 1 real, 0 pad.
    """
    mask = None if attention_mask is None else padding_mask(attention_mask, dtype=x.dtype)
    q = split_heads(attention.query(x), attention.num_heads)  # (batch, heads, seq, head_dim)
    k = split_heads(attention.key(x), attention.num_heads)  # (batch, heads, seq, head_dim)
    scores = attention_scores(q, k, mask)  # (batch, heads, seq, seq), masked
    index, valid = neighbours(mask, *x.shape[:2], x.device)  # (batch, g, seq, 1), (batch, g, seq)
    own = scores[:, : len(OFFSETS)].log_softmax(-1).gather(-1, index).squeeze(-1)  # (batch, g, seq)
    return -(own * valid).sum() / valid.sum().clamp(min=1)


class NeighbourGuidance(nn.Module):
    """A BertForPreTraining whose layer-0 heads are guided to the neighbours for its first steps."""

    def __init__(self, model: nn.Module, bias: float, aux_weight: float, steps: int):
        super().__init__()
        if bias < 0 or aux_weight < 0 or steps < 1:
            raise ValueError(
                f"bias and aux_weight must be >= 0 and steps >= 1, got {bias}, {aux_weight}, {steps}"
            )
        self.model, self.aux_weight = model, aux_weight
        plain = model.bert.encoder.layers[0].attention
        guided = GuidedAttention(plain.hidden_size, plain.num_heads, plain.dropout, bias, steps)
        guided.load_state_dict({**plain.state_dict(), "step": guided.step})
        model.bert.encoder.layers[0].attention = guided

    @property
    def label_losses(self) -> dict[str, str]:
        """The guided model's labels and their losses (for the training loop's weighting)."""
        return self.model.label_losses

    @property
    def attention(self) -> GuidedAttention:
        return self.model.bert.encoder.layers[0].attention

    def strength(self) -> float:
        """1 at the start, falling linearly to 0 after `steps` training forwards."""
        return self.attention.strength()

    def forward(self, **inputs):
        """The model's forward; while training, with the bonus and the auxiliary loss added."""
        s = self.strength()  # before this forward counts its step
        if not self.training or not self.aux_weight * s > 0:
            return self.model(**inputs)
        out = self.model(**{**inputs, "output_hidden_states": True})  # [0]: layer 0's input
        if out.loss is not None:
            aux = neighbour_loss(self.attention, out.hidden_states[0], inputs.get("attention_mask"))
            out.loss = out.loss + self.aux_weight * s * aux
        if not inputs.get("output_hidden_states"):
            out.hidden_states = None
        return out

    def finish(self) -> nn.Module:
        """The wrapped model with layer 0's standard attention back (same weights)."""
        guided = self.attention
        plain = MultiHeadSelfAttention(guided.hidden_size, guided.num_heads, guided.dropout)
        plain.load_state_dict({k: v for k, v in guided.state_dict().items() if k != "step"})
        self.model.bert.encoder.layers[0].attention = plain.to(next(guided.parameters()).device)
        return self.model
