"""A trained folder answering questions: fill in [MASK] tokens, label texts.

    model = BertForPreTraining.from_pretrained(folder)
    tok = BertTokenizer.from_pretrained(folder)
    fill_mask(model, tok, "the [MASK] of france is paris .")   # [[("capital", 0.41), ...]]
    classify(classifier, tok, ["a gem of a film", "a mess"])   # [("fresh", 0.93), ("rotten", 0.88)]
    word_in_context(encoder, tok, {"river": [...], "money": [...]}, "bank")  # per-layer cosines

Reads models and tokenizers; trains nothing. The ``minibert fill-mask`` and ``minibert classify``
commands are declared here too (``add_*_arguments`` and ``*_command``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import torch
from torch import nn

from minibert.utils import evaluating

__all__ = [
    "add_classify_arguments",
    "add_fill_mask_arguments",
    "classify",
    "classify_command",
    "fill_mask",
    "fill_mask_command",
    "word_in_context",
]


@torch.no_grad()
def fill_mask(
    model: nn.Module, tokenizer: Any, text: str, top_k: int = 5
) -> list[list[tuple[str, float]]]:
    """For each [MASK] in text, the top_k (token, probability) pairs of a masked-LM model."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be a positive int, got {top_k!r}")
    enc = tokenizer(text)
    ids = torch.tensor([enc.input_ids])  # (1, seq)
    positions = [i for i, t in enumerate(enc.input_ids) if t == tokenizer.mask_token_id]
    if not positions:
        raise ValueError(f"the text has no [MASK] token to fill: {text!r:.200}")
    limit = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if limit is not None and len(enc.input_ids) > limit:
        raise ValueError(
            f"the text is {len(enc.input_ids):,} tokens ([CLS] and [SEP] included), longer than "
            f"the model's {limit:,} positions (its first [MASK] is token {positions[0]:,}); "
            f"shorten it to the sentences around the [MASK], at most {limit - 2:,} WordPiece tokens"
        )
    device = next(model.parameters()).device
    with evaluating(model):
        out = model(input_ids=ids.to(device), attention_mask=torch.ones_like(ids).to(device))
    logits = out.mlm_logits if getattr(out, "mlm_logits", None) is not None else out.logits
    probs = logits[0, positions].float().softmax(-1)  # (masks, vocab)
    top = probs.topk(min(top_k, probs.shape[-1]), dim=-1)
    return [
        [(tokenizer.convert_ids_to_tokens(int(i)), float(p)) for p, i in zip(ps, ids_)]
        for ps, ids_ in zip(top.values, top.indices)
    ]


@torch.no_grad()
def classify(
    model: nn.Module, tokenizer: Any, texts: list[str], max_length: int = 128
) -> list[tuple[str, float]]:
    """For each text, the sequence classifier's most probable label and its probability."""
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a list of str (wrap a single text in a list)")
    if not texts:
        raise ValueError("no texts to classify")
    batch = tokenizer.encode_batch(texts, max_length=max_length, truncation=True)
    device = next(model.parameters()).device
    with evaluating(model):
        logits = model(**{k: v.to(device) for k, v in batch.items()}).logits  # (texts, labels)
    probs = logits.float().softmax(-1)
    best = probs.max(-1)
    names = model.config.names()
    return [(names[int(i)], float(p)) for p, i in zip(best.values, best.indices)]


@torch.no_grad()
def word_in_context(
    model: nn.Module, tokenizer: Any, senses: dict[str, list[str]], word: str
) -> dict[str, list[float]]:
    """How a word's vector depends on its sentence: mean cosine per layer, same vs other sense.

    senses maps a sense to sentences that use word (one WordPiece token) in that sense. Returns
    {"same sense": [...], "different senses": [...]}: the mean cosine similarity of word's vectors
    between two sentences, after the embeddings (index 0) and after each layer of the encoder.
    """
    if len(senses) < 2 or any(len(s) < 2 for s in senses.values()):
        raise ValueError("senses needs at least two senses with at least two sentences each")
    vectors = {}
    with evaluating(model):
        for sentence in (s for sentences in senses.values() for s in sentences):
            enc = tokenizer(sentence)
            if word not in enc.tokens:
                raise ValueError(f"{word!r} is not one token of {sentence!r}: {enc.tokens}")
            at = enc.tokens.index(word)
            states = model(torch.tensor([enc.input_ids]), output_hidden_states=True).hidden_states
            vectors[sentence] = torch.stack([h[0, at] for h in states])  # (layers + 1, hidden)

    def mean_cosine(pairs: list[tuple[str, str]]) -> list[float]:
        cos = [torch.cosine_similarity(vectors[a], vectors[b], dim=-1) for a, b in pairs]
        return torch.stack(cos).mean(0).tolist()  # (layers + 1,)

    groups = list(senses.values())
    same = [(a, b) for g in groups for i, a in enumerate(g) for b in g[i + 1 :]]
    different = [
        (a, b) for i, g in enumerate(groups) for h in groups[i + 1 :] for a in g for b in h
    ]
    return {"same sense": mean_cosine(same), "different senses": mean_cosine(different)}


# --- the commands: minibert fill-mask, minibert classify -------------------------------------


def _load_folder(folder: str, cls_name: str):
    """(model, tokenizer) from a folder; anything wrong becomes one line naming the folder."""
    from minibert import model as models
    from minibert.tokenization import BertTokenizer

    try:
        model = getattr(models, cls_name).from_pretrained(folder)
        return model, BertTokenizer.from_pretrained(folder)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"minibert: error: cannot load the model in {folder}: {exc}") from None


def add_fill_mask_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``minibert fill-mask``."""
    from minibert.options import POSITIVE_INT, argparse_type

    parser.add_argument(
        "model",
        help="a folder written by `minibert pretrain`, or by save_pretrained of "
        "BertForPreTraining or BertForMaskedLM",
    )
    parser.add_argument(
        "text",
        help='a sentence with [MASK], e.g. "the [MASK] of france is paris ."; at most the '
        "model's positions (512 WordPiece tokens for BERT, with [CLS] and [SEP]): a longer text "
        "is refused, not cut, so that no [MASK] loses its context; shorten it to the sentences "
        "around the [MASK]",
    )
    parser.add_argument(
        "--top-k",
        type=argparse_type(int, POSITIVE_INT),
        default=5,
        help="how many candidates to print per [MASK]",
    )


def fill_mask_command(args: argparse.Namespace) -> int:
    """Print each [MASK]'s top candidates with their probabilities; the exit code."""
    model, tok = _load_folder(args.model, "BertForMaskedLM")  # pretraining folders load too
    try:
        predictions = fill_mask(model, tok, args.text, top_k=args.top_k)
    except ValueError as exc:
        print(f"minibert fill-mask: error: {exc}", file=sys.stderr)
        return 1
    for n, candidates in enumerate(predictions, start=1):
        print(f"[MASK] {n}: " + "  ".join(f"{t} {p:.3f}" for t, p in candidates))
    return 0


def add_classify_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``minibert classify``."""
    parser.add_argument("model", help="a folder written by `minibert finetune`")
    parser.add_argument("texts", nargs="+", help="one or more texts, each in quotes")


def classify_command(args: argparse.Namespace) -> int:
    """Print each text's label and probability; refuse a folder without a trained head."""
    model, tok = _load_folder(args.model, "BertForSequenceClassification")
    if missing := model.loading_info["newly_initialized"]:  # a random head answers at random
        print(
            f"minibert classify: error: {args.model} has no trained classifier (its weights lack "
            f"{', '.join(missing)}): it is a pretrained model, not a fine-tuned one; fine-tune it "
            "first (minibert finetune --model FOLDER --out OUT)",
            file=sys.stderr,
        )
        return 1
    for text, (label, probability) in zip(args.texts, classify(model, tok, args.texts)):
        print(f"{label}\t{probability:.3f}\t{text}")
    return 0
