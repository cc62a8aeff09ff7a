"""Tests for minibert.viz: figures are checked by structure (axes, labels, lines), not by pixels."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from conftest import make_tiny_config
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from minibert import viz
from minibert.attention import MultiHeadSelfAttention


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


# --- Lesson 2: attention maps ------------------------------------------------------------------

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


# --- Lesson 3: attention analysis and the explorer ---------------------------------------------

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


def test_plot_attention_summary_has_one_panel_per_metric():
    atts, ids, mask = planted_attentions()
    fig = viz.plot_attention_summary(viz.attention_summary(atts, ids, SPECIAL, mask))
    assert isinstance(fig, Figure)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == [
        "entropy (nats)",
        "to [CLS]",
        "to [SEP]",
        "to self",
        "to previous",
        "to next",
        "distance (tokens)",
    ]
    panel = fig.axes[0]
    assert panel.images[0].get_array().shape == (1, 4)


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


# the explorer


@pytest.fixture(scope="module")
def tiny_model_and_tokenizer():
    import transformers

    from minibert.assets import path
    from minibert.model import BertModel

    torch.manual_seed(0)
    config = make_tiny_config(
        vocab_size=30522,
        hidden_size=16,
        num_heads=4,
        intermediate_size=32,
        max_position_embeddings=512,
    )
    tokenizer = transformers.BertTokenizerFast.from_pretrained(path("minilm"))
    return BertModel(config).train(), tokenizer


def shown_png(explorer):
    (output,) = explorer.output.outputs
    return output["data"]["image/png"]


def test_explorer_redraws_when_its_widgets_change(tiny_model_and_tokenizer):
    model, tokenizer = tiny_model_and_tokenizer
    e = viz.explore(model, tokenizer, "the cat sat on the mat", "it purred")
    assert model.training  # the explorer evaluates without changing the model's mode
    assert e.tokens[0] == "[CLS]" and e.tokens.count("[SEP]") == 2
    assert e.sentence_b_start == e.tokens.index("[SEP]") + 1
    first, png = e.figure, shown_png(e)
    assert first.axes[0].get_title() == "layer 0, head 0"

    e.head.value = 3
    assert e.figure is not first and e.figure.axes[0].get_title() == "layer 0, head 3"
    assert not np.array_equal(
        first.axes[0].images[0].get_array(), e.figure.axes[0].images[0].get_array()
    )
    assert shown_png(e) != png

    e.layer.value = 1
    assert e.figure.axes[0].get_title() == "layer 1, head 3"

    e.head.value = "all"  # one image for all heads of the layer, each panel named
    grid = e.figure.axes[0]
    assert [t.get_text() for t in grid.texts] == [f"head {h}" for h in range(4)]
    image = grid.images[0].get_array()
    n = len(e.tokens)
    np.testing.assert_allclose(image[:n, :n], e.attentions[1][0, 0].numpy(), rtol=0, atol=1e-7)

    e.view.value = "head view"
    assert e.figure.axes[0].get_title().startswith("layer 1")
    assert len(e.figure.axes[0].collections) == 4  # one LineCollection per head

    e.head.value = 2
    assert len(e.figure.axes[0].collections) == 1

    e.view.value = "model view"  # one image: layers are rows, heads columns
    grid = e.figure.axes[0]
    assert len(e.figure.axes) == 2  # the grid and its colour bar
    assert [t.get_text() for t in grid.get_yticklabels()] == ["layer 0", "layer 1"]
    assert [t.get_text() for t in grid.get_xticklabels()] == [f"head {h}" for h in range(4)]

    e.view.value = "heatmap"
    e.text.value = "banks and rivers"
    labels = [t.get_text() for t in e.figure.axes[0].get_xticklabels()]
    assert "rivers" in labels and "cat" not in labels
    e.text_pair.value = ""
    assert e.sentence_b_start is None and e.tokens[-1] == "[SEP]"
    assert repr(e).startswith("AttentionExplorer(2 layers x 4 heads, ")
    assert "appear when this cell runs in a live notebook" in repr(e)  # not "above"
    bundle = e._repr_mimebundle_()
    assert bundle["text/plain"] == repr(e)
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["image/png"] == shown_png(e)  # a static page shows the figure on show


def test_explorer_takes_minibert_and_hugging_face_tokenizers(tiny_model_and_tokenizer):
    from minibert.assets import path
    from minibert.tokenization import BertTokenizer

    model, hf_tokenizer = tiny_model_and_tokenizer
    ours = BertTokenizer.from_pretrained(path("minilm"))
    a = viz.explore(model, ours, "Attention is all you need.", "Or is it?")
    b = viz.explore(model, hf_tokenizer, "Attention is all you need.", "Or is it?")
    assert a.tokens == b.tokens
    for x, y in zip(a.attentions, b.attentions, strict=True):
        torch.testing.assert_close(x, y)


def test_explorer_refuses_empty_text(tiny_model_and_tokenizer):
    model, tokenizer = tiny_model_and_tokenizer
    with pytest.raises(ValueError, match="text must be a non-empty string"):
        viz.explore(model, tokenizer, "  ")


def test_attention_grid_places_every_panel_on_one_scale():
    g = np.random.default_rng(0)
    panels = [[g.random((5, 5)) for _ in range(3)] for _ in range(2)]
    fig = viz.attention_grid(panels, ["a", "b"], ["x", "y", "z"], panel_names=[["1", "2", "3"]] * 2)
    (ax, bar) = fig.axes
    image = np.ma.filled(ax.images[0].get_array(), np.nan)
    gaps = np.isnan(image).all(axis=0)  # the white columns between panels
    step = 5 + int(gaps[5:].argmin())  # a panel, then its gap
    for r in range(2):
        for c in range(3):
            block = image[r * step : r * step + 5, c * step : c * step + 5]
            np.testing.assert_array_equal(block, panels[r][c])
    assert step > 5 and np.isnan(image[5, :]).all() and np.isnan(image[:, 5]).all()
    assert ax.images[0].get_clim() == (0.0, max(p.max() for row in panels for p in row))
    assert len(ax.texts) == 6


def test_input_representation_draws_the_papers_rows_for_every_token():
    tokens = ["[CLS]", "the", "cat", "[SEP]", "it", "##s", "[SEP]"]
    segments = [0, 0, 0, 0, 1, 1, 1]
    fig = viz.input_representation(tokens, segments)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert all(t in texts for t in tokens)  # the input row
    assert texts.count("E$_A$") == 4 and texts.count("E$_B$") == 3  # segments
    assert "E$_{6}$" in texts and "$e_{6}$" in texts  # positions and the sums
    assert texts.count("E") == len(tokens) and texts.count("##s") == 2  # E with its token below
    assert texts.count("+") == 2 * len(tokens) and texts.count("=") == len(tokens)
    fig.canvas.draw()  # mathtext renders
    with pytest.raises(ValueError, match="equally long"):
        viz.input_representation(tokens, segments[:-1])


def test_the_fine_tuning_diagram_keeps_the_pooler_and_says_what_is_copied():
    fig = viz.fine_tuning_diagram()
    pretraining, fine_tuning = ([t.get_text() for t in ax.texts] for ax in fig.axes)
    for texts in (pretraining, fine_tuning):  # the pooler NSP trained is kept for fine-tuning
        assert sum("pooler" in t for t in texts) == 1
        assert sum("embeddings" in t and "WordPiece" in t for t in texts) == 1
    assert any("copied from" in t for t in fine_tuning)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        "weights learned in pretraining",
        "new weights, random at the start",
    ]
    plt.close(fig)


def test_explorer_shows_a_long_text_a_window_at_a_time(tiny_model_and_tokenizer):
    model, tokenizer = tiny_model_and_tokenizer
    long = " ".join(f"word{i % 7} and" for i in range(60))
    e = viz.explore(model, tokenizer, long)
    n, w = len(e.tokens), e.WINDOW
    assert n > w and e.start.max == n - w and e.start.layout.display is None
    assert f"tokens 0-{w - 1} of {n} on show" in e.note.value

    def labels():
        return [t.get_text() for t in e.figure.axes[0].get_xticklabels()]

    assert labels() == e.tokens[:w]  # readable: one label per token on show, no more
    e.start.value = 10
    assert labels() == e.tokens[10 : 10 + w] and f"tokens 10-{w + 9} of {n}" in e.note.value
    np.testing.assert_allclose(
        e.figure.axes[0].images[0].get_array(), e.attentions[0][0, 0, 10 : 10 + w, 10 : 10 + w]
    )
    for view, head in (("head view", "all"), ("model view", 0), ("heatmap", "all")):
        e.view.value, e.head.value = view, head
        assert e.figure is not None  # every view draws the window
    e.view.value, e.head.value = "heatmap", 0
    e.text.value = "a short text"  # the window shrinks to the text and the slider hides
    assert e.start.value == 0 and e.start.layout.display == "none" and e.note.value == ""
    assert labels() == e.tokens
    e.text.value = "   "  # ignored, and said
    assert "the text is empty" in e.note.value and labels() == e.tokens
