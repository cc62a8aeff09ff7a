"""Tests for minibert.teaching.explorer: the widgets redraw the figure they promise."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from conftest import make_tiny_config

from minibert.teaching.explorer import attention_grid, explore


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


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
    e = explore(model, tokenizer, "the cat sat on the mat", "it purred")
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
    a = explore(model, ours, "Attention is all you need.", "Or is it?")
    b = explore(model, hf_tokenizer, "Attention is all you need.", "Or is it?")
    assert a.tokens == b.tokens
    for x, y in zip(a.attentions, b.attentions, strict=True):
        torch.testing.assert_close(x, y)


def test_explorer_refuses_empty_text(tiny_model_and_tokenizer):
    model, tokenizer = tiny_model_and_tokenizer
    with pytest.raises(ValueError, match="text must be a non-empty string"):
        explore(model, tokenizer, "  ")


def test_explorer_shows_a_long_text_a_window_at_a_time(tiny_model_and_tokenizer):
    model, tokenizer = tiny_model_and_tokenizer
    long = " ".join(f"word{i % 7} and" for i in range(60))
    e = explore(model, tokenizer, long)
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


def test_attention_grid_places_every_panel_on_one_scale():
    g = np.random.default_rng(0)
    panels = [[g.random((5, 5)) for _ in range(3)] for _ in range(2)]
    fig = attention_grid(panels, ["a", "b"], ["x", "y", "z"], panel_names=[["1", "2", "3"]] * 2)
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
