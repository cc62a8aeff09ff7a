"""The attention explorer: a model's attention on any text, under a reader's hands (lesson 3).

    explorer = explore(model, tokenizer, "The bank raised its rates.", "We sat on the bank.")

Text boxes, layer, head (or all heads) and view (one head's heatmap, bertviz's head view, the
model view) are ipywidgets; each change redraws one figure, shown as a PNG, so a static page (the
course site, nbconvert) shows the figure on show. ipywidgets is imported only when an explorer is
made. The figures come from ``minibert.teaching.viz``; ``attention_grid`` draws many heads as
one image.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from minibert.teaching.viz import attention_heatmap, head_view
from minibert.utils import evaluating

if TYPE_CHECKING:
    from matplotlib.figure import Figure


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
        if out.attentions is None:  # Hugging Face's fused (sdpa) attention returns no weights
            raise ValueError(
                "the model returned no attention weights; load a Hugging Face model with "
                "attn_implementation='eager'."
            )
        # one (1, heads, seq, seq) float32 CPU tensor per layer
        self.attentions = tuple(
            a.detach().to(device="cpu", dtype=torch.float32) for a in out.attentions
        )
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
