"""Measure the course checkpoint and write its model card: data/course_checkpoint/README.md.

    python benchmarks/course_checkpoint_card.py --wall-seconds 2530 --commit abc1234

Re-measures on the held-out articles (never trained on): the checkpoint, an untrained model of
the same size, and predicting the most frequent training token; draws the learning curves from
history.json; records the SHA-256 of the weights and the held-out MLM accuracy on a fixed subset
(the first 256 held-out examples), which tests/test_course_checkpoint.py re-measures.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import platform
from pathlib import Path

import torch

from minibert import corpora, pretraining, set_seed
from minibert.model import BertForPreTraining
from minibert.tokenization import BertTokenizer
from minibert.training import evaluate

FOLDER = Path(__file__).resolve().parent.parent / "data" / "course_checkpoint"
SUBSET = 256  # held-out examples re-measured by the test


def measure(model, data, tok) -> dict[str, float]:
    collate = lambda batch: pretraining.collate(batch, tok.pad_token_id)  # noqa: E731
    return evaluate(model, data, batch_size=64, collate_fn=collate)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--wall-seconds", type=float, required=True, help="wall time of pretraining"
    )
    parser.add_argument("--commit", required=True, help="the commit the checkpoint was trained at")
    parser.add_argument("--command", required=True, help="the exact pretraining command")
    args = parser.parse_args()

    tok = BertTokenizer.from_pretrained(FOLDER)
    model = BertForPreTraining.from_pretrained(FOLDER)
    history = json.loads((FOLDER / "history.json").read_text())
    heldout = pretraining.heldout_dataset(corpora.wikipedia_articles("heldout"), tok, seed=1)
    subset = torch.utils.data.Subset(heldout, range(SUBSET))

    trained = measure(model, heldout, tok)
    trained_subset = measure(model, subset, tok)
    set_seed(0)
    untrained = measure(BertForPreTraining(model.config), heldout, tok)

    # the most frequent non-special token of the training articles, predicted at every mask
    train_docs = pretraining.tokenize_documents(corpora.wikipedia_articles("train"), tok)
    counts = collections.Counter(t for doc in train_docs for s in doc for t in s)
    top_id, _ = counts.most_common(1)[0]
    labels = [lab for i in range(len(heldout)) for lab in heldout[i]["mlm_labels"] if lab != -100]
    nsp = [heldout[i]["next_sentence_label"] for i in range(len(heldout))]
    majority = max(set(nsp), key=nsp.count)
    frequent = {
        "mlm_accuracy": sum(lab == top_id for lab in labels) / len(labels),
        "nsp_accuracy": nsp.count(majority) / len(nsp),
    }

    from minibert.viz import training_curves

    fig = training_curves(history, title="course checkpoint: pretraining on Wikipedia (CPU)")
    fig.savefig(FOLDER / "curves.png", dpi=110)

    weights = (FOLDER / "model.safetensors").read_bytes()
    card = {
        "command": args.command,
        "commit": args.commit,
        "seed": 0,
        "wall_seconds": round(args.wall_seconds),
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads, torch {torch.__version__}",
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab_size": len(tok.vocab),
        "config": model.config.to_dict(),
        "heldout_examples": len(heldout),
        "heldout_masked_tokens": len(labels),
        "trained": trained,
        "untrained": untrained,
        "most_frequent_token": {**frequent, "token": tok.convert_ids_to_tokens(top_id)},
        "subset": {"examples": SUBSET, "mlm_accuracy": trained_subset["mlm_accuracy"]},
        "sha256": {"model.safetensors": hashlib.sha256(weights).hexdigest()},
        "steps": history[-1]["step"],
        "examples_seen": history[-1]["examples"],
    }
    (FOLDER / "card.json").write_text(json.dumps(card, indent=1) + "\n")
    (FOLDER / "README.md").write_text(render(card))
    print(
        json.dumps(
            {k: card[k] for k in ("trained", "untrained", "most_frequent_token", "subset")},
            indent=1,
        )
    )


def render(card: dict) -> str:
    t, u, f = card["trained"], card["untrained"], card["most_frequent_token"]
    met = t["mlm_accuracy"] >= 0.30 and t["nsp_accuracy"] >= 0.80 and card["wall_seconds"] <= 2700
    if met:
        targets_text = "This run meets them."
    else:
        targets_text = (
            f"This run does not: {t['mlm_accuracy']:.1%} MLM and {t['nsp_accuracy']:.1%} NSP "
            f"accuracy after {card['wall_seconds'] / 60:.0f} minutes. The curves show where it "
            "stands: after about 1,000 steps the held-out MLM accuracy sits near 13%, three times "
            "the most-frequent-token baseline (the model predicts frequent tokens by their "
            "position and neighbours) but it has not yet learned to use the wider context, the "
            "early plateau small post-LN BERTs are known to sit on; NSP has only begun to rise. "
            f"{card['steps']:,} steps of 32 sequences is what fits into the time at 1.0 to 1.2 "
            "steps per second on 2 cores. A recipe that leaves the plateau sooner (learning rate, "
            "dropout, sequence length, chosen with short measured runs) is the next step."
        )
    minutes = card["wall_seconds"] / 60
    c = card["config"]
    return f"""# The course checkpoint: a mini BERT pretrained on Wikipedia on a 2-core CPU

A BERT of the `mini` preset ({c["num_layers"]} layers, {c["hidden_size"]} hidden, {c["num_heads"]} heads,
{c["intermediate_size"]} intermediate; {card["parameters"]:,} parameters) with a WordPiece vocabulary of
{card["vocab_size"]:,} pieces trained by `minibert.train_wordpiece` on the 97 training articles of the
course's Wikipedia extract, pretrained with masked language modelling and next sentence
prediction by the package's own command. Lessons 4 to 6 load it. Saved with `save_pretrained`, so
`transformers.BertForPreTraining.from_pretrained` loads it too.

## How it was made

```bash
{card["command"]}
```

- commit `{card["commit"]}`, seed {card["seed"]}, {card["steps"]:,} steps of 32 examples of up to 128 tokens
  ({card["examples_seen"]:,} examples seen), AdamW lr 1e-3, 10% warm-up then linear decay,
  dynamic masking, dupe factor 5
- wall time {minutes:.1f} minutes (the whole command: vocabulary training, data, training,
  evaluation) on {card["machine"]}, no GPU
- data: the 97 training articles of the gensim 4.4.0 Wikipedia extract (CC BY-SA 3.0); the 9
  held-out articles were never trained on

## Held-out results

Measured on the held-out articles ({card["heldout_examples"]:,} examples, {card["heldout_masked_tokens"]:,} masked
tokens, one fixed mask) by `python benchmarks/course_checkpoint_card.py`:

| model | MLM loss | MLM accuracy | NSP loss | NSP accuracy |
|---|---|---|---|---|
| this checkpoint | {t["mlm_loss"]:.3f} | {t["mlm_accuracy"]:.1%} | {t["nsp_loss"]:.3f} | {t["nsp_accuracy"]:.1%} |
| untrained model of the same size | {u["mlm_loss"]:.3f} | {u["mlm_accuracy"]:.1%} | {u["nsp_loss"]:.3f} | {u["nsp_accuracy"]:.1%} |
| always the most frequent token (`{f["token"]}`), majority NSP label | | {f["mlm_accuracy"]:.1%} | | {f["nsp_accuracy"]:.1%} |

For comparison, d2l's BERT pretraining reports an MLM loss of about 5.9 and an NSP loss of about
0.76 on WikiText-2 (its training batches, after 50 steps on 2 GPUs). The course targets were an
MLM accuracy of at least 30% and an NSP accuracy of at least 80% on the held-out articles.

The first {card["subset"]["examples"]} held-out examples give an MLM accuracy of {card["subset"]["mlm_accuracy"]:.4f};
`tests/test_course_checkpoint.py` re-measures that and checks the SHA-256 of `model.safetensors`:
`{card["sha256"]["model.safetensors"]}`.

## Against the course's targets

The targets were a held-out MLM accuracy of at least 30% and an NSP accuracy of at least 80% with
at most 45 minutes of training on this machine. {targets_text}

![learning curves](curves.png)

## Files

`config.json`, `model.safetensors` (the weights), `vocab.txt`, `tokenizer_config.json`,
`special_tokens_map.json` (the tokenizer), `history.json` (every step's training loss and
learning rate, the held-out metrics every 250 steps), `curves.png`, `card.json` (these numbers).
"""


if __name__ == "__main__":
    main()
