"""Tests for minibert.attention: explicit vs fused vs torch.nn.MultiheadAttention vs Hugging Face."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from minibert.attention import (
    MultiHeadSelfAttention,
    causal_mask,
    merge_heads,
    padding_mask,
    scaled_dot_product_attention,
    split_heads,
)

TOL = {torch.float32: 1e-6, torch.float64: 1e-12}

# one full row, one padded row, one row that is all padding (defined, never NaN)
MASK_CASES = {
    "no mask": None,
    "padding": torch.tensor([[1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0]]),
    "all padding": torch.tensor([[1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0, 0], [0] * 7]),
}


def prep(attention_mask, x):
    """What BertModel hands every layer: the additive mask, built once (None without a mask)."""
    return None if attention_mask is None else padding_mask(attention_mask, dtype=x.dtype)


def make_module(dtype: torch.dtype = torch.float32, hidden: int = 32, heads: int = 4, seed=0):
    torch.manual_seed(seed)
    return MultiHeadSelfAttention(hidden, heads).to(dtype).eval()


# --- the explicit computation ------------------------------------------------------------------


def test_explicit_attention_equals_the_formula_computed_in_numpy():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    scores = q @ k.T / math.sqrt(4)
    expected_w = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    out, w = scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)))
    np.testing.assert_allclose(w.numpy(), expected_w, rtol=0, atol=1e-12)
    np.testing.assert_allclose(out.numpy(), expected_w @ v, rtol=0, atol=1e-12)


def test_weights_are_rows_of_probabilities_with_documented_shapes():
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 10)
    out, w = scaled_dot_product_attention(q, k, v)
    assert out.shape == (2, 3, 5, 10)
    assert w.shape == (2, 3, 5, 6)
    assert (w >= 0).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 5), rtol=0, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kind", ["bool", "additive"])
def test_explicit_function_equals_torch_fused_function(dtype, kind):
    torch.manual_seed(1)
    q, k, v = (torch.randn(2, 3, 6, 8, dtype=dtype) for _ in range(3))
    am = torch.tensor([[1, 1, 1, 1, 1, 0], [1, 1, 0, 0, 0, 0]])
    mask = padding_mask(am) if kind == "bool" else padding_mask(am, dtype=dtype)
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    fused = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(out, fused, rtol=0, atol=TOL[dtype])


# --- the two paths of the module ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", list(MASK_CASES))
def test_explicit_and_fused_paths_agree(dtype, case):
    module = make_module(dtype)
    x = torch.randn(3, 7, 32, dtype=dtype)
    am = MASK_CASES[case]
    explicit, weights = module(x, prep(am, x), output_attentions=True)
    fused, none = module(x, prep(am, x))
    assert none is None
    assert weights.shape == (3, 4, 7, 7)
    assert not torch.isnan(explicit).any() and not torch.isnan(fused).any()
    torch.testing.assert_close(explicit, fused, rtol=0, atol=TOL[dtype])


@settings(max_examples=25, deadline=None)
@given(
    batch=st.integers(1, 3),
    heads=st.sampled_from([1, 2, 4]),
    head_dim=st.integers(1, 8),
    lengths=st.lists(st.integers(0, 9), min_size=3, max_size=3),
    seed=st.integers(0, 2**16),
)
def test_paths_agree_on_random_shapes_and_padding(batch, heads, head_dim, lengths, seed):
    torch.manual_seed(seed)
    seq = 9
    module = MultiHeadSelfAttention(heads * head_dim, heads).double().eval()
    x = torch.randn(batch, seq, heads * head_dim, dtype=torch.float64)
    am = (torch.arange(seq)[None, :] < torch.tensor(lengths[:batch])[:, None]).long()
    explicit, _ = module(x, prep(am, x), output_attentions=True)
    fused, _ = module(x, prep(am, x))
    torch.testing.assert_close(explicit, fused, rtol=0, atol=1e-12)


@pytest.mark.parametrize("output_attentions", [True, False])
def test_outputs_at_real_tokens_do_not_change_when_padding_is_added(output_attentions):
    module = make_module(torch.float64)
    x = torch.randn(1, 4, 32, dtype=torch.float64)
    short, _ = module(x, prep(torch.ones(1, 4), x), output_attentions=output_attentions)
    padded_x = torch.cat([x, 100 * torch.randn(1, 3, 32, dtype=torch.float64)], dim=1)
    am = torch.tensor([[1, 1, 1, 1, 0, 0, 0]])
    padded, weights = module(padded_x, prep(am, padded_x), output_attentions=output_attentions)
    torch.testing.assert_close(padded[:, :4], short, rtol=0, atol=1e-12)
    if output_attentions:
        assert (weights[..., 4:] == 0).all()  # padded keys get no attention at all
    # and without a mask the padding does change them: the mask is what protects them
    unmasked, _ = module(padded_x, output_attentions=output_attentions)
    assert (unmasked[:, :4] - short).abs().max() > 1e-3


@pytest.mark.parametrize("output_attentions", [True, False])
def test_fully_masked_row_attends_uniformly_and_gives_the_mean_of_the_values(output_attentions):
    module = make_module()
    x = torch.randn(2, 5, 32)
    am = torch.tensor([[1, 1, 1, 0, 0], [0, 0, 0, 0, 0]])
    out, weights = module(x, prep(am, x), output_attentions=output_attentions)
    v = split_heads(module.value(x), module.num_heads)  # (batch, heads, seq, head_dim)
    mean_of_values = merge_heads(v.mean(dim=2, keepdim=True).expand_as(v))
    torch.testing.assert_close(out[1], module.output(mean_of_values)[1], rtol=0, atol=1e-6)
    if output_attentions:
        torch.testing.assert_close(weights[1], torch.full((4, 5, 5), 0.2), rtol=0, atol=1e-7)


def test_fully_masked_row_is_defined_for_boolean_and_minus_infinity_masks():
    q, k, v = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)
    none_kept = torch.zeros(1, 1, 1, 3, dtype=torch.bool)
    out_bool, w_bool = scaled_dot_product_attention(q, k, v, none_kept)
    minus_inf = torch.full((1, 1, 1, 3), float("-inf"))
    out_inf, w_inf = scaled_dot_product_attention(q, k, v, minus_inf)
    for out, w in ((out_bool, w_bool), (out_inf, w_inf)):
        assert not torch.isnan(out).any()
        torch.testing.assert_close(w, torch.full((1, 2, 3, 3), 1 / 3))
        torch.testing.assert_close(out, v.mean(dim=2, keepdim=True).expand_as(v))


# --- references no one here wrote --------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", ["no mask", "padding"])
def test_matches_torch_nn_multihead_attention_with_the_same_weights(dtype, case):
    module = make_module(dtype)
    ref = torch.nn.MultiheadAttention(32, 4, bias=True, batch_first=True).to(dtype).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(
            torch.cat([module.query.weight, module.key.weight, module.value.weight])
        )
        ref.in_proj_bias.copy_(torch.cat([module.query.bias, module.key.bias, module.value.bias]))
        ref.out_proj.weight.copy_(module.output.weight)
        ref.out_proj.bias.copy_(module.output.bias)
    x = torch.randn(3, 7, 32, dtype=dtype)
    am = MASK_CASES[case]
    key_padding_mask = None if am is None else am == 0  # torch: True = ignore
    expected, expected_w = ref(
        x, x, x, key_padding_mask=key_padding_mask, need_weights=True, average_attn_weights=False
    )
    out, weights = module(x, prep(am, x), output_attentions=True)
    fused, _ = module(x, prep(am, x))
    torch.testing.assert_close(out, expected, rtol=0, atol=TOL[dtype])
    torch.testing.assert_close(fused, expected, rtol=0, atol=TOL[dtype])
    torch.testing.assert_close(weights, expected_w, rtol=0, atol=TOL[dtype])


@pytest.mark.parametrize("case", list(MASK_CASES))
def test_same_semantics_as_hugging_face_bert_self_attention(case):
    transformers = pytest.importorskip("transformers")
    from transformers.masking_utils import create_bidirectional_mask
    from transformers.models.bert.modeling_bert import BertSelfAttention

    config = transformers.BertConfig(
        hidden_size=32,
        num_attention_heads=4,
        attention_probs_dropout_prob=0.0,
        attn_implementation="eager",
    )
    torch.manual_seed(0)
    hf = BertSelfAttention(config).eval()
    module = make_module()
    for name in ("query", "key", "value"):
        getattr(module, name).load_state_dict(getattr(hf, name).state_dict())
    x = torch.randn(3, 7, 32)
    am = MASK_CASES[case]
    hf_mask = create_bidirectional_mask(config=config, inputs_embeds=x, attention_mask=am)
    with torch.no_grad():
        context, hf_weights = hf(x, hf_mask)
        out, weights = module(x, prep(am, x), output_attentions=True)
        fused, _ = module(x, prep(am, x))
        expected = module.output(context)  # HF's BertSelfOutput.dense is our output projection
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-6)
    torch.testing.assert_close(fused, expected, rtol=0, atol=1e-6)
    torch.testing.assert_close(weights, hf_weights, rtol=0, atol=1e-7)


@pytest.mark.parametrize("use_mask", [False, True])
def test_gradcheck_explicit_path_float64(use_mask):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 2, 4, 3, dtype=torch.float64, requires_grad=True) for _ in range(3))
    mask = padding_mask(torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]])) if use_mask else None
    assert torch.autograd.gradcheck(
        lambda q, k, v: scaled_dot_product_attention(q, k, v, mask), (q, k, v)
    )


def test_gradcheck_module_explicit_path_float64():
    module = make_module(torch.float64, hidden=8, heads=2)
    x = torch.randn(2, 3, 8, dtype=torch.float64, requires_grad=True)
    am = torch.tensor([[1, 1, 0], [1, 1, 1]])
    assert torch.autograd.gradcheck(
        lambda x: module(x, prep(am, x), output_attentions=True)[0], (x,)
    )


# --- masks -------------------------------------------------------------------------------------


def test_padding_mask_boolean_and_additive_forms():
    am = torch.tensor([[1, 1, 0], [1, 0, 0]])
    keep = padding_mask(am)
    assert keep.dtype == torch.bool and keep.shape == (2, 1, 1, 3)
    assert keep[:, 0, 0].tolist() == [[True, True, False], [True, False, False]]
    for dtype in (torch.float16, torch.float32, torch.float64):
        additive = padding_mask(am, dtype=dtype)
        assert additive.dtype == dtype and additive.shape == (2, 1, 1, 3)
        lowest = torch.finfo(dtype).min
        assert additive[:, 0, 0].tolist() == [[0.0, 0.0, lowest], [0.0, lowest, lowest]]
        assert torch.isfinite(additive).all()
    assert padding_mask(am.bool()).equal(keep)
    assert padding_mask(am.float()).equal(keep)


@pytest.mark.parametrize(
    "bad, message",
    [
        (torch.tensor([1, 1, 0]), "(batch, seq)"),
        (torch.tensor([[1, 2, 0]]), "only 1 (real token) and 0"),
        (torch.tensor([[0.0, -1e9]]), "only 1 (real token) and 0"),
    ],
)
def test_padding_mask_rejects_bad_token_masks(bad, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        padding_mask(bad)


def test_padding_mask_rejects_integer_dtype():
    with pytest.raises(ValueError, match="floating dtype"):
        padding_mask(torch.ones(1, 3), dtype=torch.int64)


def test_causal_mask_lets_each_token_see_only_itself_and_the_past():
    mask = causal_mask(4)
    assert mask.dtype == torch.bool
    assert mask.tolist() == [
        [True, False, False, False],
        [True, True, False, False],
        [True, True, True, False],
        [True, True, True, True],
    ]
    q, k, v = torch.randn(1, 4, 8), torch.randn(1, 4, 8), torch.randn(1, 4, 8)
    out, w = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out[0, 0], v[0, 0])  # the first token can only see itself
    k2, v2 = k.clone(), v.clone()
    k2[:, 3], v2[:, 3] = 5.0, 5.0  # change the future: the past must not notice
    out2, _ = scaled_dot_product_attention(q, k2, v2, mask)
    torch.testing.assert_close(out2[:, :3], out[:, :3], rtol=0, atol=0)
    assert torch.triu(w[0], diagonal=1).eq(0).all()


@pytest.mark.parametrize("n", [0, -1, 2.0, True])
def test_causal_mask_rejects_non_positive_or_non_int(n):
    with pytest.raises(ValueError, match="positive int"):
        causal_mask(n)


# --- heads -------------------------------------------------------------------------------------


def test_split_heads_puts_each_slice_of_hidden_in_its_own_head_and_merge_inverts_it():
    x = torch.arange(2 * 3 * 12, dtype=torch.float32).reshape(2, 3, 12)
    heads = split_heads(x, 4)
    assert heads.shape == (2, 4, 3, 3)
    for h in range(4):
        assert heads[:, h].equal(x[..., 3 * h : 3 * h + 3])
    assert merge_heads(heads).equal(x)


def test_split_and_merge_heads_reject_bad_shapes():
    with pytest.raises(ValueError, match="divid"):
        split_heads(torch.randn(1, 2, 10), 4)
    with pytest.raises(ValueError, match=re.escape("(batch, seq, hidden)")):
        split_heads(torch.randn(2, 10), 2)
    with pytest.raises(ValueError, match=re.escape("(batch, heads, seq, head_dim)")):
        merge_heads(torch.randn(2, 3, 10))


# --- the module's parameters and dropout -------------------------------------------------------


def test_module_parameters_are_four_biased_linear_layers():
    module = MultiHeadSelfAttention(48, 6, dropout=0.1)
    assert (module.num_heads, module.head_dim, module.dropout) == (6, 8, 0.1)
    names = {name: tuple(p.shape) for name, p in module.named_parameters()}
    expected = {}
    for layer in ("query", "key", "value", "output"):
        assert isinstance(getattr(module, layer), torch.nn.Linear)
        expected[f"{layer}.weight"] = (48, 48)
        expected[f"{layer}.bias"] = (48,)
    assert names == expected
    assert sum(p.numel() for p in module.parameters()) == 4 * (48 * 48 + 48)


def test_dropout_drops_attention_weights_in_training_only():
    torch.manual_seed(0)
    module = MultiHeadSelfAttention(16, 2, dropout=0.5)
    x = torch.randn(4, 32, 16)
    module.eval()
    out_eval, w_eval = module(x, output_attentions=True)
    fused_eval, _ = module(x)
    torch.testing.assert_close(out_eval, fused_eval, rtol=0, atol=1e-6)
    module.train()
    _, w_train = module(x, output_attentions=True)
    dropped = (w_train == 0).float().mean().item()
    n = w_train.numel()  # 8192 weights; binomial(0.5) standard deviation is 0.0055
    assert abs(dropped - 0.5) < 5 * math.sqrt(0.25 / n)
    kept = w_train != 0
    torch.testing.assert_close(w_train[kept], 2 * w_eval[kept])  # survivors scaled by 1/(1-p)
    fused_train, _ = module(x)
    assert (fused_train - fused_eval).abs().max() > 1e-2  # the fused path drops too


# --- errors ------------------------------------------------------------------------------------


def test_hidden_not_divisible_by_heads_raises_at_construction():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadSelfAttention(10, 3)
    with pytest.raises(ValueError, match="dropout"):
        MultiHeadSelfAttention(8, 2, dropout=1.0)
    with pytest.raises(ValueError, match="positive int"):
        MultiHeadSelfAttention(0, 1)
