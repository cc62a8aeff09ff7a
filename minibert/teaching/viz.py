"""Plots of attention and training that need no JavaScript, and measures of what heads attend to.

- attention maps: ``attention_heatmap`` (one head), ``attention_heads`` (every head of a layer),
  ``model_view`` (every layer and head), ``head_view`` (bertviz's lines), ``to_bertviz``;
- attention measures: ``attention_summary`` (what each head attends to, Clark et al. 2019) and
  ``top_heads``;
- training: ``training_curves`` from ``train()``'s history, ``LiveCurves`` to redraw them live.

Every plot returns a matplotlib Figure, so it shows in JupyterLab, VS Code, Colab and in exported
HTML or PDF, and saves to PNG or SVG with ``fig.savefig``. matplotlib is imported inside the
functions, so ``import minibert`` stays light. It serves the lessons, so it lives in the teaching
kit beside their diagrams (``figures``) and the attention explorer (``explorer``); the library
never imports it. ``mb.viz`` and ``from minibert import viz`` name this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


# --- reading attention: the inputs and checks every plot and measure shares ----------------------


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


def _check_heads(heads: Sequence[int] | int | None, num_heads: int) -> list[int]:
    """The heads to draw: all for None, one for an int, else the list, each checked in range."""
    if heads is None:
        return list(range(num_heads))
    if isinstance(heads, (int, np.integer)):
        heads = [heads]
    heads = [_check_index("head", h, num_heads) for h in heads]
    if not heads:
        raise ValueError(f"heads must name at least one head in 0..{num_heads - 1}, got [].")
    return heads


# --- attention maps ------------------------------------------------------------------------------


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
    heads = _check_heads(heads, num_heads)
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
        _segment_divider(ax, ys[first_b] + (1.0 + gap) / 2, ys[-1] - 0.5)
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


def _segment_divider(ax: Axes, y_split: float, bottom: float) -> None:
    """A dashed line between segments A and B, segment B shaded down to ``bottom``, both named."""
    ax.axhline(y_split, color="0.4", linestyle="--", linewidth=1)
    ax.axhspan(bottom, y_split, color="0.93", zorder=0)
    ax.text(0.5, y_split + 0.25, "segment A", ha="center", fontsize=8, color="0.3")
    ax.text(0.5, y_split - 0.45, "segment B", ha="center", fontsize=8, color="0.3")


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


# --- attention measures --------------------------------------------------------------------------


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


# --- training curves -----------------------------------------------------------------------------


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
