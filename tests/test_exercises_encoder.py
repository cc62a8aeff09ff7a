"""minibert.teaching.exercises.encoder, lesson 3: embeddings, the layer, parameter counts, the
previous-token head.

Each checker passes a right answer and catches the typical mistakes, naming them in its hint.
"""

from __future__ import annotations

import pytest
import torch

from minibert.teaching import exercises


def embeddings_right(input_ids, token_type_ids, emb):
    positions = emb.position_embeddings(torch.arange(input_ids.shape[1]))
    x = emb.word_embeddings(input_ids) + emb.token_type_embeddings(token_type_ids) + positions
    return emb.layer_norm(x)


def embeddings_without_positions(input_ids, token_type_ids, emb):
    x = emb.word_embeddings(input_ids) + emb.token_type_embeddings(token_type_ids)
    return emb.layer_norm(x)


def embeddings_without_norm(input_ids, token_type_ids, emb):
    positions = emb.position_embeddings(torch.arange(input_ids.shape[1]))
    return emb.word_embeddings(input_ids) + emb.token_type_embeddings(token_type_ids) + positions


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (embeddings_right, True, "PASS embedding sum"),
        (embeddings_without_positions, False, "missing the position embeddings"),
        (embeddings_without_norm, False, "apply embeddings.layer_norm"),
        (lambda i, t, e: e.word_embeddings(i), False, "NOT YET embedding sum"),
    ],
)
def test_check_embeddings(fn, passes, hint, capsys):
    assert exercises.check_embeddings(fn).passed is passes
    assert hint in capsys.readouterr().out


def post_ln(x, mask, layer, act=torch.nn.functional.gelu):
    a, _ = layer.attention(x, mask)
    h = layer.attention_norm(x + a)
    return layer.ffn_norm(h + layer.ffn_out(act(layer.ffn_in(h))))


def pre_ln(x, mask, layer):
    h = x + layer.attention(layer.attention_norm(x), mask)[0]
    return h + layer.ffn_out(torch.nn.functional.gelu(layer.ffn_in(layer.ffn_norm(h))))


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (post_ln, True, "PASS post-LN encoder layer"),
        (pre_ln, False, "pre-LN"),
        (lambda x, m, layer: post_ln(x, m, layer, torch.relu), False, "BERT uses GELU"),
        (
            lambda x, m, layer: post_ln(
                x, m, layer, lambda t: torch.nn.functional.gelu(t, approximate="tanh")
            ),
            False,
            "tanh approximation of GELU",
        ),
        (lambda x, m, layer: post_ln(x, None, layer), False, "padding mask was not passed"),
        (lambda x, m, layer: x, False, "off from the reference"),
    ],
)
def test_check_encoder_layer(fn, passes, hint, capsys):
    assert exercises.check_encoder_layer(fn).passed is passes
    assert hint in capsys.readouterr().out


def count_right(c):
    h, i, n = c.hidden_size, c.intermediate_size, c.num_layers
    embeddings = (c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * h + 2 * h
    layer = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h
    return embeddings + n * layer + (h * h + h)


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (count_right, True, "PASS parameter count"),
        (lambda c: count_right(c) - c.hidden_size**2 - c.hidden_size, False, "the pooler"),
        (
            lambda c: count_right(c) - c.hidden_size**2 - c.hidden_size * (4 * c.num_layers + 3),
            False,
            "the LayerNorms' weights and biases plus the pooler",
        ),
        (
            lambda c: count_right(c) - c.max_position_embeddings * c.hidden_size,
            False,
            "the position embeddings",
        ),
        (lambda c: 110_000_000, False, "expected 4,385,920"),
        (lambda c: float(count_right(c)), False, "return an int"),
    ],
)
def test_check_parameter_count(fn, passes, hint, capsys):
    assert exercises.check_parameter_count(fn).passed is passes
    assert hint in capsys.readouterr().out


def strongest_diagonal(offset):
    def find(attentions, attention_mask):
        scores = torch.stack([a.diagonal(offset, -2, -1).mean((0, 2)) for a in attentions])
        best = int(scores.argmax())
        return best // scores.shape[1], best % scores.shape[1]

    return find


def test_check_previous_token_head(capsys):
    assert exercises.check_previous_token_head(strongest_diagonal(-1)).passed is True
    assert "PASS previous-token head" in capsys.readouterr().out
    assert exercises.check_previous_token_head(strongest_diagonal(1)).passed is False
    assert "NEXT-token head" in capsys.readouterr().out
    assert exercises.check_previous_token_head(lambda a, m: (0, 2)).passed is False  # a guess
    assert "planted previous-token head" in capsys.readouterr().out
    assert exercises.check_previous_token_head(lambda a, m: "layer 0").passed is False
    assert "two ints" in capsys.readouterr().out


def test_check_previous_token_head_on_given_attentions(capsys):
    seq = 6
    prev = torch.zeros(1, 1, seq, seq)
    prev[0, 0, torch.arange(1, seq), torch.arange(seq - 1)] = 1.0
    prev[0, 0, 0, 0] = 1.0
    uniform = torch.full((1, 1, seq, seq), 1 / seq)
    attentions = (torch.cat([uniform, prev], 1),)  # layer 0: head 0 uniform, head 1 previous
    mask = torch.ones(1, seq, dtype=torch.long)
    finder = strongest_diagonal(-1)
    assert exercises.check_previous_token_head(finder, attentions, mask).passed is True
    assert "layer 0, head 1 puts 100%" in capsys.readouterr().out
    assert (
        exercises.check_previous_token_head(lambda a, m: (0, 0), attentions, mask).passed is False
    )
