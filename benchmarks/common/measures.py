"""What the checkpoint cards and the pretraining benchmarks measure on a pretrained model: MLM
and NSP on held-out text (``measure``, ``nsp_measures``), [MASK] top-1 on the held-out movies'
review text beside its baselines (``mlm_on_reviews``), and transformers' loading of a folder
against minibert's logits (``transformers_check``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from minibert import corpora, pretraining
from minibert.model import BertForPreTraining
from minibert.teaching.baselines import TopicBaseline
from minibert.training import evaluate


def measure(model, data, tok) -> dict[str, float]:
    """MLM (and NSP, where the data has pairs) measures of model on data, 64 at a time."""
    collate = lambda batch: pretraining.collate(batch, tok.pad_token_id)  # noqa: E731
    return evaluate(
        model, data, batch_size=64, collate_fn=collate, metrics_fn=pretraining.metrics_for(tok)
    )


@torch.no_grad()
def transformers_check(folder: Path, model: BertForPreTraining, heldout: Sequence, tok) -> dict:
    """Load the folder with transformers.BertForPreTraining; keys and logits against minibert."""
    import transformers

    theirs, info = transformers.BertForPreTraining.from_pretrained(
        folder, output_loading_info=True, attn_implementation="eager"
    )
    batch = pretraining.collate([heldout[i] for i in range(16)], tok.pad_token_id)
    inputs = {k: batch[k] for k in ("input_ids", "token_type_ids", "attention_mask")}
    ours = model.eval()(**inputs)
    out = theirs.eval()(**inputs)
    real = batch["attention_mask"].bool()
    return {
        "transformers": transformers.__version__,
        "missing_keys": len(info["missing_keys"]),
        "unexpected_keys": len(info["unexpected_keys"]),
        "max_abs_diff_mlm_logits": float(
            (ours.mlm_logits - out.prediction_logits)[real].abs().max()
        ),
        "max_abs_diff_nsp_logits": float(
            (ours.nsp_logits - out.seq_relationship_logits).abs().max()
        ),
    }


def nsp_measures(model, tok, recipe: dict) -> dict:
    """NSP accuracy on held-out Google-style pairs and d2l-style sentence pairs, with baselines."""
    train_docs = pretraining.tokenize_documents(corpora.wikipedia_articles("train"), tok)
    held_docs = pretraining.tokenize_documents(corpora.wikipedia_articles("heldout"), tok)
    max_len = recipe["max_len"]
    sets = {
        "segments": (
            pretraining.create_examples(train_docs, max_len, seed=0),
            pretraining.create_examples(held_docs, max_len, seed=1),  # heldout_dataset's pairs
        ),
        "sentences": (
            pretraining.sentence_pairs(train_docs, max_len, seed=0),
            pretraining.sentence_pairs(held_docs, max_len, seed=1),
        ),
    }
    results = {}
    for name, (train_pairs, held_pairs) in sets.items():
        data = pretraining.PretrainingDataset.from_tokenizer(held_pairs, tok, dynamic=False, seed=1)
        labels = [p.next_sentence_label for p in held_pairs]
        majority = max(set(labels), key=labels.count)
        topic = TopicBaseline(train_docs).fit(train_pairs)
        results[name] = {
            "pairs": len(held_pairs),
            "model": measure(model, data, tok)["nsp_accuracy"],
            "majority": labels.count(majority) / len(labels),
            "tfidf_topic": topic.accuracy(held_pairs),
        }
    return results


def mlm_on_reviews(folder: str) -> dict:
    """[MASK] top-1 on the held-out movies' review text, with baselines at the same positions."""
    from minibert import pretraining
    from minibert.model import BertForPreTraining
    from minibert.recipes import load_corpus, model_folder
    from minibert.teaching.baselines import mlm_baselines
    from minibert.tokenization import BertTokenizer
    from minibert.training import evaluate

    train, heldout = load_corpus("reviews")  # training movies only; held out by title
    source = model_folder(folder)
    tok, model = BertTokenizer.from_pretrained(source), BertForPreTraining.from_pretrained(source)
    data = pretraining.heldout_dataset(heldout, tok, 128, objective="none", seed=1)
    items = [data[i] for i in range(len(data))]
    collate = lambda batch: pretraining.collate(batch, tok.pad_token_id)  # noqa: E731
    measured = evaluate(model, data, 64, collate, metrics_fn=pretraining.metrics_for(tok))
    baselines = mlm_baselines(items, pretraining.tokenize_documents(train, tok), tok)
    return {
        "mask_positions": sum(i == tok.mask_token_id for item in items for i in item["input_ids"]),
        "model": {"top1": measured["mask_accuracy"], "top5": measured["mask_top5"]},
        "ngram_table": baselines["ngram"]["mask_accuracy"],
        "most_frequent": baselines["most_frequent"]["mask_accuracy"],
    }
