"""A trained folder answering questions: fill in [MASK] tokens, label texts and pairs, tag words.

    model = BertForPreTraining.from_pretrained(folder)
    tok = BertTokenizer.from_pretrained(folder)
    fill_mask(model, tok, "the [MASK] of france is paris .")   # [[("capital", 0.41), ...]]
    classify(classifier, tok, ["a gem of a film", "a mess"])   # [("fresh", 0.93), ("rotten", 0.88)]
    classify(classifier, tok, [question], [sentence])          # a sentence pair: segments A and B
    tag(tagger, tok, "the eiffel tower is in paris")           # [("the", "capitalised", 0.97), ...]
    answer(reader, tok, "who built it?", paragraph)            # Answer("Gustave Eiffel", 0.81, 40, 54, 9.3)

Reads models and tokenizers; trains nothing. The ``minibert fill-mask``, ``classify``, ``tag`` and
``answer`` commands that call these are in ``minibert.commands.models``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import torch
from torch import nn

from minibert.utils import check_text, check_top_k, evaluating

__all__ = [
    "MAX_ANSWER_PIECES",
    "Answer",
    "answer",
    "best_span",
    "classify",
    "fill_mask",
    "tag",
]


def _finite(probabilities: torch.Tensor) -> torch.Tensor:
    """probabilities, or a ValueError when the model's outputs are not numbers (NaN or inf)."""
    if not torch.isfinite(probabilities).all():
        raise ValueError(
            "the model's outputs are not numbers (NaN or inf): its weights are damaged; "
            "fine-tune it again, or load another folder"
        )
    return probabilities


def _positions(model: nn.Module) -> int | None:
    """The model's position limit (config.max_position_embeddings), if it says."""
    return getattr(getattr(model, "config", None), "max_position_embeddings", None)


@torch.no_grad()
def fill_mask(
    model: nn.Module, tokenizer: Any, text: str, top_k: int = 5
) -> list[list[tuple[str, float]]]:
    """For each [MASK] in text, the top_k (token, probability) pairs of a masked-LM model."""
    check_text(text)
    check_top_k(top_k)  # its bound, the vocabulary, once the model has answered
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
    probs = _finite(logits[0, positions].float().softmax(-1))  # (masks, vocab)
    top = probs.topk(check_top_k(top_k, probs.shape[-1], "tokens in the vocabulary"), dim=-1)
    return [
        [(tokenizer.convert_ids_to_tokens(int(i)), float(p)) for p, i in zip(ps, ids_)]
        for ps, ids_ in zip(top.values, top.indices)
    ]


@torch.no_grad()
def classify(
    model: nn.Module,
    tokenizer: Any,
    texts: list[str],
    text_pairs: list[str] | None = None,
    max_length: int = 128,
) -> list[tuple[str, float]]:
    """For each text (or pair: texts[i] as segment A, text_pairs[i] as B), the sequence
    classifier's most probable label and its probability."""
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a list of str (wrap a single text in a list)")
    if not texts:
        raise ValueError("no texts to classify")
    for i, text in enumerate(texts):
        check_text(text, f"text {i + 1}")
    if text_pairs is not None:
        if isinstance(text_pairs, str) or not all(isinstance(t, str) for t in text_pairs):
            raise TypeError("text_pairs must be a list of str, one for each text")
        if len(text_pairs) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(text_pairs)} text_pairs: give one each")
        for i, text in enumerate(text_pairs):
            check_text(text, f"the second text of pair {i + 1}")
    limit = _positions(model)
    max_length = max_length if limit is None else min(max_length, limit)
    batch = tokenizer.encode_batch(
        texts if text_pairs is None else list(zip(texts, text_pairs)),
        max_length=max_length,
        truncation=True if text_pairs is None else "only_second",
    )
    device = next(model.parameters()).device
    with evaluating(model):
        logits = model(**{k: v.to(device) for k, v in batch.items()}).logits  # (texts, labels)
    probs = _finite(logits.float().softmax(-1))
    best = probs.max(-1)
    names = model.config.names()
    return [(names[int(i)], float(p)) for p, i in zip(best.values, best.indices)]


@torch.no_grad()
def tag(
    model: nn.Module, tokenizer: Any, text: str, max_length: int | None = None
) -> list[tuple[str, str, float]]:
    """Each word of text with the token classifier's label (read on its first piece, as it was
    trained) and its probability: [(word as the tokenizer pieced it, label, probability), ...].

    A text longer than the model's positions is refused; with max_length, only its first
    max_length pieces ([CLS] and [SEP] included) are tagged."""
    check_text(text)
    limit = _positions(model) or 512
    if max_length is None:
        length = len(tokenizer(text).input_ids)
        if length > limit:
            raise ValueError(
                f"the text is {length:,} WordPiece tokens ([CLS] and [SEP] included), more than "
                f"the model's {limit:,} positions: tag a shorter text, or cut it with "
                f"max_length (--max-length {limit}) to tag its first words only"
            )
    enc = tokenizer(text, max_length=min(max_length or limit, limit), truncation=True)
    if not any(w is not None for w in enc.word_ids):
        raise ValueError(f"the text has no words to tag: {text!r}")
    ids = torch.tensor([enc.input_ids])  # (1, seq)
    device = next(model.parameters()).device
    with evaluating(model):
        logits = model(input_ids=ids.to(device), attention_mask=torch.ones_like(ids).to(device))
    probs = _finite(logits.logits[0].float().softmax(-1))  # (seq, labels)
    names, words = model.config.names(), {}
    for position, (piece, word) in enumerate(zip(enc.tokens, enc.word_ids)):
        if word is None:
            continue
        if word not in words:  # the first piece carries the word's label
            p, label = probs[position].max(-1)
            words[word] = [piece, names[int(label)], float(p)]
        else:
            words[word][0] += piece[2:] if piece.startswith("##") else piece
    return [tuple(w) for w in words.values()]


# --- extractive question answering: the best span over windows ---------------------------------

MAX_ANSWER_PIECES = 30  # the longest answer decoding considers (the BERT paper's SQuAD setting)
N_BEST = 20  # start and end candidates per window


class Answer(NamedTuple):
    """An answer: its text, its probability (start x end, in its window), its characters, and
    its score: start + end logit, the quantity decoding maximises, comparable across windows and
    across contexts (DrQA picks the best span over many paragraphs by it; a probability is not:
    each window's softmax has its own normaliser)."""

    text: str
    probability: float
    start: int
    end: int
    score: float = float("nan")


def best_span(
    start_logits: Sequence[float],
    end_logits: Sequence[float],
    context: Sequence[int],
    max_pieces: int = MAX_ANSWER_PIECES,
    n_best: int = N_BEST,
) -> tuple[float, int, int] | None:
    """The best (score, first piece, last piece) of one window: start + end score, both among the
    context's pieces, first <= last < first + max_pieces; None if no span qualifies."""
    inside = set(context)
    starts = sorted(inside, key=lambda i: -start_logits[i])[:n_best]
    ends = sorted(inside, key=lambda i: -end_logits[i])[:n_best]
    best = None
    for s in starts:
        for e in ends:
            if s <= e < s + max_pieces:
                score = start_logits[s] + end_logits[e]
                if best is None or score > best[0]:
                    best = (score, s, e)
    return best


@torch.no_grad()
def answer(
    model: nn.Module,
    tokenizer: Any,
    question: str,
    context: str,
    max_length: int = 384,
    stride: int = 128,
    max_pieces: int = MAX_ANSWER_PIECES,
) -> Answer:
    """The span of context that best answers question: the best start + end over every window of
    [CLS] question [SEP] context [SEP] (windows overlapping by stride pieces)."""
    check_text(question, "the question")
    check_text(context, "the context")
    limit = _positions(model)
    max_length = max_length if limit is None else min(max_length, limit)
    stride = min(stride, max_length // 2)
    windows = tokenizer(
        question,
        context,
        max_length=max_length,
        truncation="only_second",
        stride=stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
    )
    device = next(model.parameters()).device
    best = None
    with evaluating(model):
        for enc in windows:
            ids = torch.tensor([enc.input_ids], device=device)  # (1, seq)
            out = model(ids, torch.tensor([enc.token_type_ids], device=device))
            starts, ends = out.start_logits[0].float(), out.end_logits[0].float()  # (seq,)
            _finite(starts + ends)
            inside = [i for i, s in enumerate(enc.sequence_ids) if s == 1]
            found = best_span(starts.tolist(), ends.tolist(), inside, max_pieces)
            if found is not None and (best is None or found[0] > best[0]):
                _, s, e = found
                p = float(starts.softmax(-1)[s] * ends.softmax(-1)[e])
                best = (found[0], p, enc.offsets[s][0], enc.offsets[e][1])
    if best is None:
        raise ValueError("the context has no words to answer with")
    return Answer(context[best[2] : best[3]], best[1], best[2], best[3], best[0])
