"""Lesson 3, the encoder: the embeddings, one post-LN encoder layer, parameter counts, and
finding the previous-token head."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from minibert.attention import padding_mask
from minibert.config import BertConfig
from minibert.model import BertModel, Embeddings, EncoderLayer
from minibert.teaching.exercises.common import Result, attention_problem, call_safely, report
from minibert.teaching.viz import attention_summary


def _tiny_bert_config(g: Any) -> BertConfig:
    """A small random BertConfig for the checkers: (vocab, layers, hidden, heads) drawn from g."""
    heads = int(torch.randint(1, 5, (1,), generator=g))
    hidden = heads * int(torch.randint(2, 9, (1,), generator=g))
    return BertConfig(
        vocab_size=int(torch.randint(20, 60, (1,), generator=g)),
        hidden_size=hidden,
        num_layers=int(torch.randint(1, 4, (1,), generator=g)),
        num_heads=heads,
        intermediate_size=int(torch.randint(4, 40, (1,), generator=g)),
        max_position_embeddings=int(torch.randint(12, 30, (1,), generator=g)),
    )


def check_embeddings(fn: Callable[..., Any], cases: int = 10) -> Result:
    """Check ``fn(input_ids, token_type_ids, embeddings) -> (batch, seq, hidden)``.

    ``embeddings`` is a ``minibert.model.Embeddings`` in eval mode: use its three tables
    (word_embeddings, token_type_embeddings, position_embeddings) and its layer_norm.
    """
    name = "embedding sum"
    g = torch.Generator().manual_seed(30)
    for case in range(cases):
        torch.manual_seed(30 + case)
        config = _tiny_bert_config(g)
        emb = Embeddings(config).eval()
        emb.layer_norm.weight.data.uniform_(0.5, 1.5)  # not the identity, so that it shows
        emb.layer_norm.bias.data.uniform_(-0.5, 0.5)
        batch = int(torch.randint(1, 4, (1,), generator=g))
        seq = int(torch.randint(2, config.max_position_embeddings + 1, (1,), generator=g))
        ids = torch.randint(0, config.vocab_size, (batch, seq), generator=g)
        types = (torch.arange(seq) >= seq // 2).long().expand(batch, seq).clone()
        got, hint = call_safely(fn, ids, types, emb)
        if hint is not None:
            return report(name, hint, case)
        with torch.no_grad():
            expected = emb(ids, types)
            got = got.detach() if isinstance(got, torch.Tensor) else got
            positions = emb.position_embeddings(torch.arange(seq))
            raw = emb.word_embeddings(ids) + emb.token_type_embeddings(types) + positions
            partial = {
                "the position embeddings": raw - positions,
                "the segment (token type) embeddings": raw - emb.token_type_embeddings(types),
            }
        problem = attention_problem(got, expected, "the embeddings")
        if problem is not None:
            if isinstance(got, torch.Tensor) and got.shape == expected.shape:
                if torch.allclose(got, raw, atol=1e-5):
                    problem += " You summed the tables; now apply embeddings.layer_norm to the sum."
                for what, without in partial.items():
                    if torch.allclose(got, emb.layer_norm(without), atol=1e-5):
                        problem += f" The sum is missing {what}."
            return report(name, f"{problem} (case {case}: input_ids {tuple(ids.shape)})", case)
    return report(name, None, cases)


def check_encoder_layer(fn: Callable[..., Any], cases: int = 10) -> Result:
    """Check ``fn(x, mask, layer) -> (batch, seq, hidden)``: one post-LN encoder layer.

    ``layer`` is a ``minibert.model.EncoderLayer`` in eval mode and ``mask`` the additive mask
    (batch, 1, 1, seq) that BertModel builds once and hands every layer: call
    ``layer.attention(x, mask)`` (it returns (output, weights)) and use attention_norm, ffn_in,
    ffn_out and ffn_norm yourself, with exact GELU.
    """
    name = "post-LN encoder layer"
    g = torch.Generator().manual_seed(31)
    for case in range(cases):
        torch.manual_seed(31 + case)
        config = _tiny_bert_config(g)
        layer = EncoderLayer(config).eval()
        for norm in (layer.attention_norm, layer.ffn_norm):
            norm.weight.data.uniform_(0.5, 1.5)
            norm.bias.data.uniform_(-0.5, 0.5)
        batch = int(torch.randint(1, 4, (1,), generator=g))
        seq = int(torch.randint(2, 10, (1,), generator=g))
        x = torch.randn(batch, seq, config.hidden_size, generator=g)
        attention_mask = torch.ones(batch, seq, dtype=torch.long)
        attention_mask[0, seq - 1 :] = 0  # the first example ends with padding
        mask = padding_mask(attention_mask, dtype=x.dtype)  # (batch, 1, 1, seq), additive
        got, hint = call_safely(fn, x.clone(), mask.clone(), layer)
        if hint is not None:
            return report(name, hint, case)
        with torch.no_grad():
            expected, _ = layer(x, mask)
            got = got.detach() if isinstance(got, torch.Tensor) else got

            def ffn(
                h: torch.Tensor, act: Callable[..., Any] = F.gelu, layer: EncoderLayer = layer
            ) -> torch.Tensor:
                return layer.ffn_out(act(layer.ffn_in(h)))

            a = layer.attention(x, mask)[0]
            h = layer.attention_norm(x + a)
            pre = x + layer.attention(layer.attention_norm(x), mask)[0]
            no_residual = layer.attention_norm(a)
            unmasked = layer.attention_norm(x + layer.attention(x)[0])
            wrong = {
                "pre-LN (LayerNorm before each sublayer); BERT normalises after adding the "
                "residual, x = LN(x + sublayer(x))": pre + ffn(layer.ffn_norm(pre)),
                "ReLU in the feed-forward; BERT uses GELU (torch.nn.functional.gelu)": (
                    layer.ffn_norm(h + ffn(h, F.relu))
                ),
                "the tanh approximation of GELU (Google's modeling.py, Hugging Face's "
                "'gelu_new'); this layer's config says 'gelu', the exact x * Phi(x), "
                "F.gelu(x) without approximate='tanh'": (
                    layer.ffn_norm(h + ffn(h, lambda t: F.gelu(t, approximate="tanh")))
                ),
                "no residual around the feed-forward; add its input before ffn_norm": (
                    layer.ffn_norm(ffn(h))
                ),
                "no residual around attention; add x before attention_norm": (
                    layer.ffn_norm(no_residual + ffn(no_residual))
                ),
                "the padding mask was not passed to layer.attention": (
                    layer.ffn_norm(unmasked + ffn(unmasked))
                ),
            }
        problem = attention_problem(got, expected, "the layer's output")
        if problem is not None:
            if isinstance(got, torch.Tensor) and got.shape == expected.shape:
                for what, output in wrong.items():
                    if torch.allclose(got, output, atol=1e-5):
                        problem += f" It looks like {what}."
                        break
            return report(name, f"{problem} (case {case}: x {tuple(x.shape)})", case)
    return report(name, None, cases)


def check_parameter_count(fn: Callable[..., Any], cases: int = 10) -> Result:
    """Check ``fn(config) -> int``: the number of parameters of ``BertModel(config)``, by formula."""
    name = "parameter count"
    g = torch.Generator().manual_seed(32)
    configs = [BertConfig.preset(p) for p in ("tiny", "base")]
    configs += [_tiny_bert_config(g) for _ in range(max(cases - len(configs), 0))]
    for case, config in enumerate(configs):
        got, hint = call_safely(fn, config)
        if hint is not None:
            return report(name, hint, case)
        with torch.device("meta"):  # sizes without memory, even for base
            expected = sum(p.numel() for p in BertModel(config).parameters())
        if not isinstance(got, (int, np.integer)) or isinstance(got, bool):
            return report(name, f"return an int, got {type(got).__name__}.", case)
        if got != expected:
            h, i, n = config.hidden_size, config.intermediate_size, config.num_layers
            missing = {
                "the biases": n * (4 * h + i + h) + h,
                "the LayerNorms' weights and biases": 2 * h * (2 * n + 1),
                "the pooler (dense h x h + bias)": h * h + h,
                "the position embeddings": config.max_position_embeddings * h,
                "the segment (token type) embeddings": config.type_vocab_size * h,
            }
            problem = f"expected {expected:,} for {_describe(config)}, got {got:,}."
            for k in (1, 2):  # one part left out, or two (the pooler and the LayerNorms, say)
                for parts in itertools.combinations(missing, k):
                    if expected - got == sum(missing[p] for p in parts):
                        problem += f" The difference is exactly {' plus '.join(parts)}."
                        return report(name, problem, case)
            return report(name, problem, case)
    return report(name, None, len(configs))


def _describe(config: Any) -> str:
    return (
        f"BertConfig(vocab_size={config.vocab_size}, hidden_size={config.hidden_size}, "
        f"num_layers={config.num_layers}, num_heads={config.num_heads}, "
        f"intermediate_size={config.intermediate_size}, "
        f"max_position_embeddings={config.max_position_embeddings})"
    )


def check_previous_token_head(
    fn: Callable[..., Any], attentions: Any = None, attention_mask: Any = None, cases: int = 6
) -> Result:
    """Check ``fn(attentions, attention_mask) -> (layer, head)``: the strongest previous-token head.

    ``attentions`` is a tuple of (batch, heads, seq, seq), ``attention_mask`` (batch, seq) of 1/0.
    First on random attention with one planted previous-token head (and a next-token decoy),
    then, if you pass them, on real attentions: there your head must reach 90% of the best
    head's mean attention to the previous token.
    """
    name = "previous-token head"
    g = torch.Generator().manual_seed(33)

    for case in range(cases):
        layers = int(torch.randint(2, 5, (1,), generator=g))
        heads = int(torch.randint(2, 7, (1,), generator=g))
        batch, seq = 2, int(torch.randint(6, 13, (1,), generator=g))
        mask = torch.ones(batch, seq, dtype=torch.long)
        mask[1, seq - 2 :] = 0
        scores = torch.randn(layers, batch, heads, seq, seq, generator=g)
        scores = scores.masked_fill(mask[None, :, None, None, :] == 0, -1e9)
        atts = list(scores.softmax(-1))
        flat = torch.randperm(layers * heads, generator=g)[:2]
        (pl, ph), (nl, nh) = ((int(i) // heads, int(i) % heads) for i in flat)
        shift = torch.zeros(seq, seq)
        shift[torch.arange(1, seq), torch.arange(seq - 1)] = 1.0  # query q -> key q - 1
        shift[0, 0] = 1.0
        ahead = torch.zeros(seq, seq)
        ahead[torch.arange(seq - 1), torch.arange(1, seq)] = 1.0  # query q -> key q + 1
        ahead[seq - 1, seq - 1] = 1.0
        atts[pl][:, ph] = 0.1 * atts[pl][:, ph] + 0.9 * shift
        atts[nl][:, nh] = 0.1 * atts[nl][:, nh] + 0.9 * ahead
        got, hint = call_safely(fn, tuple(atts), mask.clone())
        if hint is not None:
            return report(name, hint, case)
        pair = _as_pair(got)
        if pair is None:
            return report(name, f"return (layer, head) as two ints, got {got!r:.60}.", case)
        if pair != (pl, ph):
            problem = f"the planted previous-token head is layer {pl}, head {ph}; you gave {pair}."
            if pair == (nl, nh):
                problem += (
                    " That is the NEXT-token head: query q attends to key q + 1. The previous "
                    "token is the diagonal just below the main one, a[..., q, q - 1]."
                )
            return report(name, f"{problem} (case {case}: {layers} layers x {heads} heads)", case)
    if attentions is None:
        return report(name, None, cases)
    return _check_on_real_attentions(fn, attentions, attention_mask, cases)


def _as_pair(got: Any) -> tuple[int, int] | None:
    """(layer, head) as two ints, or None when got is not a pair of ints."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return None
    ints = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in got)
    return (int(got[0]), int(got[1])) if ints else None


def _check_on_real_attentions(
    fn: Callable[..., Any], attentions: Any, attention_mask: Any, cases: int
) -> Result:
    """After the planted cases: fn's head on real attentions reaches 90% of the best head's mean
    attention to the previous token."""
    name = "previous-token head"
    got, hint = call_safely(fn, attentions, attention_mask)
    if hint is not None:
        return report(name, hint, cases)
    pair = _as_pair(got)
    if pair is None:
        return report(name, f"return (layer, head) as two ints, got {got!r:.60}.", cases)
    batch, _, seq, _ = attentions[0].shape
    no_ids = torch.zeros(batch, seq, dtype=torch.long)  # token ids do not matter here
    prev = attention_summary(attentions, no_ids, {}, attention_mask)["to previous"]
    layer, head = pair
    if not (0 <= layer < prev.shape[0] and 0 <= head < prev.shape[1]):
        return report(name, f"there is no layer {layer}, head {head} in these attentions.", cases)
    best = float(prev.max())
    if prev[layer, head] < 0.9 * best:
        return report(
            name,
            f"layer {layer}, head {head} puts {prev[layer, head]:.0%} of its attention on the "
            f"previous token on average; the best head reaches {best:.0%}.",
            cases,
        )
    return report(
        name,
        None,
        cases,
        passed=(
            f"layer {layer}, head {head} puts {prev[layer, head]:.0%} of its attention on the "
            f"previous token (checked on {cases} planted cases and your attentions)."
        ),
    )
