"""Tests for minibert.teaching.viz (mb.viz): figures are checked by structure (axes, labels, lines), not by pixels."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

import minibert
from minibert.attention import MultiHeadSelfAttention
from minibert.teaching import viz


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_the_lessons_reach_the_teaching_kits_viz_as_mb_viz():
    """viz serves the lessons, so it lives in minibert.teaching; `from minibert import viz` and
    `mb.viz`, which the notebooks and the README use, name the same module."""
    namespace: dict = {}
    exec("from minibert import viz", namespace)
    assert namespace["viz"] is viz is minibert.viz
    assert viz.__name__ == "minibert.teaching.viz" and "viz" in minibert.__all__


# --- attention maps ----------------------------------------------------------------------------

TOKENS = ["[CLS]", "the", "cat", "[SEP]", "it", "[SEP]", "[PAD]", "[PAD]"]
MASK = torch.tensor([[1, 1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]])
KEPT = [0, 1, 2, 3, 4, 5]


def random_attentions(layers: int = 2, batch: int = 2, heads: int = 3, seq: int = 8, seed=0):
    """A tuple per layer of (batch, heads, seq, seq) rows of probabilities, like a model returns."""
    g = torch.Generator().manual_seed(seed)
    return tuple(
        torch.randn(batch, heads, seq, seq, generator=g).softmax(-1) for _ in range(layers)
    )


def image_of(ax) -> np.ndarray:
    return np.asarray(ax.get_images()[0].get_array())


def labels(ticklabels) -> list[str]:
    return [t.get_text() for t in ticklabels]


def line_segments(ax) -> list[LineCollection]:
    return [c for c in ax.collections if isinstance(c, LineCollection)]


def test_as_layers_accepts_tuple_list_one_tensor_and_numpy():
    atts = random_attentions()
    for given in (atts, list(atts), atts[0], atts[0].numpy()):
        layers = viz._as_layers(given)
        assert isinstance(layers, tuple)
        assert all(t.shape == (2, 3, 8, 8) and t.dtype == torch.float32 for t in layers)
    assert len(viz._as_layers(atts)) == 2 and len(viz._as_layers(atts[0])) == 1
    torch.testing.assert_close(viz._as_layers(atts)[1], atts[1])


def test_as_layers_detaches_a_models_weights():
    module = MultiHeadSelfAttention(8, 2)
    _, weights = module(torch.randn(1, 4, 8), output_attentions=True)
    assert weights.requires_grad
    (layer,) = viz._as_layers((weights,))
    assert not layer.requires_grad


@pytest.mark.parametrize(
    "bad, message",
    [
        (torch.rand(3, 8, 8), "4 dims"),
        ((torch.rand(1, 2, 8, 8), torch.rand(1, 2, 8)), "layer 1 must have 4 dims"),
        ((torch.rand(1, 2, 8, 8), torch.rand(1, 3, 8, 8)), "same shape"),
        ((), "empty"),
        (None, "output_attentions=True"),
    ],
)
def test_as_layers_rejects_bad_input_saying_what_was_expected(bad, message):
    with pytest.raises(ValueError, match=message):
        viz._as_layers(bad)


def test_attention_heatmap_shows_one_head_with_tokens_and_without_padding():
    atts = random_attentions()
    fig = viz.attention_heatmap(atts, TOKENS, layer=1, head=2)
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 2  # the heatmap and its colour bar
    ax = fig.axes[0]
    kept_tokens = [TOKENS[i] for i in KEPT]
    assert labels(ax.get_xticklabels()) == kept_tokens
    assert labels(ax.get_yticklabels()) == kept_tokens
    np.testing.assert_allclose(image_of(ax), atts[1][0, 2][KEPT][:, KEPT].numpy(), rtol=0, atol=0)


def test_attention_heatmap_takes_padding_from_the_attention_mask():
    atts = random_attentions()
    tokens = [f"t{i}" for i in range(8)]
    fig = viz.attention_heatmap(atts, tokens, batch_index=0, attention_mask=MASK)
    assert labels(fig.axes[0].get_xticklabels()) == tokens[:6]
    fig = viz.attention_heatmap(atts, tokens, batch_index=1, attention_mask=MASK)
    assert labels(fig.axes[0].get_xticklabels()) == tokens
    np.testing.assert_allclose(image_of(fig.axes[0]), atts[0][1, 0].numpy(), rtol=0, atol=0)


def test_attention_heatmap_draws_into_a_given_axes():
    fig, (left, right) = plt.subplots(1, 2)
    returned = viz.attention_heatmap(random_attentions()[0], TOKENS, head=1, ax=right)
    assert returned is fig
    assert right.get_images() and not left.get_images()


def test_attention_heads_draws_every_head_of_the_layer():
    atts = random_attentions(heads=6)
    fig = viz.attention_heads(atts, TOKENS, layer=1, ncols=4)
    heads = [ax for ax in fig.axes if ax.get_images()]
    assert len(heads) == 6  # the two unused grid cells are removed
    assert len(fig.axes) == 7  # plus one shared colour bar
    kept_tokens = [TOKENS[i] for i in KEPT]
    assert labels(heads[0].get_yticklabels()) == kept_tokens
    assert labels(heads[5].get_xticklabels()) == kept_tokens
    for h, ax in enumerate(heads):
        assert ax.get_title() == f"head {h}"
        np.testing.assert_allclose(image_of(ax), atts[1][0, h][KEPT][:, KEPT].numpy(), atol=0)


def test_model_view_has_one_thumbnail_per_layer_and_head():
    atts = random_attentions(layers=3, heads=4)
    fig = viz.model_view(atts, TOKENS, batch_index=1)
    assert len(fig.axes) == 3 * 4 + 1  # and the colour bar
    for layer in range(3):
        for head in range(4):
            ax = fig.axes[layer * 4 + head]
            expected = atts[layer][1, head][KEPT][:, KEPT].numpy()
            np.testing.assert_allclose(image_of(ax), expected, rtol=0, atol=0)
    assert fig.axes[0].get_ylabel() == "layer 0" and fig.axes[3].get_title() == "head 3"


def test_model_view_shares_one_colour_scale_unless_asked_per_panel():
    atts = random_attentions(layers=2, heads=2)
    shared = viz.model_view(atts, TOKENS)
    assert len(shared.axes) == 5  # four thumbnails and the colour bar
    largest = max(float(_select_max(atts, layer, head)) for layer in range(2) for head in range(2))
    assert all(ax.images[0].get_clim() == (0.0, pytest.approx(largest)) for ax in shared.axes[:4])
    fixed = viz.model_view(atts, TOKENS, vmax=1.0)
    assert all(ax.images[0].get_clim() == (0.0, 1.0) for ax in fixed.axes[:4])
    own = viz.model_view(atts, TOKENS, scale="panel")
    assert len(own.axes) == 4  # no colour bar
    assert len({ax.images[0].get_clim()[1] for ax in own.axes}) == 4  # each its own maximum
    assert "own maximum" in own._suptitle.get_text()
    with pytest.raises(ValueError, match="scale must be"):
        viz.model_view(atts, TOKENS, scale="each")
    with pytest.raises(ValueError, match="vmax"):
        viz.model_view(atts, TOKENS, vmax=1.0, scale="panel")


def _select_max(atts, layer, head):
    return atts[layer][0, head][KEPT][:, KEPT].max()


def test_head_view_draws_one_line_per_pair_with_opacity_equal_to_the_weight():
    atts = random_attentions(heads=4)
    fig = viz.head_view(atts, TOKENS, layer=1, heads=[0, 3])
    ax = fig.axes[0]
    collections = line_segments(ax)
    assert len(collections) == 2  # one colour per head
    n = len(KEPT)
    assert [len(c.get_segments()) for c in collections] == [n * n, n * n]
    for c, h in zip(collections, [0, 3], strict=True):
        alphas = c.get_colors()[:, 3]
        np.testing.assert_allclose(alphas, atts[1][0, h][KEPT][:, KEPT].numpy().ravel(), atol=1e-7)
    colours = [tuple(c.get_colors()[0, :3]) for c in collections]
    assert colours[0] != colours[1]
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("cat") == 2 and "[PAD]" not in texts  # both columns, padding left out


def test_head_view_min_weight_drops_faint_lines():
    atts = random_attentions()
    fig = viz.head_view(atts, TOKENS, heads=1, min_weight=0.2)
    (collection,) = line_segments(fig.axes[0])
    expected = int((atts[0][0, 1][KEPT][:, KEPT] > 0.2).sum())
    assert 0 < expected < len(KEPT) ** 2
    assert len(collection.get_segments()) == expected


def test_head_view_separates_sentence_a_and_b():
    atts = random_attentions()
    fig = viz.head_view(atts, TOKENS, sentence_b_start=4)
    ax = fig.axes[0]
    left = [t for t in ax.texts if t.get_position()[0] < 0 and t.get_text() != "query"]
    assert [t.get_text() for t in left] == [TOKENS[i] for i in KEPT]
    y = [t.get_position()[1] for t in left]  # top to bottom
    step = y[0] - y[1]
    assert y[3] - y[4] > 1.5 * step  # a gap between "[SEP]" ending A and "it" starting B
    assert y[4] - y[5] == pytest.approx(step)
    dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert len(dashed) == 1 and y[4] < dashed[0].get_ydata()[0] < y[3]
    texts = [t.get_text() for t in ax.texts]
    assert "segment A" in texts and "segment B" in texts


def test_figures_save_to_png_and_svg():
    atts = random_attentions()
    makers = [
        lambda: viz.attention_heatmap(atts, TOKENS),
        lambda: viz.attention_heads(atts, TOKENS),
        lambda: viz.model_view(atts, TOKENS),
        lambda: viz.head_view(atts, TOKENS, sentence_b_start=4),
    ]
    for make in makers:
        fig = make()
        png, svg = io.BytesIO(), io.BytesIO()
        fig.savefig(png, format="png")
        fig.savefig(svg, format="svg")
        assert png.getvalue().startswith(b"\x89PNG\r\n\x1a\n") and len(png.getvalue()) > 1000
        assert b"<svg" in svg.getvalue()


def test_plots_accept_hugging_face_attentions():
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        attn_implementation="eager",
    )
    torch.manual_seed(0)
    model = transformers.BertModel(config).eval()
    ids = torch.tensor([[2, 5, 7, 3, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 0, 0]])
    out = model(input_ids=ids, attention_mask=mask, output_attentions=True)
    tokens = ["[CLS]", "a", "b", "[SEP]", "[PAD]", "[PAD]"]
    fig = viz.model_view(out.attentions, tokens, attention_mask=mask)
    assert len(fig.axes) == 4 + 1  # and the colour bar
    np.testing.assert_allclose(
        image_of(fig.axes[3]), out.attentions[1][0, 1, :4, :4].detach().numpy(), atol=0
    )


def test_to_bertviz_gives_one_example_per_layer_without_padding():
    atts = tuple(a.requires_grad_() for a in random_attentions())
    converted = viz.to_bertviz(atts, batch_index=0, attention_mask=MASK)
    assert len(converted) == 2
    for layer, t in enumerate(converted):
        assert t.shape == (1, 3, 6, 6) and t.dtype == torch.float32 and not t.requires_grad
        torch.testing.assert_close(t[0], atts[layer][0][:, KEPT][:, :, KEPT].detach())
    # bertviz squeezes the batch dim away and stacks the layers
    assert torch.stack([t.squeeze(0) for t in converted]).shape == (2, 3, 6, 6)
    full = viz.to_bertviz(atts[0], batch_index=1)
    assert len(full) == 1 and full[0].shape == (1, 3, 8, 8)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda a: viz.attention_heatmap(a[0][0], TOKENS), "4 dims"),
        (lambda a: viz.attention_heatmap(a, TOKENS[:5]), "expected 8 tokens"),
        (lambda a: viz.attention_heatmap(a, "the cat"), "list of strings"),
        (lambda a: viz.attention_heatmap(a, TOKENS, layer=2), "layer must be an int in 0..1"),
        (lambda a: viz.attention_heatmap(a, TOKENS, head=3), "head must be an int in 0..2"),
        (lambda a: viz.attention_heatmap(a, TOKENS, head=-1), "head must be an int in 0..2"),
        (lambda a: viz.attention_heatmap(a, TOKENS, batch_index=2), "batch_index"),
        (lambda a: viz.attention_heads(a, TOKENS, layer=5), "layer must be an int in 0..1"),
        (lambda a: viz.head_view(a, TOKENS, heads=[0, 7]), "head must be an int in 0..2"),
        (lambda a: viz.head_view(a, TOKENS, sentence_b_start=0), "sentence_b_start"),
        (lambda a: viz.model_view(a, ["[PAD]"] * 8), "padding"),
        (lambda a: viz.attention_heatmap(a, TOKENS, attention_mask=[1, 1]), "attention_mask"),
        (lambda a: viz.to_bertviz(a, batch_index=3), "batch_index must be an int in 0..1"),
    ],
)
def test_bad_input_raises_value_error_saying_what_was_expected(call, message):
    with pytest.raises(ValueError, match=message):
        call(random_attentions())


def test_tokens_with_dollar_signs_are_shown_verbatim_not_as_math():
    tokens = ["[CLS]", "costs", "$", "{", "$", "5", "!", "[SEP]"]  # "$ { $" is bad mathtext
    atts = random_attentions()
    fig = viz.attention_heatmap(atts, tokens)
    assert labels(fig.axes[0].get_xticklabels()) == tokens
    head = viz.head_view(atts, tokens)
    model = viz.model_view(atts, tokens)
    for figure in (fig, head, model):
        figure.savefig(io.BytesIO(), format="png")
    assert fig.axes[0].get_xticklabels()[2].get_parse_math() is False


# --- attention measures ------------------------------------------------------------------------

SPECIAL = {"[CLS]": 101, "[SEP]": 102}


def planted_attentions():
    """One layer, four heads of known behaviour, on [CLS] a b c [SEP] d [SEP] [PAD]."""
    ids = torch.tensor([[101, 7, 8, 9, 102, 10, 102, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1, 1, 0]])
    n = 7  # real tokens
    a = torch.zeros(1, 4, 8, 8)
    for q in range(n):
        a[0, 0, q, max(q - 1, 0)] = 1.0  # previous token (the first token: itself)
        a[0, 1, q, :n] = 1.0 / n  # uniform over the real tokens
        a[0, 2, q, 0] = 1.0  # all on [CLS]
        a[0, 3, q, [4, 6]] = 0.5  # all on the two [SEP]
    a[0, :, 7] = torch.rand(4, 8).softmax(-1)  # a padding query: must not count
    return (a,), ids, mask


def test_attention_summary_measures_planted_heads():
    atts, ids, mask = planted_attentions()
    s = viz.attention_summary(atts, ids, SPECIAL, mask)
    assert list(s) == [
        "entropy",
        "to [CLS]",
        "to [SEP]",
        "to self",
        "to previous",
        "to next",
        "distance",
    ]
    assert all(v.shape == (1, 4) for v in s.values())
    # queries 0..6 are real; "to previous" counts 1..6, "to next" 0..5 (6's next is padding)
    expected = {
        "to previous": [1.0, 1 / 7, 1 / 6, 0.5 / 6],
        "to self": [1 / 7, 1 / 7, 1 / 7, 1 / 7],
        "to next": [0.0, 1 / 7, 0.0, 1 / 6],
        "to [CLS]": [2 / 7, 1 / 7, 1.0, 0.0],
        "to [SEP]": [1 / 7, 2 / 7, 0.0, 1.0],
        "entropy": [0.0, np.log(7), 0.0, np.log(2)],
        "distance": [6 / 7, sum(abs(q - k) for q in range(7) for k in range(7)) / 49, 3.0, 17 / 7],
    }
    for name, values in expected.items():
        np.testing.assert_allclose(s[name][0], values, atol=1e-5, err_msg=name)
    assert viz.top_heads(s, "to [CLS]", k=2) == [
        (0, 2, pytest.approx(1.0)),
        (0, 0, pytest.approx(2 / 7)),
    ]
    assert viz.top_heads(s, "entropy", k=1, largest=False)[0][:2] in [(0, 0), (0, 2)]


def test_attention_summary_ignores_padding_queries():
    atts, ids, mask = planted_attentions()
    other = atts[0].clone()
    other[0, :, 7] = torch.eye(8)[3]  # a different padding row
    a = viz.attention_summary(atts, ids, SPECIAL, mask)
    b = viz.attention_summary((other,), ids, SPECIAL, mask)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
    c = viz.attention_summary((other,), ids, SPECIAL)  # without the mask the row counts
    assert not np.allclose(c["to self"], a["to self"])


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda a, i, m: viz.attention_summary(a, i[:, :5], SPECIAL), r"input_ids must have shape"),
        (lambda a, i, m: viz.attention_summary(a, i, [101, 102]), "special_ids must map names"),
        (lambda a, i, m: viz.attention_summary(a, i, SPECIAL, m[:, :3]), "attention_mask"),
        (lambda a, i, m: viz.attention_summary(a, i, SPECIAL, m * 0), "every position is padding"),
        (lambda a, i, m: viz.top_heads(viz.attention_summary(a, i, SPECIAL), "focus"), "metric"),
    ],
)
def test_attention_summary_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call(*planted_attentions())


@pytest.fixture(scope="module")
def minilm_summary():
    """MiniLM's attention over ten Wikipedia sentence pairs."""
    import transformers

    from minibert.assets import path
    from minibert.corpora import wikipedia_articles
    from minibert.model import BertModel

    folder = path("minilm")
    tokenizer = transformers.BertTokenizerFast.from_pretrained(folder)
    model = BertModel.from_pretrained(folder).eval()
    pairs = [a.sentences[:2] for a in wikipedia_articles("all")[:10]]
    enc = tokenizer(
        [p[0] for p in pairs],
        [p[1] for p in pairs],
        padding=True,
        truncation=True,
        max_length=96,
        return_tensors="pt",
    )
    with torch.no_grad():
        out = model(
            enc["input_ids"], enc["token_type_ids"], enc["attention_mask"], output_attentions=True
        )
    return viz.attention_summary(out.attentions, enc["input_ids"], SPECIAL, enc["attention_mask"])


def test_minilm_has_the_kinds_of_heads_clark_et_al_describe(minilm_summary):
    s = minilm_summary
    assert s["to previous"].max() > 0.9  # a previous-token head
    assert s["to next"].max() > 0.5  # a next-token head
    assert s["to [CLS]"].max() > 0.5  # a head parked on a special token (MiniLM: [CLS])
    assert s["entropy"].max() > 3.5  # broad heads, near-uniform over ~50 tokens
    layer, head, _ = viz.top_heads(s, "to previous", 1)[0]
    assert s["distance"][layer, head] < 1.5
