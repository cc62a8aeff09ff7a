"""Measure the review-adapted course checkpoint and write its card: data/course_reviews/README.md.

    python benchmarks/course_reviews_card.py --wall-seconds 1180 --commit 613e916 \
        --command "minibert pretrain --init course --corpus reviews ..."

The folder is the course checkpoint (data/course_checkpoint) continued with MLM on the review text
of the training movies (`minibert pretrain --init course --corpus reviews`). Measured here:
[MASK] top-1 on the held-out part of that text (training movies held out by title; no dev or
test movie's text, no label) beside the course checkpoint it started from, an n-gram table and
the most frequent token at the same positions; the same on the held-out Wikipedia articles (what
it kept of its first domain); transformers' loading of the folder; and, read from
benchmarks/results/finetuning_shapes.json, its Rotten Tomatoes rows beside the course
checkpoint's and scratch's. tests/test_course_reviews.py re-measures a subset and checks the checksum.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
from pathlib import Path

import torch
from common.measures import measure, mlm_on_reviews, transformers_check

from minibert import assets, corpora, pretraining
from minibert.model import BertForPreTraining
from minibert.recipes.outputs import add_to_manifest
from minibert.tokenization import BertTokenizer

FOLDER = assets.course_checkpoint("course-reviews")
SHAPES = Path(__file__).resolve().parent / "results" / "finetuning_shapes.json"
SUBSET = 64  # held-out review examples re-measured by the test


def heldout_reviews(tok: BertTokenizer, max_len: int) -> pretraining.PretrainingDataset:
    """The held-out review text (training movies held out by title), masked once (seed 1)."""
    from minibert.recipes import load_corpus

    _, heldout = load_corpus("reviews")
    return pretraining.heldout_dataset(heldout, tok, max_len, objective="none", seed=1)


def finetuning_rows() -> dict:
    """Rotten Tomatoes test accuracy (mean, spread, lr) of scratch, course and course-reviews at
    every size the grid ran them."""
    if not SHAPES.exists():
        return {}
    table = json.loads(SHAPES.read_text()).get("table", {}).get("rotten-tomatoes", {})
    return {
        name: {n: {k: row[k] for k in ("mean", "std", "lr")} for n, row in table[name].items()}
        for name in ("scratch", "course", "course-reviews")
        if name in table
    }


def plot_curve(history: list[dict], card: dict, path: Path) -> None:
    """Held-out [MASK] top-1 on review text by step, beside where it started and the baselines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    evals = [h for h in history if "eval_mask_accuracy" in h]
    r = card["reviews"]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(
        [0] + [h["step"] for h in evals],
        [r["course"]["top1"]] + [h["eval_mask_accuracy"] for h in evals],
        "o-",
        ms=3,
        label="continued on review text (top-1 at [MASK])",
    )
    ax.axhline(r["ngram_table"], color="grey", ls="--", label="n-gram table")
    ax.axhline(r["most_frequent"], color="grey", ls=":", label="most frequent token")
    ax.set(
        xlabel="step of continued pretraining",
        ylabel="held-out review text",
        title="[MASK] top-1 on review text of held-out movies",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wall-seconds", type=float, required=True, help="the command's wall time")
    parser.add_argument("--commit", required=True, help="the commit the checkpoint was trained at")
    parser.add_argument("--command", required=True, help="the exact pretraining command")
    parser.add_argument("--note", default="", help="how the run actually went, if not in place")
    args = parser.parse_args()

    recipe = json.loads((FOLDER / "recipe.json").read_text())
    history = json.loads((FOLDER / "history.json").read_text())
    tok = BertTokenizer.from_pretrained(FOLDER)
    model = BertForPreTraining.from_pretrained(FOLDER)
    start = BertForPreTraining.from_pretrained(assets.course_checkpoint("course"))
    reviews = mlm_on_reviews(str(FOLDER))
    reviews["course"] = mlm_on_reviews("course")["model"]
    wiki = pretraining.heldout_dataset(
        corpora.wikipedia_articles("heldout"), tok, recipe["max_len"], seed=1
    )
    held = heldout_reviews(tok, recipe["max_len"])
    subset = torch.utils.data.Subset(held, range(SUBSET))
    card = {
        "command": args.command,
        "note": args.note,
        "commit": args.commit,
        "wall_seconds": round(args.wall_seconds),
        "machine": f"{platform.machine()}, torch {torch.__version__}, {recipe['threads']} thread(s)",
        "parameters": sum(p.numel() for p in model.parameters()),
        "recipe": recipe,
        "heldout_review_examples": len(held),
        "reviews": reviews,
        "wikipedia": {
            "this": measure(model, wiki, tok)["mask_accuracy"],
            "course": measure(start, wiki, tok)["mask_accuracy"],
        },
        "transformers": transformers_check(FOLDER, model, held, tok),
        "subset": {
            "examples": SUBSET,
            "mask_accuracy": measure(model, subset, tok)["mask_accuracy"],
        },
        "finetuning": finetuning_rows(),
        "sha256": {
            "model.safetensors": hashlib.sha256(
                (FOLDER / "model.safetensors").read_bytes()
            ).hexdigest()
        },
        "folder_bytes": sum(f.stat().st_size for f in FOLDER.iterdir() if f.is_file()),
    }
    plot_curve(history, card, FOLDER / "curves.png")
    (FOLDER / "card.json").write_text(json.dumps(card, indent=1) + "\n")
    (FOLDER / "README.md").write_text(render(card))
    add_to_manifest(FOLDER, ["README.md", "card.json", "curves.png"])  # --overwrite replaces them
    print(json.dumps({k: card[k] for k in ("reviews", "wikipedia", "subset")}, indent=1))


def render(card: dict) -> str:
    r, w, hf, rec = card["reviews"], card["wikipedia"], card["transformers"], card["recipe"]
    rows = card["finetuning"]
    table = ""
    if rows:
        sizes = sorted(next(iter(rows.values())), key=lambda n: 10**9 if n == "all" else int(n))
        table = (
            "\n## Fine-tuned on the labelled reviews\n\nTest accuracy on Rotten Tomatoes (split by "
            "movie), mean +- spread over seeds 1 and 2 at the learning rate seed 0 chose on dev "
            "(`benchmarks/finetuning_shapes.py`; the full table, with MiniLM and the baselines, is "
            "on the course site's results page):\n\n"
            f"| labelled examples | {' | '.join(n if n == 'all' else f'{int(n):,}' for n in sizes)} |\n"
            f"|---|{'---|' * len(sizes)}\n"
            + "".join(
                f"| {name} | "
                + " | ".join(f"{p[n]['mean']:.1%} +- {p[n]['std']:.1%}" for n in sizes)
                + " |\n"
                for name, p in rows.items()
            )
        )
    return f"""# course-reviews: the course checkpoint, continued on review text

The course checkpoint (`data/course_checkpoint`: a `tiny` BERT, 2 layers, 128 hidden, 2 heads,
{card["parameters"]:,} parameters, pretrained with MLM and NSP on the course's Wikipedia extract)
continued with masked language modelling on the review text of the Rotten Tomatoes *training*
movies: task-adaptive pretraining (Gururangan et al., ACL 2020). Same architecture, same
8,000-piece vocabulary; only the weights moved. Lesson 8 and `minibert finetune --model
course-reviews` use it. transformers {hf["transformers"]} loads it with `BertForPreTraining`
with {hf["missing_keys"]} missing and {hf["unexpected_keys"]} unexpected keys; its MLM logits
differ from minibert's by at most {hf["max_abs_diff_mlm_logits"]:.1e} on 16 held-out examples.

## How it was made

```bash
{card["command"]}
```
{card["note"] and chr(10) + card["note"] + chr(10)}
- commit `{card["commit"]}`, seed {rec["seed"]}, {rec["steps"]:,} steps of {rec["batch_size"]}
  examples of up to {rec["max_len"]} tokens, AdamW lr {rec["lr"]:g} with a 10% warm-up and linear
  decay, dropout 0 while pretraining, 15% of tokens chosen (80/10/10), MLM only (a document
  here is one movie's snippets, one sentence each: NSP would have nothing to learn)
- wall time {card["wall_seconds"] / 60:.1f} minutes on {card["machine"]}, no GPU
- data: the snippets of the 10,233-snippet training split, grouped by movie, without their labels
  (`minibert.corpora.review_documents("train")`); the movies held out below are training movies
  held out by title; no text of a dev or test movie and no label was ever seen

## Held-out results

[MASK] top-1 on the review text of the held-out training movies ({r["mask_positions"]:,} [MASK]
positions of one fixed mask), every predictor at the same positions:

| predictor | top-1 at [MASK] |
|---|---|
| **this checkpoint** | **{r["model"]["top1"]:.1%}** (top-5 {r["model"]["top5"]:.1%}) |
| n-gram table: the most frequent training token between the same two neighbours | {r["ngram_table"]:.1%} |
| the course checkpoint it started from (Wikipedia only) | {r["course"]["top1"]:.1%} |
| always the most frequent token | {r["most_frequent"]:.1%} |

What it kept of Wikipedia: [MASK] top-1 on the held-out articles {w["this"]:.1%}, against
{w["course"]:.1%} for the course checkpoint.

The first {card["subset"]["examples"]} held-out review examples give {card["subset"]["mask_accuracy"]:.4f};
`tests/test_course_reviews.py` re-measures that and checks the SHA-256 of `model.safetensors`:
`{card["sha256"]["model.safetensors"]}`.
{table}
## Files

`model.safetensors`, `config.json` (BERT's 0.1 dropout kept for fine-tuning), `vocab.txt` and
the tokenizer files (the course checkpoint's), `recipe.json` (every option of the command),
`history.json` (loss per step, held-out measures every 500 steps), `curves.png`, `card.json`
(everything above, as measured by `benchmarks/course_reviews_card.py`); {card["folder_bytes"] / 1e6:.1f} MB.

## Licence

Derived from Wikipedia text (CC BY-SA 3.0: attribute "Wikipedia contributors") and from the
review snippets released by Pang and Lee (cite: Seeing stars, ACL 2005).
"""


if __name__ == "__main__":
    main()
