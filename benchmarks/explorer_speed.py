"""How long the lesson-3 explorer takes to redraw each view, on MiniLM (6 layers x 12 heads).

    python benchmarks/explorer_speed.py      # writes benchmarks/results/explorer_speed.json

Times ``AttentionExplorer.redraw()`` (draw the figure and encode the PNG the widget shows) for
every view, median of 5, on the sentence pair of notebook 03 and on a long text (a whole
Wikipedia article, cut to MiniLM's 512 positions, shown 40 tokens at a time). For comparison it
also times the labelled figures the explorer drew before (``attention_heads`` and
``model_view``: one Axes per head), rendered the same way.
"""

from __future__ import annotations

import io
import json
import platform
import statistics
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

import minibert  # noqa: E402
from minibert import assets, corpora, viz  # noqa: E402
from minibert.teaching.explorer import AttentionExplorer, explore  # noqa: E402

RESULT = Path(__file__).parent / "results" / "explorer_speed.json"
TEXTS = ("The bank raised its interest rates.", "We sat on the bank of the river.")


def median_seconds(fn, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def render(fig) -> None:
    """What the explorer does with a figure: a PNG at 80 dpi, tight."""
    fig.savefig(io.BytesIO(), format="png", dpi=80, bbox_inches="tight")
    plt.close(fig)


def main() -> None:
    folder = assets.path("minilm")
    model = minibert.BertModel.from_pretrained(folder).eval()
    tok = minibert.BertTokenizer.from_pretrained(folder)
    long_text = " ".join(corpora.wikipedia_articles("heldout")[0].paragraphs)
    rows = []
    for name, texts in (("pair", TEXTS), ("long", (long_text,))):
        e = explore(model, tok, *texts)
        for view, head in (("heatmap", 0), ("heatmap", "all"), ("head view", 0),
                           ("head view", "all"), ("model view", 0)):  # fmt: skip
            e.view.value, e.head.value = view, head
            seconds = median_seconds(e.redraw)
            rows.append({"text": name, "tokens": len(e.tokens), "view": view, "head": head,
                         "seconds": seconds})  # fmt: skip
        e.start.value = e.start.max // 2  # the window moved to the middle: the same cost
        rows.append({"text": name, "tokens": len(e.tokens), "view": "model view, window moved",
                     "head": 0, "seconds": median_seconds(e.redraw)})  # fmt: skip
    e = explore(model, tok, *TEXTS)
    old = {
        "all heads, one Axes per head (attention_heads)": lambda: render(
            viz.attention_heads(e.attentions, e.tokens, 0)
        ),
        "model view, one Axes per head (model_view)": lambda: render(
            viz.model_view(e.attentions, e.tokens)
        ),
    }
    before = {name: median_seconds(fn) for name, fn in old.items()}
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
        },  # fmt: skip
        "window": AttentionExplorer.WINDOW,
        "redraw": rows,
        "labelled_figures": before,
    }
    RESULT.write_text(json.dumps(result, indent=1) + "\n")
    for row in rows:
        print(f"{row['text']:>4} ({row['tokens']} tokens) {row['view']:>10} {str(row['head']):>4}: "
              f"{row['seconds']:.2f} s")  # fmt: skip
    for name, seconds in before.items():
        print(f"{name}: {seconds:.2f} s")


if __name__ == "__main__":
    main()
