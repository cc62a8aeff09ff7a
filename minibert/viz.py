"""Plots for the course: attention maps that need no JavaScript, analysis, explorer, curves.

Every function returns a matplotlib Figure, so it shows in JupyterLab, VS Code, Colab and in
exported HTML or PDF, and saves to PNG or SVG with ``fig.savefig``. matplotlib is imported inside
the functions, so ``import minibert`` stays light.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from minibert.utils import evaluating

if TYPE_CHECKING:
    import torch
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


# --- drawing helpers (the diagrams of lessons 0, 3 and 6) --------------------------------------


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


# --- Lesson 0: the big picture ------------------------------------------------------------------


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
        (0.17, 0.1, "WordPiece: [CLS] the bank raised its rates [SEP] it surprised markets [SEP]\n"
         "ids and segments (lesson 1)"),
        (0.33, 0.1, "embeddings: token + segment + position, LayerNorm (lesson 3)"),
        (0.49, 0.16, "encoder: L x (multi-head self-attention (lesson 2), add & norm,\n"
         "feed-forward, add & norm) (lesson 3)\none contextual vector per token"),
    )  # fmt: skip
    for i, (y, h, text) in enumerate(stack):
        _box(ax, 0.2, y, 0.6, h, text, "white" if i == 0 else shared)
        if i:
            _arrow(ax, (0.5, stack[i - 1][0] + stack[i - 1][1] + 0.005), (0.5, y - 0.005))
    top = 0.49 + 0.16
    heads = (
        (0.02, "MLM head: guess the\nmasked tokens (lesson 4)", pre),
        (0.27, "NSP head on [CLS]: is B\nthe next segment? (lesson 5)", pre),
        (0.56, "classifier on [CLS]:\nfresh or rotten? (lesson 6)", fine),
        (0.79, "a label per token:\ncapitalised? (lesson 7)", fine),
    )
    for x, text, colour in heads:
        _box(ax, x, 0.76, 0.19, 0.11, text, colour, size=8.5)
        _arrow(ax, (0.5, top + 0.005), (x + 0.095, 0.755))
    ax.text(0.235, 0.93, "1. pretraining: unlabelled Wikipedia, long, once",
            ha="center", fontsize=10, color="darkgreen")  # fmt: skip
    ax.text(0.775, 0.93, "2. fine-tuning: a few thousand labelled examples,\nshort, once per task",
            ha="center", fontsize=10, color="saddlebrown")  # fmt: skip
    ax.text(0.9, 0.4, "the same weights\nin both stages", ha="center", fontsize=9, style="italic")
    ax.set_title("BERT: pretrain one encoder on raw text, then fine-tune it with a small new head",
                 fontsize=11)  # fmt: skip
    return fig


# --- Lesson 1: the input representation ----------------------------------------------------------


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
        ("segment\nembeddings", lambda i: "E$_A$" if token_type_ids[i] == 0 else "E$_B$",
         lambda i: segment_colour[int(token_type_ids[i] != 0)]),
        ("position\nembeddings", lambda i: f"E$_{{{i}}}$", lambda i: "#e4e4e4"),
        ("= input to\nthe encoder", lambda i: f"$e_{{{i}}}$", lambda i: "#f2f2f2"),
    ]  # fmt: skip
    fig, ax = plt.subplots(figsize=(min(0.95 * sum(widths) + 2.5, 18), 4.6))
    ys = [4.4, 3.0, 2.0, 1.0, -0.4]  # a gap above the sums and below the tokens
    for (label, text, colour), y in zip(rows, ys):
        ax.text(-0.4, y, label, ha="right", va="center", fontsize=9)
        for i in range(n):
            w = widths[i]
            ax.add_patch(
                plt.Rectangle(
                    (centres[i] - w / 2, y - 0.32), w, 0.64, fc=colour(i), ec="#555555", lw=0.8
                )  # fmt: skip
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
    ax.set_title("BERT's input representation (the paper's figure 2): e_i = LayerNorm(token + "
                 "segment + position); segment A blue, B green", fontsize=10)  # fmt: skip
    fig.subplots_adjust(left=0.01, right=0.99, top=0.9, bottom=0.02)
    return fig


# --- Lesson 2: attention maps ------------------------------------------------------------------


def _as_layers(attentions: Any) -> tuple[torch.Tensor, ...]:
    """Attention as minibert or Hugging Face return it -> tuple of (batch, heads, q_len, k_len).

    Accepts a tuple or list with one (batch, heads, q_len, k_len) tensor per layer (the
    ``attentions`` of a model output), or one such tensor (a single layer); NumPy arrays work too.
    Returns detached float32 CPU tensors, one per layer, all of the same shape. Every viz function
    that reads attention starts here, so they all accept the same inputs and raise the same errors.
    """
    import torch

    if isinstance(attentions, (tuple, list)):
        if len(attentions) == 0:
            raise ValueError(
                "attentions is empty; expected one (batch, heads, q_len, k_len) tensor per layer, "
                "as returned by model(..., output_attentions=True).attentions."
            )
        layers = list(attentions)
    elif attentions is None:
        raise ValueError(
            "attentions is None; run the model with output_attentions=True to get the weights."
        )
    else:
        layers = [attentions]
    out = []
    for i, layer in enumerate(layers):
        t = torch.as_tensor(layer.detach() if isinstance(layer, torch.Tensor) else layer)
        if t.dim() != 4:
            raise ValueError(
                f"attention for layer {i} must have 4 dims (batch, heads, q_len, k_len), got shape "
                f"{tuple(t.shape)}; for a single head or example add dims with .unsqueeze(0)."
            )
        if out and t.shape != out[0].shape:
            raise ValueError(
                f"all layers must have the same shape, got {tuple(out[0].shape)} for layer 0 and "
                f"{tuple(t.shape)} for layer {i}."
            )
        out.append(t.to(device="cpu", dtype=torch.float32))
    return tuple(out)


def _check_index(name: str, value: int, size: int) -> int:
    """Return value if 0 <= value < size, else raise ValueError saying the valid range."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not 0 <= value < size:
        raise ValueError(f"{name} must be an int in 0..{size - 1}, got {value!r}.")
    return int(value)


def _kept_positions(
    tokens: Sequence[str],
    layers: tuple[torch.Tensor, ...],
    batch_index: int,
    attention_mask: Any,
    pad_token: str | None,
) -> list[int]:
    """Check tokens against the attention's shape; return the positions that are not padding.

    Padding is where ``attention_mask`` (seq,) or (batch, seq) is 0, or, without a mask, where the
    token equals ``pad_token``.
    """
    batch, _, q_len, k_len = layers[0].shape
    _check_index("batch_index", batch_index, batch)
    if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
        raise ValueError("tokens must be a list of strings, one per position, e.g. enc.tokens.")
    if q_len != k_len or len(tokens) != q_len:
        raise ValueError(
            f"expected {q_len} tokens for self-attention weights of shape (q_len, k_len) = "
            f"{(q_len, k_len)}, got {len(tokens)} tokens; pass the tokens of this example."
        )
    if attention_mask is not None:
        mask = np.asarray(
            attention_mask.detach().cpu() if hasattr(attention_mask, "detach") else attention_mask
        )
        if mask.ndim == 2:
            mask = mask[batch_index]
        if mask.shape != (q_len,):
            raise ValueError(
                f"attention_mask must have shape (seq,) or (batch, seq) with seq = {q_len}, got "
                f"{np.asarray(attention_mask).shape}."
            )
        kept = [i for i in range(q_len) if mask[i] != 0]
    else:
        kept = [i for i, t in enumerate(tokens) if pad_token is None or t != pad_token]
    if not kept:
        raise ValueError("every position is padding; there is nothing to plot.")
    return kept


def _select(layers, layer, head, batch_index, kept) -> np.ndarray:
    """The (q, k) weights of one head, padding rows and columns left out, as a NumPy array."""
    w = layers[layer][batch_index, head].numpy()
    return w[np.ix_(kept, kept)]


def attention_heatmap(
    weights: Any,
    tokens: Sequence[str],
    layer: int = 0,
    head: int = 0,
    *,
    batch_index: int = 0,
    attention_mask: Any = None,
    pad_token: str | None = "[PAD]",
    ax: Axes | None = None,
    cmap: str = "Blues",
    title: str | None = None,
) -> Figure:
    """One head's (q_len, k_len) weights as a heatmap: queries down, keys across, colour bar.

    ``weights`` is a model's ``attentions`` (tuple per layer) or one (batch, heads, q, k) tensor;
    padding (``attention_mask`` 0, or ``pad_token``) is left out. Draws into ``ax`` if given.
    """
    import matplotlib.pyplot as plt

    layers = _as_layers(weights)
    layer = _check_index("layer", layer, len(layers))
    head = _check_index("head", head, layers[0].shape[1])
    kept = _kept_positions(tokens, layers, batch_index, attention_mask, pad_token)
    w = _select(layers, layer, head, batch_index, kept)
    labels = [tokens[i] for i in kept]
    if ax is None:
        size = max(3.5, 0.28 * len(kept) + 2.0)
        fig, ax = plt.subplots(figsize=(size + 0.8, size))
    else:
        fig = ax.figure
    image = ax.imshow(w, cmap=cmap, vmin=0.0, vmax=max(float(w.max()), 1e-12))
    ax.set_xticks(range(len(labels)), labels, rotation=90, parse_math=False)
    ax.set_yticks(range(len(labels)), labels, parse_math=False)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.set_title(title if title is not None else f"layer {layer}, head {head}")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="attention weight")
    return fig


def attention_heads(
    attentions: Any,
    tokens: Sequence[str],
    layer: int = 0,
    *,
    batch_index: int = 0,
    attention_mask: Any = None,
    pad_token: str | None = "[PAD]",
    ncols: int = 4,
    cmap: str = "Blues",
) -> Figure:
    """Every head of one layer as a grid of heatmaps sharing one colour bar (0 to the layer's max)."""
    import matplotlib.pyplot as plt

    layers = _as_layers(attentions)
    layer = _check_index("layer", layer, len(layers))
    num_heads = layers[0].shape[1]
    if not isinstance(ncols, int) or ncols < 1:
        raise ValueError(f"ncols must be a positive int, got {ncols!r}.")
    kept = _kept_positions(tokens, layers, batch_index, attention_mask, pad_token)
    labels = [tokens[i] for i in kept]
    ncols = min(ncols, num_heads)
    nrows = -(-num_heads // ncols)
    panel = max(2.4, 0.17 * len(kept) + 1.2)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(panel * ncols + 1.0, panel * nrows + 0.5),
        squeeze=False,
        layout="constrained",
    )
    weights = [_select(layers, layer, h, batch_index, kept) for h in range(num_heads)]
    vmax = max(max(float(w.max()) for w in weights), 1e-12)
    fontsize = 8 if len(kept) <= 24 else 6
    image = None
    for h, ax in enumerate(axes.flat):
        if h >= num_heads:
            fig.delaxes(ax)
            continue
        image = ax.imshow(weights[h], cmap=cmap, vmin=0.0, vmax=vmax)
        ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=fontsize, parse_math=False)
        # token labels on the left column only, so that panels do not overlap
        ax.set_yticks(
            range(len(labels)),
            labels if h % ncols == 0 else [],
            fontsize=fontsize,
            parse_math=False,
        )
        ax.set_title(f"head {h}", fontsize=10)
    fig.suptitle(f"layer {layer}: rows are queries, columns are keys")
    fig.colorbar(image, ax=axes.ravel().tolist(), fraction=0.02, pad=0.02, label="attention weight")
    return fig


def model_view(
    attentions: Any,
    tokens: Sequence[str],
    *,
    batch_index: int = 0,
    attention_mask: Any = None,
    pad_token: str | None = "[PAD]",
    cmap: str = "Blues",
    vmax: float | None = None,
    scale: str = "shared",
) -> Figure:
    """Every layer (rows) x head (columns) as a small heatmap, like bertviz's model view.

    scale="shared" (default) draws every thumbnail on one colour scale, from 0 to ``vmax`` (by
    default the largest weight in the figure), with a colour bar, so a near-uniform head looks
    pale and two figures with the same vmax (for example 1.0) compare. scale="panel" stretches
    each thumbnail from 0 to its own largest weight, so faint patterns show; the figure says so.
    """
    import matplotlib.pyplot as plt

    if scale not in ("shared", "panel"):
        raise ValueError(f"scale must be 'shared' or 'panel', got {scale!r}")
    if scale == "panel" and vmax is not None:
        raise ValueError("vmax sets the shared scale; leave it out with scale='panel'")
    layers = _as_layers(attentions)
    num_layers, num_heads = len(layers), layers[0].shape[1]
    kept = _kept_positions(tokens, layers, batch_index, attention_mask, pad_token)
    panels = [
        [_select(layers, layer, head, batch_index, kept) for head in range(num_heads)]
        for layer in range(num_layers)
    ]
    if scale == "shared" and vmax is None:
        vmax = max(max(float(w.max()) for w in row) for row in panels)
    thumb = 1.1
    fig, axes = plt.subplots(
        num_layers,
        num_heads,
        figsize=(thumb * num_heads + 0.6, thumb * num_layers + 0.8),
        squeeze=False,
        layout="constrained",
    )
    for layer in range(num_layers):
        for head in range(num_heads):
            ax = axes[layer, head]
            w = panels[layer][head]
            top = vmax if scale == "shared" else max(float(w.max()), 1e-12)
            image = ax.imshow(w, cmap=cmap, vmin=0.0, vmax=top)
            ax.set_xticks([])
            ax.set_yticks([])
            if layer == 0:
                ax.set_title(f"head {head}", fontsize=8)
            if head == 0:
                ax.set_ylabel(f"layer {layer}", fontsize=8)
    if scale == "shared":
        fig.colorbar(image, ax=axes, shrink=0.8, label="attention weight")
    text = " ".join(tokens[i] for i in kept)
    text = text if len(text) <= 90 else text[:87] + "..."
    if scale == "panel":
        text += "\n(each panel scaled to its own maximum: colours do not compare across panels)"
    fig.suptitle(text, fontsize=9, parse_math=False)
    return fig


def head_view(
    attentions: Any,
    tokens: Sequence[str],
    layer: int = 0,
    heads: Sequence[int] | None = None,
    *,
    batch_index: int = 0,
    attention_mask: Any = None,
    pad_token: str | None = "[PAD]",
    sentence_b_start: int | None = None,
    min_weight: float = 0.0,
    ax: Axes | None = None,
) -> Figure:
    """bertviz's head view as a static figure: queries on the left, keys on the right.

    One line per (query, key) pair with weight > ``min_weight``, its opacity the weight, one
    colour per head. With ``sentence_b_start`` (the position of segment B's first token, e.g.
    ``token_type_ids.index(1)``) the two segments are drawn apart, divided by a dashed line.
    """
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection
    from matplotlib.colors import to_rgba
    from matplotlib.lines import Line2D

    layers = _as_layers(attentions)
    layer = _check_index("layer", layer, len(layers))
    num_heads = layers[0].shape[1]
    if heads is None:
        heads = list(range(num_heads))
    elif isinstance(heads, (int, np.integer)):
        heads = [heads]
    heads = [_check_index("head", h, num_heads) for h in heads]
    if not heads:
        raise ValueError(f"heads must name at least one head in 0..{num_heads - 1}, got [].")
    kept = _kept_positions(tokens, layers, batch_index, attention_mask, pad_token)
    seq = layers[0].shape[2]
    if sentence_b_start is not None:
        sentence_b_start = _check_index("sentence_b_start", sentence_b_start, seq)
        if sentence_b_start == 0:
            raise ValueError("sentence_b_start must be > 0: segment A needs at least one token.")

    gap = 1.0  # extra space between segments A and B, in rows
    ys = np.array(
        [
            -(r + (gap if sentence_b_start is not None and i >= sentence_b_start else 0.0))
            for r, i in enumerate(kept)
        ]
    )
    if ax is None:
        height = max(3.0, 0.26 * (len(kept) + gap) + 1.2)
        fig, ax = plt.subplots(figsize=(5.5, height))
    else:
        fig = ax.figure
    cmap = plt.get_cmap("tab10" if num_heads <= 10 else "tab20")
    x_left, x_right = 0.0, 1.0
    for r, i in enumerate(kept):
        for x, ha in ((x_left - 0.04, "right"), (x_right + 0.04, "left")):
            ax.text(x, ys[r], tokens[i], ha=ha, va="center", fontsize=9, parse_math=False)
    handles = []
    for h in heads:
        w = _select(layers, layer, h, batch_index, kept)
        qs, ks = np.nonzero(w > min_weight)
        segments = [[(x_left, ys[a]), (x_right, ys[b])] for a, b in zip(qs, ks, strict=True)]
        r, g, b, _ = to_rgba(cmap(h % cmap.N))
        colors = [
            (r, g, b, float(min(max(w[a, c], 0.0), 1.0))) for a, c in zip(qs, ks, strict=True)
        ]
        ax.add_collection(LineCollection(segments, colors=colors, linewidths=1.5))
        handles.append(Line2D([], [], color=(r, g, b), lw=2, label=f"head {h}"))
    if sentence_b_start is not None and any(i >= sentence_b_start for i in kept):
        first_b = next(r for r, i in enumerate(kept) if i >= sentence_b_start)
        y_split = ys[first_b] + (1.0 + gap) / 2
        ax.axhline(y_split, color="0.4", linestyle="--", linewidth=1)
        ax.axhspan(ys[-1] - 0.5, y_split, color="0.93", zorder=0)
        ax.text(0.5, y_split + 0.25, "segment A", ha="center", fontsize=8, color="0.3")
        ax.text(0.5, y_split - 0.45, "segment B", ha="center", fontsize=8, color="0.3")
    ax.set_xlim(-0.8, 1.8)
    ax.set_ylim(ys[-1] - 0.7, 0.9)
    ax.text(x_left - 0.04, 0.6, "query", ha="right", fontsize=9, weight="bold")
    ax.text(x_right + 0.04, 0.6, "key", ha="left", fontsize=9, weight="bold")
    ax.axis("off")
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False
    )
    ax.set_title(f"layer {layer}: opacity = attention weight")
    return fig


def to_bertviz(
    attentions: Any, *, batch_index: int = 0, attention_mask: Any = None
) -> tuple[torch.Tensor, ...]:
    """The input bertviz's ``head_view``/``model_view`` expect: one (1, heads, n, n) tensor per layer.

    Takes one example of the batch; with ``attention_mask`` its padding is removed (remove the
    same positions from the tokens you pass to bertviz).
    """
    layers = _as_layers(attentions)
    batch, _, q_len, k_len = layers[0].shape
    batch_index = _check_index("batch_index", batch_index, batch)
    kept = list(range(q_len))
    if attention_mask is not None:
        kept = _kept_positions(["?"] * q_len, layers, batch_index, attention_mask, None)
    return tuple(t[batch_index : batch_index + 1][:, :, kept][:, :, :, kept] for t in layers)


# --- Lesson 3: attention analysis and the explorer ---------------------------------------------


def attention_summary(
    attentions: Any,
    input_ids: Any,
    special_ids: Any,
    attention_mask: Any = None,
) -> dict[str, np.ndarray]:
    """What each head attends to, on average: name -> (layers, heads) array (Clark et al. 2019).

    ``special_ids`` maps a name to a token id, e.g. ``{"[CLS]": 101, "[SEP]": 102}``; each gets a
    row "to [CLS]": the weight on positions holding that id. The others: "entropy" (nats; high
    is broad), "to self", "to previous", "to next" (the neighbouring token) and "distance" (the
    mean ``|query - key|`` in tokens). Averages run over every real (not padding) query of the batch.
    """
    import torch

    layers = _as_layers(attentions)
    batch, _, q_len, k_len = layers[0].shape
    ids = torch.as_tensor(input_ids.detach().cpu() if hasattr(input_ids, "detach") else input_ids)
    if ids.dim() == 1:
        ids = ids.unsqueeze(0)
    if tuple(ids.shape) != (batch, q_len) or q_len != k_len:
        raise ValueError(
            f"input_ids must have shape (batch, seq) = {(batch, q_len)} to match the self-attention "
            f"weights {tuple(layers[0].shape)}, got {tuple(ids.shape)}."
        )
    if not hasattr(special_ids, "items") or not all(
        isinstance(k, str) and isinstance(v, (int, np.integer)) for k, v in special_ids.items()
    ):
        raise ValueError(
            f"special_ids must map names to token ids, e.g. {{'[CLS]': 101, '[SEP]': 102}}, got "
            f"{special_ids!r:.80}."
        )
    if attention_mask is None:
        real = torch.ones(batch, q_len, dtype=torch.bool)
    else:
        real = torch.as_tensor(
            attention_mask.detach().cpu() if hasattr(attention_mask, "detach") else attention_mask
        ).bool()
        if real.dim() == 1:
            real = real.unsqueeze(0)
        if tuple(real.shape) != (batch, q_len):
            raise ValueError(
                f"attention_mask must have shape (batch, seq) = {(batch, q_len)}, got "
                f"{tuple(real.shape)}."
            )
    if not real.any():
        raise ValueError("every position is padding; there is nothing to summarise.")
    pos = torch.arange(q_len)
    distance = (pos[:, None] - pos[None, :]).abs().float()  # (q, k)
    has_prev = real & torch.cat([torch.zeros(batch, 1, dtype=torch.bool), real[:, :-1]], 1)
    has_next = real & torch.cat([real[:, 1:], torch.zeros(batch, 1, dtype=torch.bool)], 1)
    key_masks = {f"to {name}": (ids == int(i)).float() for name, i in special_ids.items()}

    def mean_over(values: torch.Tensor, where: torch.Tensor) -> np.ndarray:
        """(batch, heads, q) values -> (heads,) mean over the queries where `where` (batch, q)."""
        w = where[:, None, :].float()  # (batch, 1, q)
        return ((values * w).sum((0, 2)) / w.sum((0, 2)).clamp_min(1)).numpy()

    rows: dict[str, list[np.ndarray]] = {"entropy": [], **{k: [] for k in key_masks}}
    rows.update({"to self": [], "to previous": [], "to next": [], "distance": []})
    for a in layers:  # (batch, heads, q, k)
        rows["entropy"].append(mean_over(-(a * a.clamp_min(1e-12).log()).sum(-1), real))
        for name, keys in key_masks.items():
            rows[name].append(mean_over((a * keys[:, None, None, :]).sum(-1), real))
        rows["to self"].append(mean_over(a.diagonal(0, -2, -1), real))
        prev = torch.nn.functional.pad(a.diagonal(-1, -2, -1), (1, 0))  # a[q, q-1], q >= 1
        rows["to previous"].append(mean_over(prev, has_prev))
        nxt = torch.nn.functional.pad(a.diagonal(1, -2, -1), (0, 1))  # a[q, q+1]
        rows["to next"].append(mean_over(nxt, has_next))
        rows["distance"].append(mean_over((a * distance).sum(-1), real))
    return {name: np.stack(values) for name, values in rows.items()}  # each (layers, heads)


def top_heads(
    summary: dict[str, np.ndarray], metric: str, k: int = 3, largest: bool = True
) -> list[tuple[int, int, float]]:
    """The k (layer, head, value) with the largest (or smallest) value of one summary metric."""
    if metric not in summary:
        raise ValueError(f"metric must be one of {list(summary)}, got {metric!r}.")
    values = summary[metric]
    order = np.argsort(-values if largest else values, axis=None, kind="stable")[:k]
    return [
        (int(i // values.shape[1]), int(i % values.shape[1]), float(values.flat[i])) for i in order
    ]


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


def _encode_for_explorer(
    tokenizer: Any, text: str, text_pair: str | None, max_length: int
) -> tuple[list, Any, Any, int]:
    """Tokenize (minibert's or Hugging Face's tokenizer), cut to max_length -> tokens, ids and
    segments (1, seq), and the length before the cut."""
    import torch

    full = len(tokenizer(text, text_pair).input_ids)
    enc = tokenizer(text, text_pair, max_length=max_length, truncation=full > max_length)
    ids, types = list(enc.input_ids), list(enc.token_type_ids)
    tokens = getattr(enc, "tokens", None)
    if not isinstance(tokens, list):  # Hugging Face: a method; minibert: the list
        tokens = tokenizer.convert_ids_to_tokens(ids)
    return list(tokens), torch.tensor([ids]), torch.tensor([types]), full


def attention_grid(
    panels: Sequence[Sequence[np.ndarray]],
    row_names: Sequence[str] = (),
    col_names: Sequence[str] = (),
    title: str = "",
    cmap: str = "Blues",
    panel_names: Sequence[Sequence[str]] | None = None,
) -> Figure:
    """A grid of attention maps drawn as ONE image on one colour scale: fast for many heads.

    panels[r][c] is an (n, n) array (every panel the same size; all-NaN leaves a blank);
    row_names and col_names label the rows and columns, panel_names each panel. The explorer draws its "all
    heads" and "model view" with this: one imshow instead of one Axes per head, well under a
    second for MiniLM's 72 heads. ``model_view`` and ``attention_heads`` draw labelled panels.
    """
    import matplotlib.pyplot as plt

    rows, cols = len(panels), len(panels[0])
    n = panels[0][0].shape[0]
    gap = max(2 if panel_names else 1, n // 6)  # room for the panel names
    step = n + gap
    grid = np.full((rows * step - gap, cols * step - gap), np.nan)  # NaN: the white gaps
    for r in range(rows):
        for c in range(cols):
            grid[r * step : r * step + n, c * step : c * step + n] = panels[r][c]
    vmax = max(float(np.nanmax(grid)), 1e-12)
    colours = plt.get_cmap(cmap).with_extremes(bad="white")  # NaN (the gaps) drawn white
    fig, ax = plt.subplots(figsize=(min(max(1.1 * cols + 1.4, 7.0), 16), min(1.1 * rows + 1.1, 12)))
    image = ax.imshow(grid, cmap=colours, vmin=0.0, vmax=vmax, interpolation="nearest")
    ax.set_xticks([c * step + (n - 1) / 2 for c in range(cols)] if col_names else [], col_names)
    ax.xaxis.tick_top()
    ax.set_yticks([r * step + (n - 1) / 2 for r in range(rows)] if row_names else [], row_names)
    ax.tick_params(length=0, labelsize=8)
    for r, names in enumerate(panel_names or []):
        for c, name in enumerate(names):
            ax.text(
                c * step + (n - 1) / 2, r * step - 0.6, name, ha="center", va="bottom", fontsize=8
            )
    for spine in ax.spines.values():
        spine.set_visible(False)
    fig.colorbar(image, ax=ax, shrink=0.8, label="attention weight")
    if title:
        ax.set_title(title, fontsize=9, pad=18)
    return fig


class AttentionExplorer:
    """An ipywidgets explorer of a model's attention; ``explore`` builds it. Display it in Jupyter.

    Its widgets are attributes (``text``, ``text_pair``, ``layer``, ``head``, ``view``); setting
    their ``value`` in code works as in the browser. ``figure`` is the figure on show.
    """

    VIEWS = ("heatmap", "head view", "model view")
    WINDOW = 40  # tokens on show at once: labels stay readable and a redraw stays well under 1 s

    def __init__(self, model: Any, tokenizer: Any, text: str, text_pair: str | None = None):
        import ipywidgets as widgets

        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"text must be a non-empty string, got {text!r:.60}.")
        if text_pair is not None and not isinstance(text_pair, str):
            raise ValueError(f"text_pair must be a string or None, got {type(text_pair).__name__}.")
        self.model, self.tokenizer = model, tokenizer
        self.figure: Figure | None = None
        self._run(text, text_pair)
        num_layers, num_heads = len(self.attentions), self.attentions[0].shape[1]
        self.text = widgets.Text(value=text, description="text", continuous_update=False)
        self.text_pair = widgets.Text(
            value=text_pair or "", description="pair", continuous_update=False
        )
        self.layer = widgets.Dropdown(
            options=[(f"layer {i}", i) for i in range(num_layers)], value=0, description="layer"
        )
        self.head = widgets.Dropdown(
            options=[("all heads", "all")] + [(f"head {h}", h) for h in range(num_heads)],
            value=0,
            description="head",
        )
        self.view = widgets.ToggleButtons(options=self.VIEWS, value="heatmap", description="view")
        # a long text is shown WINDOW tokens at a time; the slider moves the window
        self.start = widgets.IntSlider(value=0, min=0, description="from token")
        self.start.continuous_update = False
        self.note = widgets.HTML()  # truncation, the window, or what went wrong
        self._fit_window()
        self.output = widgets.Output()
        for control in (self.text, self.text_pair):
            control.observe(self._on_text, names="value")
        for control in (self.layer, self.head, self.view, self.start):
            control.observe(self._on_choice, names="value")
        self.widget = widgets.VBox(
            [
                widgets.HBox([self.text, self.text_pair]),
                widgets.HBox([self.layer, self.head, self.start]),
                self.view,
                self.note,
                self.output,
            ]
        )
        self.redraw()

    def _run(self, text: str, text_pair: str | None) -> None:
        import torch

        config = getattr(self.model, "config", None)
        limit = getattr(config, "max_position_embeddings", 512)
        self.tokens, input_ids, token_type_ids, full = _encode_for_explorer(
            self.tokenizer, text, text_pair, limit
        )
        self._note = (
            f"<i>truncated to the model's {limit} positions (the text has {full} tokens)</i>"
            if full > limit
            else ""
        )
        with torch.no_grad(), evaluating(self.model):  # no dropout: the same picture each time
            out = self.model(
                input_ids=input_ids, token_type_ids=token_type_ids, output_attentions=True
            )
        self.attentions = _as_layers(out.attentions)
        ones = (token_type_ids[0] == 1).nonzero()
        self.sentence_b_start = int(ones[0]) if len(ones) else None

    def _fit_window(self) -> None:
        """Size the window slider to the text and say what is on show."""
        n = len(self.tokens)
        self._fitting = True  # a clamped value is not a reader's choice: no redraw for it
        try:
            self.start.max = max(0, n - self.WINDOW)  # clamps the value too
        finally:
            self._fitting = False
        self.start.layout.display = None if n > self.WINDOW else "none"
        self._on_window()

    def _window(self) -> tuple[int, int]:
        """The first and one past the last token on show."""
        return self.start.value, min(self.start.value + self.WINDOW, len(self.tokens))

    def _on_window(self) -> None:
        first, end = self._window()
        shown = (
            f"<i>tokens {first}-{end - 1} of {len(self.tokens)} on show (move 'from token' for the "
            "rest); attention to tokens outside them is not drawn</i>"
            if len(self.tokens) > self.WINDOW
            else ""
        )
        self.note.value = "<br>".join(part for part in (self._note, shown) if part)

    def _on_text(self, change: Any) -> None:
        if not self.text.value.strip():
            self.note.value = "<i>the text is empty: still showing the last one</i>"
            return
        try:
            self._run(self.text.value, self.text_pair.value or None)
        except (ValueError, TypeError, RuntimeError) as exc:  # shown here, not in a log console
            self.note.value = f"<b>cannot show this text:</b> {html.escape(str(exc))}"
            self.output.outputs = ()  # no old figure under the new text
            return
        self._fit_window()
        self.redraw()

    def _on_choice(self, change: Any) -> None:
        if self._fitting:
            return
        self._on_window()
        self.redraw()

    def draw(self) -> Figure:
        """The figure for the current choice of view, layer and head (the window's tokens)."""
        layer, head, view = self.layer.value, self.head.value, self.view.value
        first, end = self._window()
        attentions = [a[:, :, first:end, first:end] for a in self.attentions]
        tokens, b = self.tokens[first:end], self.sentence_b_start
        b = b - first if b is not None and first < b < end else None  # segment B in the window
        if view == "model view":  # one image for every head of every layer: fast to redraw
            num_layers, num_heads = len(attentions), attentions[0].shape[1]
            panels = [
                [attentions[i][0, h].numpy() for h in range(num_heads)] for i in range(num_layers)
            ]
            return attention_grid(
                panels,
                [f"layer {i}" for i in range(num_layers)],
                [f"head {h}" for h in range(num_heads)],
                "every head of every layer, one colour scale (rows: queries, columns: keys)\n"
                "choose a layer and a head to see the tokens",
            )
        if view == "head view":
            heads = None if head == "all" else [head]
            return head_view(attentions, tokens, layer, heads, sentence_b_start=b)
        if head == "all":  # one image for the layer's heads, in rows of 4
            num_heads = attentions[0].shape[1]
            heads = [attentions[layer][0, h].numpy() for h in range(num_heads)]
            width = min(4, num_heads)
            blank = np.full_like(heads[0], np.nan)
            heads += [blank] * (-num_heads % width)
            rows = [heads[i : i + width] for i in range(0, len(heads), width)]
            names = [
                [f"head {r * width + c}" if r * width + c < num_heads else "" for c in range(width)]
                for r in range(len(rows))
            ]
            return attention_grid(
                rows,
                title=f"layer {layer}, every head (rows: queries, columns: keys)\n"
                "choose one head to see the tokens",
                panel_names=names,
            )
        return attention_heatmap(attentions, tokens, layer, head)

    def redraw(self) -> None:
        """Draw the current choice and show it (as a PNG) in the output area."""
        import base64
        import io

        import matplotlib.pyplot as plt

        fig = self.draw()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=80, bbox_inches="tight")
        plt.close(fig)  # shown through the output widget only, not again by the inline backend
        self.figure = fig
        png = self._png = base64.b64encode(buffer.getvalue()).decode("ascii")
        self.output.outputs = (
            {
                "output_type": "display_data",
                "data": {"image/png": png, "text/plain": repr(self)},
                "metadata": {},
            },
        )

    def __repr__(self) -> str:
        layers, heads = len(self.attentions), self.attentions[0].shape[1]
        return (
            f"AttentionExplorer({layers} layers x {heads} heads, {len(self.tokens)} tokens): "
            "the explorer's controls appear when this cell runs in a live notebook"
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = repr(self)
        bundle["image/png"] = self._png  # what a static page (the course site, nbconvert) shows
        return bundle


def explore(
    model: Any, tokenizer: Any, text: str, text_pair: str | None = None
) -> AttentionExplorer:
    """An interactive attention explorer: text box(es), layer, head (or all), and view selectors.

    ``model`` is any minibert (or Hugging Face, eager attention) BERT; ``tokenizer`` minibert's or
    Hugging Face's BertTokenizer. Views: one head's heatmap (or all heads of a layer), the head
    view, the model view; the figure is redrawn whenever a control changes.
    """
    return AttentionExplorer(model, tokenizer, text, text_pair)


def encoder_layer_diagram() -> Figure:
    """One post-LN encoder layer as a block diagram, beside the pre-LN variant."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 5.4))
    attention, ffn, norm = "#c6dbef", "#fdd0a2", "#e5e5e5"
    for ax, title, pre_ln in ((axes[0], "BERT's layer (post-LN)", False),
                              (axes[1], "pre-LN (GPT-2 and most models since)", True)):  # fmt: skip
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.axis("off")
        ax.set_title(title, fontsize=11)
        h = 0.07  # box height
        if pre_ln:
            blocks = [(0.10, "LayerNorm", norm), (0.21, "multi-head self-attention", attention),
                      (0.32, "add", "white"), (0.45, "LayerNorm", norm),
                      (0.56, "feed-forward: linear H->4H, GELU, linear 4H->H", ffn),
                      (0.67, "add", "white")]  # fmt: skip
            skips = [(0.075, 0.32), (0.42, 0.67)]  # (from the arrow below, to the add box)
        else:
            blocks = [(0.10, "multi-head self-attention", attention), (0.24, "add & LayerNorm", norm),
                      (0.40, "feed-forward: linear H->4H, GELU, linear 4H->H", ffn),
                      (0.54, "add & LayerNorm", norm)]  # fmt: skip
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
        ax.text(0.93, (skips[0][0] + skips[0][1]) / 2, "residual", rotation=90, color="tab:red",
                fontsize=8.5, va="center")  # fmt: skip
    fig.tight_layout()
    return fig


# --- Lesson 4: training curves -----------------------------------------------------------------


_CURVES = (  # (history key, panel title); a panel is drawn when the history has the key
    (("train_loss", "eval_loss"), "loss"),
    (
        ("eval_mask_accuracy", "eval_mask_top5", "eval_nsp_accuracy", "eval_accuracy"),
        "held-out accuracy",
    ),
    (("lr",), "learning rate"),
)


def training_curves(history: Sequence[dict[str, float]], title: str | None = None) -> Figure:
    """Loss, held-out accuracies and learning rate against the step, from train()'s history."""
    import matplotlib.pyplot as plt

    if not history:
        raise ValueError("history is empty: train for at least one step first")
    if "step" not in history[0]:
        raise ValueError(f"history entries need a 'step' key, got keys {sorted(history[0])}")
    panels = [(keys, name) for keys, name in _CURVES if any(k in h for h in history for k in keys)]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.2), squeeze=False)
    for ax, (keys, name) in zip(axes[0], panels):
        for key in keys:
            points = [(h["step"], h[key]) for h in history if key in h]
            if not points:
                continue
            steps, values = zip(*points)
            style = "-" if key.startswith("train") or key == "lr" else "o-"
            ax.plot(steps, values, style, markersize=3, label=key.replace("eval_", "held-out "))
        ax.set_xlabel("step")
        ax.set_title(name)
        if name == "held-out accuracy":
            ax.set_ylim(0, 1)
        if name != "learning rate":
            ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


class LiveCurves:
    """training_curves() redrawn in place in a notebook as training goes (one figure, one output)."""

    def __init__(self) -> None:
        self.handle = None
        self.fig = None

    def update(self, history: Sequence[dict[str, float]]) -> None:
        """Redraw the curves from the history so far."""
        import matplotlib.pyplot as plt

        try:
            from IPython import get_ipython
            from IPython.display import display
        except ImportError:  # plain Python: nothing to draw into
            return
        if get_ipython() is None:
            return
        if self.fig is not None:
            plt.close(self.fig)
        self.fig = training_curves(history)
        if self.handle is None:
            self.handle = display(self.fig, display_id=True)
        else:
            self.handle.update(self.fig)

    def close(self) -> None:
        """Release the figure so the notebook does not show it a second time."""
        import matplotlib.pyplot as plt

        if self.fig is not None:
            plt.close(self.fig)


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


# --- Lesson 6: fine-tuning ---------------------------------------------------------------------


def fine_tuning_diagram() -> Figure:
    """Pretraining vs fine-tuning: the same embeddings, encoder and pooler; a new classifier."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    pretrained, new = "#c6dbef", "#fdd0a2"
    panels = (
        ("1. pretraining (lessons 4-5)", "Wikipedia: [CLS] A [SEP] B [SEP]",
         "NSP head: linear, 2 classes", pretrained,
         "millions of unlabelled sentences; lr ~1e-4, long"),
        ("2. fine-tuning (this lesson)", 'a review: "[CLS] a gem of a film [SEP]"',
         "classifier: dropout + linear, one\nlogit per label (new, random)", new,
         "thousands of labelled snippets; every weight trained,\nlr 2e-5 to 5e-5, 2-4 epochs"),
    )  # fmt: skip
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
        _box(ax, 0.1, 0.3, 0.8, 0.13, "encoder: N x (self-attention, add & norm,\nfeed-forward, add & norm)", pretrained)  # fmt: skip
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
    handles = [Patch(fc=pretrained, ec="black", lw=0.8, label="weights learned in pretraining"),
               Patch(fc=new, ec="black", lw=0.8, label="new weights, random at the start")]  # fmt: skip
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=8.5, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
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
        ax.text(0.01, value, name, va="bottom", fontsize=7, color="grey",
                transform=ax.get_yaxis_transform())  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlabel("labelled training examples")
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
