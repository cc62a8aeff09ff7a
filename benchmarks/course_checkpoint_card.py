"""Measure the course checkpoint and write its model card: data/course_checkpoint/README.md.

    python benchmarks/course_checkpoint_card.py --wall-seconds 5400 --commit abc1234 \
        --command "minibert pretrain ..."

Everything is measured on the held-out articles (never trained on). MLM: top-1 and top-5
accuracy at the [MASK] positions (the headline: a model cannot copy there) and top-1 at every
chosen position, for the checkpoint, an untrained model of the same size, the most frequent
training token, copying the visible token (else the most frequent) and the n-gram table, all at
the same positions of the same fixed mask. NSP: on the held-out pairs of the pretraining data
(Google-style segments, negatives from another article) and on d2l-style single-sentence pairs,
beside the majority label and the TF-IDF topic baseline (threshold fitted on training pairs).
Also: the neighbour attention of every head, the learning curves against the plain-BERT candidate
of benchmarks/pretraining_recipes.py, transformers' loading of the folder, and the [MASK] accuracy
on a fixed subset (the first 256 held-out examples) that tests/test_course_checkpoint.py
re-measures. The recipe is read from the folder's recipe.json, written by `minibert pretrain`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
from collections.abc import Sequence
from pathlib import Path

import torch
from common.english_runs import accuracy, difference, heldout_sets, mask_hits, ngram_hits
from common.measures import measure, nsp_measures, transformers_check

from minibert import corpora, pretraining, set_seed
from minibert.model import BertForPreTraining
from minibert.recipes.outputs import add_to_manifest
from minibert.recipes.shared import load_corpus
from minibert.teaching.baselines import NgramTable, mlm_baselines
from minibert.tokenization import BertTokenizer

FOLDER = Path(__file__).resolve().parent.parent / "data" / "course_checkpoint"
RECIPES = Path(__file__).resolve().parent / "results" / "pretraining_recipes.json"
SUBSET = 256  # held-out examples re-measured by the test
CORPUS_WORDS = {  # a recipe's corpus -> (what it read, in the card's words; in the curve's words)
    "wikipedia": (
        "the 97 training articles of the gensim 4.4.0 Wikipedia extract (CC BY-SA 3.0)",
        "97 training articles",
    ),
    "english": (
        "`english_corpus`: the extract's 97 training articles and the English text that ships "
        "in registry packages (Wikipedia lead sections of vital articles, the Brown corpus, the "
        "State of the Union addresses, NLTK's Project Gutenberg texts), cleaned and deduplicated "
        "with any paragraph sharing a 13-gram with a held-out article or a review removed "
        "(data/english_corpus.md counts each step)",
        "training text",
    ),
    "english-modern": (
        "`english_corpus` without its archaic Gutenberg texts (data/english_corpus.md)",
        "training text",
    ),
}


def source_slices(model: BertForPreTraining, tok: BertTokenizer, train_docs: list) -> dict:
    """[MASK] top-1 on each source's held-out slice beside the n-gram table of the same words,
    the difference with its 95% paired bootstrap interval over the slice's examples."""
    sets = heldout_sets(tok)
    table = NgramTable(train_docs)
    out = {}
    for name, data in sets.items():
        mine, table_hits = mask_hits(model.eval(), data, tok), ngram_hits(table, data, tok)
        out[name] = {
            "examples": len(data),
            "mask_positions": sum(c for _, c in mine),
            "model": round(accuracy(mine), 4),
            "ngram": round(accuracy(table_hits), 4),
            "minus_ngram": difference(table_hits, mine),
        }
    return out


def headline(model: BertForPreTraining, items: list, tok: BertTokenizer, train_docs: list) -> dict:
    """The held-out articles' [MASK] top-1 minus the n-gram table's, with its 95% interval."""
    mine, table_hits = (
        mask_hits(model.eval(), items, tok),
        ngram_hits(NgramTable(train_docs), items, tok),
    )
    return {
        "model": accuracy(mine),
        "ngram": accuracy(table_hits),
        "minus_ngram": difference(table_hits, mine),
    }


@torch.no_grad()
def neighbour_attention(model: BertForPreTraining, heldout: Sequence, tok: BertTokenizer) -> dict:
    """Per head, the mean attention a token pays its left plus right neighbour (Clark et al.)."""
    from minibert.teaching.viz import attention_summary

    batch = pretraining.collate([heldout[i] for i in range(SUBSET)], tok.pad_token_id)
    out = model.eval()(
        batch["input_ids"], batch["token_type_ids"], batch["attention_mask"], output_attentions=True
    )
    summary = attention_summary(
        out.attentions, batch["input_ids"], {"[SEP]": tok.sep_token_id}, batch["attention_mask"]
    )
    real = batch["attention_mask"].sum(-1).float()
    return {
        "to_previous": summary["to previous"].round(decimals=4).tolist(),  # (layers, heads)
        "to_next": summary["to next"].round(decimals=4).tolist(),
        "uniform": float((1 / real).mean()),
    }


def describe_curve(history: list[dict], ngram: float, read: str = "97 training articles") -> str:
    """The held-out curve in words: where it crossed the n-gram table and the targets."""
    evals = [h for h in history if "eval_mask_accuracy" in h]

    def when(key: str, level: float, what: str) -> str:
        step = next((h["step"] for h in evals if h[key] >= level), None)
        return f"{what} at step {step:,}" if step else f"never {what}"

    every = max(1, len(evals) // 12)  # about a dozen points in words; the figure has them all
    shown = evals[::every] + ([evals[-1]] if (len(evals) - 1) % every else [])
    points = ", ".join(f"{h['step']:,}: {h['eval_mask_accuracy']:.1%}" for h in shown)
    last = [h["train_loss"] for h in history[-500:]]
    low = min(evals, key=lambda h: h["eval_nsp_loss"])
    return (
        f"Held-out top-1 accuracy at [MASK] by step: {points}. It "
        f"{when('eval_mask_accuracy', ngram, f'passed the n-gram table ({ngram:.1%})')}, "
        f"{when('eval_mask_accuracy', 0.25, 'reached 25%')} and "
        f"{when('eval_mask_accuracy', 0.30, 'reached 30%')}; NSP accuracy "
        f"{when('eval_nsp_accuracy', 0.85, 'reached 85%')} (it ends at "
        f"{evals[-1]['eval_nsp_accuracy']:.1%}). Over the last {len(last)} steps the training "
        f"loss averaged {sum(last) / len(last):.2f} against a held-out loss of "
        f"{evals[-1]['eval_loss']:.2f} at the end: part of what it learns is particular to its "
        f"{read} (it trains without dropout) and does not carry over. The held-out "
        f"NSP loss is lowest at step {low['step']:,} ({low['eval_nsp_loss']:.3f}) and "
        f"{evals[-1]['eval_nsp_loss']:.3f} at the end: NSP accuracy still creeps up while its "
        "loss grows, the sign of a head that becomes over-confident on the training articles."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--wall-seconds", type=float, required=True, help="wall time of the pretraining command"
    )
    parser.add_argument("--commit", required=True, help="the commit the checkpoint was trained at")
    parser.add_argument("--command", required=True, help="the exact pretraining command")
    parser.add_argument("--folder", type=Path, default=FOLDER, help="the checkpoint folder")
    parser.add_argument("--note", default="", help="how the run actually went, if not in one go")
    args = parser.parse_args()
    folder = args.folder

    recipe = json.loads((folder / "recipe.json").read_text())
    tok = BertTokenizer.from_pretrained(folder)
    model = BertForPreTraining.from_pretrained(folder)
    history = json.loads((folder / "history.json").read_text())
    heldout = pretraining.heldout_dataset(
        corpora.wikipedia_articles("heldout"), tok, recipe["max_len"], seed=1
    )
    items = [heldout[i] for i in range(len(heldout))]
    subset = torch.utils.data.Subset(heldout, range(SUBSET))

    trained = measure(model, heldout, tok)
    set_seed(0)
    untrained = measure(BertForPreTraining(model.config), heldout, tok)
    # the n-gram table reads the words the checkpoint read (the recipe's corpus)
    corpus = str(recipe.get("corpus", "wikipedia"))
    if corpus not in CORPUS_WORDS:
        raise SystemExit(f"the card describes runs on {sorted(CORPUS_WORDS)}, not {corpus!r}")
    train_texts = load_corpus(corpus)[0]
    train_docs = pretraining.tokenize_documents(train_texts, tok)
    baselines = mlm_baselines(items, train_docs, tok)
    n_mask = sum(i == tok.mask_token_id for item in items for i in item["input_ids"])
    n_chosen = sum(lab != -100 for item in items for lab in item["mlm_labels"])

    weights = (folder / "model.safetensors").read_bytes()
    card = {
        "command": args.command,
        "note": args.note,
        "commit": args.commit,
        "wall_seconds": round(args.wall_seconds),
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads, torch {torch.__version__}",
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab_size": len(tok.vocab),
        "config": model.config.to_dict(),
        "recipe": recipe,
        "heldout_examples": len(heldout),
        "heldout_mask_positions": n_mask,
        "heldout_chosen_positions": n_chosen,
        "trained": trained,
        "untrained": untrained,
        "baselines": baselines,
        "nsp": nsp_measures(model, tok, recipe),
        "curve": describe_curve(
            history, baselines["ngram"]["mask_accuracy"], CORPUS_WORDS[corpus][1]
        ),
        "headline": headline(model, items, tok, train_docs),
        "training_words": sum(len(" ".join(d.paragraphs).split()) for d in train_texts),
        "slices": source_slices(model, tok, train_docs) if corpus.startswith("english") else None,
        "neighbour_attention": neighbour_attention(model, heldout, tok),
        "transformers": transformers_check(folder, model, heldout, tok),
        "subset": {
            "examples": SUBSET,
            "mask_accuracy": measure(model, subset, tok)["mask_accuracy"],
        },
        "sha256": {"model.safetensors": hashlib.sha256(weights).hexdigest()},
        "steps": history[-1]["step"],
        "examples_seen": history[-1]["examples"],
        "plain_bert": plain_curve(),
        "evals": [
            {k: h[k] for k in ("step", "eval_mask_accuracy", "eval_nsp_accuracy")}
            for h in history
            if "eval_mask_accuracy" in h
        ],
        "folder_bytes": sum(f.stat().st_size for f in folder.iterdir() if f.is_file()),
    }
    plot_curves(history, card, folder / "curves.png")
    (folder / "card.json").write_text(json.dumps(card, indent=1) + "\n")
    (folder / "README.md").write_text(render(card))
    add_to_manifest(folder, ["README.md", "card.json", "curves.png"])  # --overwrite replaces them
    print(json.dumps({k: card[k] for k in ("trained", "baselines", "nsp", "subset")}, indent=1))


def plain_curve() -> dict | None:
    """The plain-BERT candidate of benchmarks/pretraining_recipes.py: same schedule, no guidance."""
    if not RECIPES.exists():
        return None
    results = json.loads(RECIPES.read_text())
    plain = results["candidates"].get("plain")
    return plain and {"source": "benchmarks/pretraining_recipes.py", "curve": plain["curve"]}


def plot_curves(history: list[dict], card: dict, path: Path) -> None:
    """[MASK] accuracy and NSP accuracy by step, beside the plain-BERT candidate and the baselines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    evals = [h for h in history if "eval_mask_accuracy" in h]
    steps = [h["step"] for h in evals]
    fig, (loss, mlm, nsp) = plt.subplots(1, 3, figsize=(13, 3.6))
    loss.plot(
        [h["step"] for h in history],
        [h["train_loss"] for h in history],
        lw=0.3,
        alpha=0.5,
        label="training loss (+ guidance while it lasts)",
    )
    loss.plot(steps, [h["eval_loss"] for h in evals], "o-", ms=2, label="held-out loss")
    mlm.plot(steps, [h["eval_mask_accuracy"] for h in evals], "o-", ms=2, label="top-1 at [MASK]")
    mlm.plot(steps, [h["eval_mask_top5"] for h in evals], "o-", ms=2, label="top-5 at [MASK]")
    nsp.plot(steps, [h["eval_nsp_accuracy"] for h in evals], "o-", ms=2, label="this checkpoint")
    plain = card["plain_bert"]
    if plain:  # the plain-BERT candidate: same schedule, no guidance
        s = [p["step"] for p in plain["curve"]]
        mlm.plot(
            s, [p["mask_accuracy"] for p in plain["curve"]], "k.-", ms=2, label="plain BERT, top-1"
        )
        nsp.plot(s, [p["nsp_accuracy"] for p in plain["curve"]], "k.-", ms=2, label="plain BERT")
    b = card["baselines"]
    mlm.axhline(b["ngram"]["mask_accuracy"], color="grey", ls="--", label="n-gram table")
    mlm.axhline(b["most_frequent"]["mask_accuracy"], color="grey", ls=":", label='always "the"')
    nsp.axhline(card["nsp"]["segments"]["tfidf_topic"], color="grey", ls="--", label="TF-IDF topic")
    nsp.axhline(card["nsp"]["segments"]["majority"], color="grey", ls=":", label="majority label")
    for ax, title in ((loss, "loss"), (mlm, "held-out MLM"), (nsp, "held-out NSP accuracy")):
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def render(card: dict) -> str:
    t, u, b, n = card["trained"], card["untrained"], card["baselines"], card["nsp"]
    r, c, hf = card["recipe"], card["config"], card["transformers"]
    minutes = card["wall_seconds"] / 60
    warmup = r["warmup_steps"] if r["warmup_steps"] is not None else max(1, r["steps"] // 10)
    ngram = b["ngram"]["mask_accuracy"]
    s, w = n["segments"], n["sentences"]
    corpus = str(r.get("corpus", "wikipedia"))
    h = card.get("headline")
    met = {
        "[MASK] top-1 >= 25%": t["mask_accuracy"] >= 0.25,
        f"[MASK] top-1 above the n-gram table ({ngram:.1%})": t["mask_accuracy"] > ngram,
        "NSP >= 85% on the held-out pairs": s["model"] >= 0.85,
        f"NSP above TF-IDF on sentence pairs ({w['tfidf_topic']:.1%})": w["model"]
        > w["tfidf_topic"],
        "folder < 25 MB": card["folder_bytes"] < 25_000_000,
        "at most 2 hours": card["wall_seconds"] <= 7200,
    }
    if corpus != "wikipedia" and h:  # a corpus of millions of words: 8 points over its n-gram
        met[
            "[MASK] top-1 at least 8 points above the same words' n-gram table (the 95% interval's low end)"
        ] = h["minus_ngram"][1] >= 0.08
    targets = "\n".join(f"- {'met' if ok else 'NOT met'}: {what}" for what, ok in met.items())
    guided = (
        f"layer 0's first two heads guided to the previous and next token for the first "
        f"{r['neighbour_steps']:,} steps (score bonus {r['neighbour_bias']:g} and auxiliary loss "
        f"weight {r['neighbour_aux']:g}, both annealed linearly to 0; `minibert.guidance`), "
        "then plain BERT training"
        if r.get("neighbour_steps")
        else "no guidance (plain BERT)"
    )
    nsp_words = (
        ""
        if s["model"] >= 0.85 and w["model"] > w["tfidf_topic"]
        else "\nThe NSP targets are not met: the TF-IDF topic baseline beats the model on both kinds "
        "of held-out pairs. A NotNext B comes from another article (always in the pretraining "
        "pairs, almost always in the sentence pairs), so sharing rare words decides most pairs; a bag of words reads that off directly, while "
        "the model has to learn it through [CLS] and the pooler, and its NSP head overfits the "
        "training articles (below). Lesson 5 looks at what NSP learns.\n"
    )
    plain_words = ""
    if card["plain_bert"]:
        pc = card["plain_bert"]["curve"][-1]
        mine = next(
            (h for h in card["evals"] if h["step"] == pc["step"]), None
        )  # this run at the same step
        plain_words = (
            f"The black curve is plain BERT on the same schedule, its first {pc['step']:,} steps "
            f"(`benchmarks/pretraining_recipes.py`, candidate `plain`): at step {pc['step']:,} it "
            f"is right at {pc['mask_accuracy']:.1%} of the masks"
            + (f", this run at {mine['eval_mask_accuracy']:.1%}." if mine else ".")
        )
    heads = "; ".join(
        f"layer {i}: " + ", ".join(f"{p:.0%}/{q:.0%}" for p, q in zip(prev, nxt))
        for i, (prev, nxt) in enumerate(
            zip(card["neighbour_attention"]["to_previous"], card["neighbour_attention"]["to_next"])
        )
    )
    words = f"{card['training_words']:,} words" if card.get("training_words") else "its text"
    gap = (
        f"\nThe [MASK] top-1 minus the n-gram table's at the same positions: "
        f"{h['minus_ngram'][0]:+.1%} (95% paired bootstrap interval over the held-out examples "
        f"{h['minus_ngram'][1]:+.1%} to {h['minus_ngram'][2]:+.1%}).\n"
        if h
        else ""
    )
    slices = ""
    if card.get("slices"):
        rows = "\n".join(
            f"| {name} | {v['examples']:,} | {v['mask_positions']:,} | {v['model']:.1%} | "
            f"{v['ngram']:.1%} | {v['minus_ngram'][0]:+.1%} [{v['minus_ngram'][1]:+.1%}, "
            f"{v['minus_ngram'][2]:+.1%}] |"
            for name, v in card["slices"].items()
        )
        slices = f"""
Each source's held-out slice (documents never trained on, `english_corpus.heldout_slices`: one
fixed 15% mask on single segments of up to 128 tokens), the same measure beside the n-gram table
of the same training words, the difference with its 95% paired bootstrap interval over examples:

| held-out slice | examples | [MASK] positions | this checkpoint | n-gram table | difference [95%] |
|---|---|---|---|---|---|
{rows}
"""
    data_line = (
        f"{CORPUS_WORDS[corpus][0]}; {words}. The 9 held-out articles of the extract "
        "were never trained on"
    )
    what = "Wikipedia" if corpus == "wikipedia" else "a few million words of English"
    # the lessons' checkpoint (assets.COURSE) is the one on english_corpus; the first stays a point
    which = "The course's first checkpoint" if corpus == "wikipedia" else "The course checkpoint"
    return f"""# {which}: a {r["preset"]} BERT pretrained on {what} on a 2-core CPU

A BERT of the `{r["preset"]}` preset ({c["num_layers"]} layers, {c["hidden_size"]} hidden, \
{c["num_heads"]} heads, {c["intermediate_size"]} intermediate; {card["parameters"]:,} parameters) with a \
WordPiece vocabulary of {card["vocab_size"]:,} pieces trained by `minibert.train_wordpiece` on its \
training text ({words}), pretrained with masked language modelling \
and next sentence prediction by the package's own command. It is a \
standard BERT: transformers {hf["transformers"]} loads it with `BertForPreTraining.from_pretrained` \
with {hf["missing_keys"]} missing and {hf["unexpected_keys"]} unexpected keys, and its logits differ \
from minibert's by at most {hf["max_abs_diff_mlm_logits"]:.1e} (MLM) and {hf["max_abs_diff_nsp_logits"]:.1e} (NSP) \
on 16 held-out examples.

## How it was made

```bash
{card["command"]}
```

{card["note"]}

- commit `{card["commit"]}`, seed {r["seed"]}, {card["steps"]:,} steps of {r["batch_size"]} examples of \
up to {r["max_len"]} tokens ({card["examples_seen"]:,} examples seen), AdamW lr {r["lr"]:g} (no decay on \
biases and LayerNorm), {warmup:,} warm-up steps then linear decay, gradient clipping at 1.0, \
dropout {r["dropout"]:g} while pretraining (the saved config.json keeps BERT's {c["hidden_dropout"]:g} \
for fine-tuning), {r["mask_rate"]:.0%} of tokens chosen for MLM (80/10/10), dynamic masking, dupe \
factor {r["dupe_factor"]}
- {guided}
- wall time {minutes:.1f} minutes (the whole command: vocabulary, data, training, evaluation) on \
{card["machine"]}, no GPU
- data: {data_line}

## Held-out results

Masked language modelling on the held-out articles ({card["heldout_examples"]:,} examples, one fixed \
mask choosing 15% of the tokens: {card["heldout_chosen_positions"]:,} chosen positions, of which \
{card["heldout_mask_positions"]:,} show [MASK]; the others keep their token or show a random one). \
The headline is top-1 accuracy at the [MASK] positions, where nothing can be copied; every \
predictor is scored at the same positions of the same masked text:

| predictor | top-1 at [MASK] | top-5 at [MASK] | top-1 at every chosen position | MLM loss |
|---|---|---|---|---|
| **this checkpoint** | **{t["mask_accuracy"]:.1%}** | {t["mask_top5"]:.1%} | {t["chosen_accuracy"]:.1%} | {t["mlm_loss"]:.3f} |
| n-gram table: the most frequent training token between the same two neighbours | {ngram:.1%} | | {b["ngram"]["chosen_accuracy"]:.1%} (copying where not [MASK]) | |
| copy the visible token, else the most frequent | {b["copy_or_frequent"]["mask_accuracy"]:.1%} | | {b["copy_or_frequent"]["chosen_accuracy"]:.1%} | |
| always the most frequent token (`{b["most_frequent"]["token"]}`) | {b["most_frequent"]["mask_accuracy"]:.1%} | {b["most_frequent"]["mask_top5"]:.1%} | {b["most_frequent"]["chosen_accuracy"]:.1%} | |
| untrained model of the same size | {u["mask_accuracy"]:.1%} | {u["mask_top5"]:.1%} | {u["chosen_accuracy"]:.1%} | {u["mlm_loss"]:.3f} |
{gap}{slices}
Next sentence prediction, beside the majority label and a bag-of-words topic baseline (cosine of
the TF-IDF vectors of A and B over a threshold fitted on training pairs; it ignores word order):

| held-out pairs | this checkpoint | TF-IDF topic | majority label |
|---|---|---|---|
| the pretraining data's pairs: segments filling {r["max_len"]} tokens, negatives from another article ({s["pairs"]:,}) | {s["model"]:.1%} | {s["tfidf_topic"]:.1%} | {s["majority"]:.1%} |
| d2l-style single-sentence pairs, negatives from any sentence ({w["pairs"]:,}) | {w["model"]:.1%} | {w["tfidf_topic"]:.1%} | {w["majority"]:.1%} |

The first {card["subset"]["examples"]} held-out examples give a top-1 accuracy at [MASK] of \
{card["subset"]["mask_accuracy"]:.4f}; `tests/test_course_checkpoint.py` re-measures that and checks the \
SHA-256 of `model.safetensors`: `{card["sha256"]["model.safetensors"]}`.

## Against the course's targets

{targets}
{nsp_words}
{card["curve"]}

![learning curves](curves.png)

{plain_words}

What the heads do on the first {SUBSET} held-out examples (`minibert.viz.attention_summary`): the \
attention a token pays its previous/next token, per layer and head: {heads} (spread evenly it \
would be {card["neighbour_attention"]["uniform"]:.1%} each). The guidance is gone from the saved \
model; what is left is what the heads learned to do themselves.

## Files

`config.json`, `model.safetensors` (the weights), `vocab.txt`, `tokenizer_config.json`,
`special_tokens_map.json` (the tokenizer), `recipe.json` (every option of the command),
`history.json` (every step's training loss and learning rate, the held-out measures every
{r["eval_every"]:,} steps), `curves.png`, `card.json` (these numbers).
"""


if __name__ == "__main__":
    main()
