"""Tests for minibert.teaching.figures: the lessons' figures, checked by what they draw."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.figure import Figure

from minibert import viz
from minibert.teaching import figures

SPECIAL = {"[CLS]": 101, "[SEP]": 102}


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_input_representation_draws_the_papers_rows_for_every_token():
    tokens = ["[CLS]", "the", "cat", "[SEP]", "it", "##s", "[SEP]"]
    segments = [0, 0, 0, 0, 1, 1, 1]
    fig = figures.input_representation(tokens, segments)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert all(t in texts for t in tokens)  # the input row
    assert texts.count("E$_A$") == 4 and texts.count("E$_B$") == 3  # segments
    assert "E$_{6}$" in texts and "$e_{6}$" in texts  # positions and the sums
    assert texts.count("E") == len(tokens) and texts.count("##s") == 2  # E with its token below
    assert texts.count("+") == 2 * len(tokens) and texts.count("=") == len(tokens)
    fig.canvas.draw()  # mathtext renders
    with pytest.raises(ValueError, match="equally long"):
        figures.input_representation(tokens, segments[:-1])


def test_the_fine_tuning_diagram_keeps_the_pooler_and_says_what_is_copied():
    fig = figures.fine_tuning_diagram()
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


def test_plot_attention_summary_has_one_panel_per_metric():
    g = torch.Generator().manual_seed(0)
    atts = (torch.randn(1, 4, 8, 8, generator=g).softmax(-1),)  # one layer, four heads
    ids = torch.tensor([[101, 7, 8, 9, 102, 10, 102, 0]])
    fig = figures.plot_attention_summary(viz.attention_summary(atts, ids, SPECIAL))
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


def test_the_pipeline_diagram_names_each_lesson_and_both_stages():
    fig = figures.bert_pipeline_diagram()
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    for lesson in range(1, 8):
        assert f"(lesson {lesson})" in texts
    assert "1. pretraining" in texts and "2. fine-tuning" in texts


def test_the_encoder_layer_diagram_sets_post_ln_beside_pre_ln():
    fig = figures.encoder_layer_diagram()
    post, pre = fig.axes
    assert post.get_title() == "BERT's layer (post-LN)" and pre.get_title().startswith("pre-LN")
    post_texts, pre_texts = ([t.get_text() for t in ax.texts] for ax in fig.axes)
    assert post_texts.count("add & LayerNorm") == 2 and "LayerNorm" not in post_texts
    assert pre_texts.count("LayerNorm") == 2 and pre_texts.count("add") == 2


def test_masking_view_colours_each_token_by_what_masking_did():
    original = ["the", "cat", "sat", "on", "the", "mat"]
    masked = ["the", "[MASK]", "sat", "dog", "the", "mat"]
    chosen = [False, True, False, True, True, False]
    fig = figures.masking_view(original, masked, chosen, width=4)
    boxes = {t.get_text(): t.get_bbox_patch().get_facecolor() for t in fig.axes[0].texts}
    colour = {
        kind: matplotlib.colors.to_rgba(c) for kind, (c, _) in figures._MASKING_COLOURS.items()
    }
    assert boxes["[MASK]\n(cat)"] == colour["mask"]
    assert boxes["dog\n(on)"] == colour["random"]
    assert boxes["sat"] == colour["unchanged"]
    positions = [t.get_position() for t in fig.axes[0].texts]
    assert positions[4] == (0.5, -1)  # the fifth token starts the second row of four
    with pytest.raises(ValueError, match="one entry per token"):
        figures.masking_view(original, masked[:-1], chosen)
    with pytest.raises(ValueError, match="width must be at least 1"):
        figures.masking_view(original, masked, chosen, width=0)


def test_labelled_examples_curve_draws_each_model_and_baseline():
    curve = {
        "pretrained": {"64": {"mean": 0.7, "std": 0.02}, "1024": {"mean": 0.8, "std": 0.01}},
        "random": {"64": {"mean": 0.55, "std": 0.03}, "1024": {"mean": 0.6, "std": 0.02}},
    }
    fig = figures.labelled_examples_curve(curve, {"majority": 0.58})
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["pretrained", "random"]
    (line, _, _) = ax.containers[0].lines
    assert list(line.get_xdata()) == [64, 1024] and list(line.get_ydata()) == [0.7, 0.8]
    assert any(t.get_text() == "majority" for t in ax.texts)
