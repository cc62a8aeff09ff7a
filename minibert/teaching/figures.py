"""The lessons' figures: the course's diagrams and the plots its notebooks draw.

Diagrams: the whole pipeline (lesson 0), BERT's input representation (1), one encoder layer
beside its pre-LN variant (3), pretraining against fine-tuning (6). Plots: what masking did to
each token (4), ``viz.attention_summary`` as one heatmap per measure (3), test accuracy
against the number of labelled examples (8).

Every function returns a matplotlib Figure; matplotlib is imported inside the functions, so
importing this module stays light. The attention plots and training curves live
beside them in ``minibert.teaching.viz``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


# --- drawing helpers -----------------------------------------------------------------------------


def _box(
    ax: Axes, x: float, y: float, w: float, h: float, text: str, colour: str, **kw: Any
) -> None:
    """A rounded box with centred text, in axes coordinates."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(
        FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.01", fc=colour, ec="black", lw=0.8)
    )
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=kw.get("size", 9))


def _arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float], **kw: Any) -> None:
    ax.annotate(
        "", end, start, arrowprops={"arrowstyle": "->", "lw": 0.9, "color": kw.get("c", "black")}
    )


# --- diagrams ------------------------------------------------------------------------------------


def bert_pipeline_diagram() -> Figure:
    """The whole course in one figure: text -> WordPiece -> embeddings -> encoder -> heads.

    Pretraining (MLM + NSP on unlabelled text) and fine-tuning (a new head on labelled data) share
    everything below the heads; each box names the lesson that builds it.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 5.6))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    shared, pre, fine = "#c6dbef", "#c7e9c0", "#fdd0a2"
    stack = (  # (y, height, text): bottom to top, shared by both stages
        (0.02, 0.09, '"the bank raised its rates" + "it surprised markets"'),
        (
            0.17,
            0.1,
            "WordPiece: [CLS] the bank raised its rates [SEP] it surprised markets [SEP]\n"
            "ids and segments (lesson 1)",
        ),
        (0.33, 0.1, "embeddings: token + segment + position, LayerNorm (lesson 3)"),
        (
            0.49,
            0.16,
            "encoder: L x (multi-head self-attention (lesson 2), add & norm,\n"
            "feed-forward, add & norm) (lesson 3)\none contextual vector per token",
        ),
    )
    for i, (y, h, text) in enumerate(stack):
        _box(ax, 0.2, y, 0.6, h, text, "white" if i == 0 else shared)
        if i:
            _arrow(ax, (0.5, stack[i - 1][0] + stack[i - 1][1] + 0.005), (0.5, y - 0.005))
    top = 0.49 + 0.16
    heads = (
        (0.02, "MLM head: guess the\nmasked tokens (lesson 4)", pre),
        (0.27, "NSP head on [CLS]: is B\nthe next segment? (lesson 5)", pre),
        (0.56, "classifier on [CLS]:\nfresh or rotten? (lesson 6)", fine),
        (0.79, "a label per token:\nnames a thing? (lesson 7)", fine),
    )
    for x, text, colour in heads:
        _box(ax, x, 0.76, 0.19, 0.11, text, colour, size=8.5)
        _arrow(ax, (0.5, top + 0.005), (x + 0.095, 0.755))
    ax.text(
        0.235,
        0.93,
        "1. pretraining: unlabelled Wikipedia, long, once",
        ha="center",
        fontsize=10,
        color="darkgreen",
    )
    ax.text(
        0.775,
        0.93,
        "2. fine-tuning: a few thousand labelled examples,\nshort, once per task",
        ha="center",
        fontsize=10,
        color="saddlebrown",
    )
    ax.text(0.9, 0.4, "the same weights\nin both stages", ha="center", fontsize=9, style="italic")
    ax.set_title(
        "BERT: pretrain one encoder on raw text, then fine-tune it with a small new head",
        fontsize=11,
    )
    return fig


def input_representation(tokens: Sequence[str], token_type_ids: Sequence[int]) -> Figure:
    """BERT's input as the paper's figure 2: token + segment + position embeddings = the input.

    One column per position: the token, then the three embeddings looked up for it, with "+"
    between them, and the sum (then LayerNorm) that enters the encoder. Segment A is blue, B green.
    """
    import matplotlib.pyplot as plt

    if len(tokens) != len(token_type_ids) or not tokens:
        raise ValueError(
            f"tokens and token_type_ids must be equally long and not empty, got {len(tokens)} and "
            f"{len(token_type_ids)}"
        )
    n = len(tokens)
    widths = [max(0.9, 0.11 * len(t) + 0.35) for t in tokens]  # no word overflows its box
    lefts = np.cumsum([0.0] + [w + 0.15 for w in widths[:-1]])  # 0.15 between boxes
    centres = lefts + np.array(widths) / 2
    segment_colour = {0: "#d3e4f5", 1: "#d9f0d3"}
    rows = [  # (label, text of column i, fill colour of column i)
        ("input", lambda i: tokens[i], lambda i: "white"),
        ("token\nembeddings", lambda i: "", lambda i: "#fde9c9"),  # E with the token below
        (
            "segment\nembeddings",
            lambda i: "E$_A$" if token_type_ids[i] == 0 else "E$_B$",
            lambda i: segment_colour[int(token_type_ids[i] != 0)],
        ),
        ("position\nembeddings", lambda i: f"E$_{{{i}}}$", lambda i: "#e4e4e4"),
        ("= input to\nthe encoder", lambda i: f"$e_{{{i}}}$", lambda i: "#f2f2f2"),
    ]
    fig, ax = plt.subplots(figsize=(min(0.95 * sum(widths) + 2.5, 18), 4.6))
    ys = [4.4, 3.0, 2.0, 1.0, -0.4]  # a gap above the sums and below the tokens
    for (label, text, colour), y in zip(rows, ys):
        ax.text(-0.4, y, label, ha="right", va="center", fontsize=9)
        for i in range(n):
            w = widths[i]
            ax.add_patch(
                plt.Rectangle(
                    (centres[i] - w / 2, y - 0.32), w, 0.64, fc=colour(i), ec="#555555", lw=0.8
                )
            )
            ax.text(centres[i], y, text(i), ha="center", va="center", fontsize=8.5)
            if label.startswith("token"):  # E, subscript the token (plain text: any token)
                sub = 0.035 * len(tokens[i])
                ax.text(centres[i] - sub, y + 0.04, "E", ha="right", va="center", fontsize=8.5)
                ax.text(centres[i] - sub, y - 0.1, tokens[i], ha="left", va="center", fontsize=6)
    for i in range(n):
        for y in (2.5, 1.5):  # + between token and segment, segment and position
            ax.text(centres[i], y, "+", ha="center", va="center", fontsize=11)
        ax.annotate("", (centres[i], 4.0), (centres[i], 3.4), arrowprops={"arrowstyle": "<-"})
        ax.text(centres[i], 0.3, "=", ha="center", va="center", fontsize=11)
    ax.set_xlim(-2.2, centres[-1] + widths[-1] / 2 + 0.2)
    ax.set_ylim(-0.9, 4.9)
    ax.axis("off")
    ax.set_title(
        "BERT's input representation (the paper's figure 2): e_i = LayerNorm(token + "
        "segment + position); segment A blue, B green",
        fontsize=10,
    )
    fig.subplots_adjust(left=0.01, right=0.99, top=0.9, bottom=0.02)
    return fig


def encoder_layer_diagram() -> Figure:
    """One post-LN encoder layer as a block diagram, beside the pre-LN variant."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 5.4))
    attention, ffn, norm = "#c6dbef", "#fdd0a2", "#e5e5e5"
    for ax, title, pre_ln in (
        (axes[0], "BERT's layer (post-LN)", False),
        (axes[1], "pre-LN (GPT-2 and most models since)", True),
    ):
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.axis("off")
        ax.set_title(title, fontsize=11)
        h = 0.07  # box height
        if pre_ln:
            blocks = [
                (0.10, "LayerNorm", norm),
                (0.21, "multi-head self-attention", attention),
                (0.32, "add", "white"),
                (0.45, "LayerNorm", norm),
                (0.56, "feed-forward: linear H->4H, GELU, linear 4H->H", ffn),
                (0.67, "add", "white"),
            ]
            skips = [(0.075, 0.32), (0.42, 0.67)]  # (from the arrow below, to the add box)
        else:
            blocks = [
                (0.10, "multi-head self-attention", attention),
                (0.24, "add & LayerNorm", norm),
                (0.40, "feed-forward: linear H->4H, GELU, linear 4H->H", ffn),
                (0.54, "add & LayerNorm", norm),
            ]
            skips = [(0.075, 0.24), (0.355, 0.54)]
        ax.text(0.45, 0.01, "x: (batch, seq, hidden)", ha="center", fontsize=9)
        previous = 0.04
        for y, text, colour in blocks:
            _arrow(ax, (0.45, previous + 0.005), (0.45, y - 0.005))
            _box(ax, 0.12, y, 0.66, h, text, colour, size=8.5)
            previous = y + h
        _arrow(ax, (0.45, previous + 0.005), (0.45, previous + 0.06))
        ax.text(0.45, previous + 0.08, "output: (batch, seq, hidden)", ha="center", fontsize=9)
        for start, end in skips:  # the residual connections, drawn on the right
            ax.plot([0.45, 0.9, 0.9], [start, start, end + h / 2], color="tab:red", lw=1)
            _arrow(ax, (0.9, end + h / 2), (0.785, end + h / 2), c="tab:red")
        ax.text(
            0.93,
            (skips[0][0] + skips[0][1]) / 2,
            "residual",
            rotation=90,
            color="tab:red",
            fontsize=8.5,
            va="center",
        )
    fig.tight_layout()
    return fig


def fine_tuning_diagram() -> Figure:
    """Pretraining vs fine-tuning: the same embeddings, encoder and pooler; a new classifier."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    pretrained, new = "#c6dbef", "#fdd0a2"
    panels = (
        (
            "1. pretraining (lessons 4-5)",
            "Wikipedia: [CLS] A [SEP] B [SEP]",
            "NSP head: linear, 2 classes",
            pretrained,
            "millions of unlabelled sentences; lr ~1e-4, long",
        ),
        (
            "2. fine-tuning (this lesson)",
            'a review: "[CLS] a gem of a film [SEP]"',
            "classifier: dropout + linear, one\nlogit per label (new, random)",
            new,
            "thousands of labelled snippets; every weight trained,\nlr 2e-5 to 5e-5, 2-4 epochs",
        ),
    )
    for ax, (title, inputs, head, head_colour, note) in zip(axes, panels):
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.axis("off")
        ax.set_title(title, fontsize=11)
        _box(ax, 0.1, 0.02, 0.8, 0.08, inputs, "white")
        _arrow(ax, (0.5, 0.11), (0.5, 0.15))
        _box(
            ax, 0.1, 0.16, 0.8, 0.08, "WordPiece + token, segment, position embeddings", pretrained
        )
        _arrow(ax, (0.5, 0.25), (0.5, 0.29))
        _box(
            ax,
            0.1,
            0.3,
            0.8,
            0.13,
            "encoder: N x (self-attention, add & norm,\nfeed-forward, add & norm)",
            pretrained,
        )
        _arrow(ax, (0.7, 0.44), (0.7, 0.49))  # the [CLS] vector
        _box(ax, 0.5, 0.5, 0.4, 0.08, "pooler: dense + tanh on [CLS]", pretrained, size=8.5)
        _arrow(ax, (0.7, 0.59), (0.7, 0.64))
        _box(ax, 0.5, 0.65, 0.4, 0.1, head, head_colour, size=8.5)
        ax.text(0.5, 0.9, note, ha="center", va="center", fontsize=8.5, style="italic")
    left = axes[0]
    _arrow(left, (0.3, 0.44), (0.3, 0.64))  # every position's vector
    _box(left, 0.1, 0.65, 0.35, 0.1, "MLM head\n(tied to the embeddings)", pretrained, size=8.5)
    right = axes[1]  # a bracket over what fine-tuning starts from
    right.plot(
        [0.08, 0.05, 0.05, 0.08], [0.16, 0.16, 0.58, 0.58], color="grey", lw=1, clip_on=False
    )
    right.text(0.03, 0.37, "copied from\npretraining", ha="right", va="center", fontsize=8)
    handles = [
        Patch(fc=pretrained, ec="black", lw=0.8, label="weights learned in pretraining"),
        Patch(fc=new, ec="black", lw=0.8, label="new weights, random at the start"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=8.5, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


# --- plots of the lessons' measures --------------------------------------------------------------


_MASKING_COLOURS = {  # what happened to a token -> (face colour, legend label)
    "unchanged": ("#eeeeee", "not chosen"),
    "mask": ("#d62728", "chosen: [MASK] (80%)"),
    "random": ("#ff7f0e", "chosen: random token (10%)"),
    "kept": ("#2ca02c", "chosen: kept (10%)"),
}


def masking_view(
    original: Sequence[str], masked: Sequence[str], chosen: Sequence[bool], width: int = 12
) -> Figure:
    """Tokens as coloured boxes: what BERT's masking did to each (rows of `width` tokens)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    if not len(original) == len(masked) == len(chosen):
        raise ValueError(
            f"original, masked and chosen must have one entry per token, got lengths "
            f"{len(original)}, {len(masked)}, {len(chosen)}"
        )
    if width < 1:
        raise ValueError(f"width must be at least 1, got {width}")
    rows = max(1, -(-len(original) // width))
    fig, ax = plt.subplots(figsize=(1.05 * width, 0.75 * rows + 0.9))
    for i, (before, after, picked) in enumerate(zip(original, masked, chosen)):
        kind = "unchanged"
        if picked:
            kind = "mask" if after == "[MASK]" else "kept" if after == before else "random"
        label = after if after == before else f"{after}\n({before})"
        row, col = divmod(i, width)
        ax.text(
            col + 0.5,
            -row,
            label,
            ha="center",
            va="center",
            fontsize=8,
            parse_math=False,
            bbox={"boxstyle": "round,pad=0.3", "fc": _MASKING_COLOURS[kind][0], "ec": "none"},
        )
    ax.set_xlim(0, width)
    ax.set_ylim(-rows + 0.4, 0.6)
    ax.axis("off")
    handles = [Patch(color=c, label=name) for c, name in _MASKING_COLOURS.values()]
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=4,
        fontsize=8,
        frameon=False,
    )
    fig.tight_layout()
    return fig


def plot_attention_summary(summary: dict[str, np.ndarray], ncols: int = 4) -> Figure:
    """One (layers x heads) heatmap per metric of attention_summary, each with its colour bar."""
    import matplotlib.pyplot as plt

    if not summary:
        raise ValueError("summary is empty; pass the dict that attention_summary returns.")
    names = list(summary)
    num_layers, num_heads = summary[names[0]].shape
    nrows = -(-len(names) // ncols)
    panel_w, panel_h = 0.24 * num_heads + 1.3, 0.3 * num_layers + 1.0
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(panel_w * ncols, panel_h * nrows), squeeze=False
    )
    for ax, name in zip(axes.flat, names, strict=False):
        is_fraction = name.startswith("to ")
        image = ax.imshow(
            summary[name],
            cmap="viridis",
            vmin=0.0,
            vmax=1.0 if is_fraction else None,
            aspect="auto",
        )
        ax.set_title(
            name + ("" if is_fraction else " (nats)" if name == "entropy" else " (tokens)")
        )
        ax.set_xticks(range(num_heads), [str(h) for h in range(num_heads)], fontsize=7)
        ax.set_yticks(range(num_layers), [str(layer) for layer in range(num_layers)], fontsize=7)
        ax.set_xlabel("head", fontsize=8)
        ax.set_ylabel("layer", fontsize=8)
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.03)
    for ax in list(axes.flat)[len(names) :]:
        fig.delaxes(ax)
    fig.suptitle("What each head attends to, averaged over the real tokens of the batch")
    fig.tight_layout()
    return fig


def labelled_examples_curve(
    curve: dict[str, dict[str, dict[str, float]]], baselines: dict[str, float] | None = None
) -> Figure:
    """Test accuracy against labelled training examples: {model: {n: {mean, std}}}, log x axis.

    baselines {name: accuracy} are drawn as horizontal lines (majority dotted, others dashed).
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name, points in curve.items():
        sizes = sorted(points, key=int)
        ax.errorbar(
            [int(n) for n in sizes],
            [points[n]["mean"] for n in sizes],
            yerr=[points[n]["std"] for n in sizes],
            marker="o",
            capsize=3,
            label=name,
        )
    for name, value in (baselines or {}).items():
        ax.axhline(value, ls=":" if "majority" in name else "--", color="grey", lw=1)
        ax.text(
            0.01,
            value,
            name,
            va="bottom",
            fontsize=7,
            color="grey",
            transform=ax.get_yaxis_transform(),
        )
    ax.set_xscale("log")
    ax.set_xlabel("labelled training examples")
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
