"""BERT's pretraining data: documents -> sentence pairs (NSP) -> masked examples (MLM) -> batches.

Follows Google's ``create_pretraining_data.py``:

1. ``create_examples`` cuts each document (a list of tokenized sentences) into chunks of
   consecutive sentences that fill a target length (``max_len``, or with probability
   ``short_seq_prob`` a random shorter one). A chunk's first sentences become segment A. Segment B
   is the rest of the chunk, the actual continuation (IsNext, label 0), or with probability 0.5
   sentences from a different, randomly chosen document (NotNext, label 1); a chunk of a single
   sentence always gets a random B. The longer segment is truncated, from the front or the back at
   random, until the pair fits. ``objective="sop"`` gives ALBERT's sentence-order pairs instead:
   A and B are consecutive segments of one document, in order (label 0) or swapped (label 1).
   ``objective="none"`` gives RoBERTa-style full-sentence, MLM-only examples (label -100).
2. ``mask_tokens`` chooses 15% of the non-special tokens (at least 1, at most
   ``max_predictions``); 80% of them become [MASK], 10% a random token, 10% stay. Labels are the
   original ids at the chosen positions and -100 elsewhere. Whole-word masking chooses whole
   words (a piece and its "##" continuations).
3. ``PretrainingDataset`` masks each example when it is drawn (dynamic masking: a new mask every
   epoch, deterministic under a seed) or once (static); ``collate`` pads a batch into tensors.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from minibert.config import IGNORE_INDEX, IS_NEXT, NOT_NEXT, OBJECTIVES
from minibert.tokenization import build_inputs, pad

__all__ = [
    "IS_NEXT",
    "NOT_NEXT",
    "OBJECTIVES",
    "PretrainingDataset",
    "PretrainingExample",
    "collate",
    "create_examples",
    "heldout_dataset",
    "mask_tokens",
    "metrics_for",
    "pretraining_metrics",
    "sentence_pairs",
    "tokenize_documents",
    "truncate_pair",
]


@dataclass(frozen=True)
class PretrainingExample:
    """One sequence before masking: segment A and B token ids, the NSP label, and where they came from."""

    tokens_a: tuple[int, ...]
    tokens_b: tuple[int, ...]  # empty in MLM-only mode
    next_sentence_label: int  # 0 IsNext, 1 NotNext (IGNORE_INDEX, -100, in MLM-only mode)
    doc_a: int  # index of the document segment A came from
    doc_b: int  # index of the document segment B came from (-1 without B)
    sentences_a: tuple[int, int]  # [start, end) sentence indices of A in doc_a
    sentences_b: tuple[int, int]  # [start, end) sentence indices of B in doc_b
    forced_random: bool = False  # a one-sentence chunk, so B had to come from another document


def truncate_pair(
    tokens_a: list[int], tokens_b: list[int], max_tokens: int, rng: random.Random
) -> None:
    """Shorten the longer of two lists in place, one token at a time from its front or back, to fit."""
    while len(tokens_a) + len(tokens_b) > max_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def create_examples(
    documents: Sequence[Sequence[Sequence[int]]],
    max_len: int = 128,
    short_seq_prob: float = 0.1,
    objective: str = "nsp",
    dupe_factor: int = 1,
    seed: int = 0,
) -> list[PretrainingExample]:
    """Cut tokenized documents (document -> sentence -> ids) into pretraining examples of <= max_len.

    objective: "nsp" (BERT's next sentence prediction), "sop" (ALBERT's sentence order) or
    "none" (MLM only). The label follows Google and Hugging Face: 0 = B follows A (IsNext, in
    order), 1 = it does not (NotNext: random; or swapped).
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    nsp = objective != "none"
    if max_len < 5:
        raise ValueError(f"max_len must leave room for [CLS], [SEP] and tokens; got {max_len}")
    if not 0.0 <= short_seq_prob <= 1.0:
        raise ValueError(f"short_seq_prob must be in [0, 1], got {short_seq_prob}")
    docs = [[list(s) for s in doc if len(s) > 0] for doc in documents]
    nonempty = [i for i, d in enumerate(docs) if d]
    if nsp and len(nonempty) < 2:
        raise ValueError("next sentence prediction needs at least two non-empty documents")
    rng = random.Random(seed)
    examples = []
    for _ in range(dupe_factor):
        for doc_index in nonempty:
            examples += _examples_from_document(
                docs, doc_index, nonempty, max_len, short_seq_prob, objective, rng
            )
    rng.shuffle(examples)
    return examples


def _examples_from_document(docs, doc_index, nonempty, max_len, short_seq_prob, objective, rng):
    document = docs[doc_index]
    nsp = objective != "none"
    max_tokens = max_len - (3 if nsp else 2)  # [CLS] A [SEP] B [SEP], or [CLS] A [SEP]
    target = max_tokens
    if rng.random() < short_seq_prob:
        target = rng.randint(2, max_tokens)
    examples, chunk, chunk_start, length, i = [], [], 0, 0, 0
    while i < len(document):
        if not chunk:
            chunk_start = i
        chunk.append(document[i])
        length += len(document[i])
        if i == len(document) - 1 or length >= target:
            if not nsp:
                tokens_a = [t for s in chunk for t in s][:max_tokens]
                examples.append(
                    PretrainingExample(
                        tuple(tokens_a),
                        (),
                        IGNORE_INDEX,
                        doc_index,
                        -1,
                        (chunk_start, i + 1),
                        (0, 0),
                    )
                )
            elif objective == "sop":
                if len(chunk) >= 2:  # a lone sentence has no order to predict: no example
                    examples.append(_sop_example(chunk, chunk_start, doc_index, max_tokens, rng))
            else:
                a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
                tokens_a = [t for s in chunk[:a_end] for t in s]
                forced = len(chunk) == 1
                if forced or rng.random() < 0.5:
                    label = NOT_NEXT
                    target_b = max(1, target - len(tokens_a))
                    other = doc_index
                    while other == doc_index:  # never the same document
                        other = rng.choice(nonempty)
                    random_doc = docs[other]
                    b_start = rng.randint(0, len(random_doc) - 1)
                    tokens_b, b_end = [], b_start
                    while b_end < len(random_doc) and len(tokens_b) < target_b:
                        tokens_b += random_doc[b_end]
                        b_end += 1
                    doc_b, sentences_b = other, (b_start, b_end)
                    i -= len(chunk) - a_end  # the unused sentences start the next chunk
                else:
                    label = IS_NEXT
                    tokens_b = [t for s in chunk[a_end:] for t in s]
                    doc_b, sentences_b = doc_index, (chunk_start + a_end, chunk_start + len(chunk))
                truncate_pair(tokens_a, tokens_b, max_tokens, rng)
                examples.append(
                    PretrainingExample(
                        tuple(tokens_a),
                        tuple(tokens_b),
                        label,
                        doc_index,
                        doc_b,
                        (chunk_start, chunk_start + a_end),
                        sentences_b,
                        forced,
                    )
                )
            chunk, length = [], 0
        i += 1
    return examples


def _sop_example(chunk, chunk_start, doc_index, max_tokens, rng) -> PretrainingExample:
    """Two consecutive segments of a chunk, in order (label 0) or swapped (label 1)."""
    a_end = rng.randint(1, len(chunk) - 1)
    first = [t for s in chunk[:a_end] for t in s]
    second = [t for s in chunk[a_end:] for t in s]
    spans = (chunk_start, chunk_start + a_end), (chunk_start + a_end, chunk_start + len(chunk))
    label = NOT_NEXT if rng.random() < 0.5 else IS_NEXT
    if label == NOT_NEXT:
        first, second, spans = second, first, spans[::-1]
    truncate_pair(first, second, max_tokens, rng)
    return PretrainingExample(
        tuple(first), tuple(second), label, doc_index, doc_index, spans[0], spans[1]
    )


def mask_tokens(
    input_ids: Sequence[int],
    special_tokens_mask: Sequence[int],
    mask_token_id: int,
    random_token_ids: Sequence[int],
    rng: np.random.Generator,
    mlm_probability: float = 0.15,
    max_predictions: int | None = None,
    word_starts: Sequence[bool] | None = None,
) -> tuple[list[int], list[int]]:
    """BERT's masking of one sequence: (masked input_ids, mlm_labels with -100 where not chosen).

    Chooses round(15%) of the non-special positions (at least 1, at most max_predictions);
    80% of those become [MASK], 10% a token drawn from random_token_ids, 10% keep their token.
    With word_starts (True where a word begins, as "##" pieces do not), whole words are chosen,
    every piece of a chosen word together, stopping before a word would exceed the budget.
    """
    if len(input_ids) != len(special_tokens_mask):
        raise ValueError(
            f"input_ids has {len(input_ids)} tokens but special_tokens_mask has {len(special_tokens_mask)}"
        )
    if not 0.0 < mlm_probability < 1.0:
        raise ValueError(f"mlm_probability must be in (0, 1), got {mlm_probability}")
    if max_predictions is not None and max_predictions < 1:
        raise ValueError(
            f"max_predictions must be at least 1 (or None), got {max_predictions}: with nothing "
            "masked there is nothing to learn and the MLM loss reads a perfect 0"
        )
    candidates = [i for i, special in enumerate(special_tokens_mask) if not special]
    masked, labels = list(input_ids), [IGNORE_INDEX] * len(input_ids)
    if not candidates:
        return masked, labels
    budget = max(1, round(len(candidates) * mlm_probability))
    if max_predictions is not None:
        budget = min(budget, max_predictions)
    # groups of positions chosen together: single tokens, or whole words
    groups: list[list[int]] = []
    for i in candidates:
        if word_starts is not None and groups and not word_starts[i] and groups[-1][-1] == i - 1:
            groups[-1].append(i)
        else:
            groups.append([i])
    chosen: list[int] = []
    for g in rng.permutation(len(groups)):
        group = groups[g]
        if len(chosen) >= budget:
            break
        if len(chosen) + len(group) > budget:
            continue  # as Google's code: skip a word that would overshoot
        chosen += group
    for i in sorted(chosen):
        labels[i] = int(input_ids[i])
        roll = rng.random()
        if roll < 0.8:
            masked[i] = mask_token_id
        elif roll < 0.9:
            masked[i] = int(random_token_ids[rng.integers(len(random_token_ids))])
        # else: keep the original token
    return masked, labels


class PretrainingDataset(torch.utils.data.Dataset):
    """Examples turned into model inputs, masked when drawn (dynamic) or once (static)."""

    def __init__(
        self,
        examples: Sequence[PretrainingExample],
        cls_token_id: int,
        sep_token_id: int,
        mask_token_id: int,
        random_token_ids: Sequence[int],
        mlm_probability: float = 0.15,
        max_predictions: int | None = None,
        continuation_ids: set[int] | None = None,
        dynamic: bool = True,
        seed: int = 0,
    ):
        self.examples = list(examples)
        self.cls, self.sep, self.mask = cls_token_id, sep_token_id, mask_token_id
        self.random_token_ids = np.asarray(random_token_ids)
        self.mlm_probability = mlm_probability
        self.max_predictions = max_predictions
        self.continuation_ids = continuation_ids  # ids of "##" pieces: enables whole-word masking
        self.dynamic, self.seed, self.epoch = dynamic, seed, 0

    @classmethod
    def from_tokenizer(
        cls, examples, tokenizer, whole_word: bool = False, **kwargs
    ) -> PretrainingDataset:
        """Build the dataset with a minibert BertTokenizer's special ids and vocabulary."""
        vocab = tokenizer.vocab if isinstance(tokenizer.vocab, list) else list(tokenizer.vocab)
        special = {
            tokenizer.pad_token_id,
            tokenizer.unk_token_id,
            tokenizer.cls_token_id,
            tokenizer.sep_token_id,
            tokenizer.mask_token_id,
        }
        special |= {i for i, t in enumerate(vocab) if t.startswith("[") and t.endswith("]")}
        random_ids = [i for i in range(len(vocab)) if i not in special]
        continuation = (
            {i for i, t in enumerate(vocab) if t.startswith("##")} if whole_word else None
        )
        return cls(
            examples,
            tokenizer.cls_token_id,
            tokenizer.sep_token_id,
            tokenizer.mask_token_id,
            random_ids,
            continuation_ids=continuation,
            **kwargs,
        )

    def set_epoch(self, epoch: int) -> None:
        """Dynamic masking draws a new mask for every example in every epoch."""
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, index: int) -> dict[str, list[int] | int]:
        ex = self.examples[index]
        ids, token_type_ids, special = build_inputs(
            ex.tokens_a, ex.tokens_b or None, self.cls, self.sep
        )
        word_starts = None
        if self.continuation_ids is not None:
            word_starts = [t not in self.continuation_ids for t in ids]
        rng = np.random.default_rng([self.seed, self.epoch if self.dynamic else 0, index])
        input_ids, labels = mask_tokens(
            ids,
            special,
            self.mask,
            self.random_token_ids,
            rng,
            self.mlm_probability,
            self.max_predictions,
            word_starts,
        )
        return {
            "input_ids": input_ids,
            "token_type_ids": token_type_ids,
            "mlm_labels": labels,
            "next_sentence_label": ex.next_sentence_label,
        }


def collate(batch: Sequence[dict], pad_token_id: int = 0) -> dict[str, torch.Tensor]:
    """Pad dataset items to the longest: input_ids, token_type_ids, attention_mask, mlm_labels (batch, seq), next_sentence_label (batch,)."""
    if not batch:
        raise ValueError("cannot collate an empty batch")
    seq = max(len(item["input_ids"]) for item in batch)

    def column(values: Sequence[Sequence[int]], padding: int) -> torch.Tensor:
        return torch.tensor([pad(v, seq, padding) for v in values], dtype=torch.long)

    return {
        "input_ids": column([item["input_ids"] for item in batch], pad_token_id),
        "token_type_ids": column([item["token_type_ids"] for item in batch], 0),
        "attention_mask": column([[1] * len(item["input_ids"]) for item in batch], 0),
        "mlm_labels": column([item["mlm_labels"] for item in batch], IGNORE_INDEX),
        "next_sentence_label": torch.tensor([item["next_sentence_label"] for item in batch]),
    }


def pretraining_metrics(
    batch: dict[str, torch.Tensor], out: Any, mask_token_id: int | None = None
) -> dict[str, tuple[float, int]]:
    """The pretraining task's held-out measures of one batch, as (sum, count) for the loop to add.

    mask_accuracy and mask_top5 (the headline: at the [MASK] positions only, the ones a model
    cannot copy; needs mask_token_id), chosen_accuracy (at every chosen position, the 10% kept
    and 10% random included, so copying alone scores), nsp_accuracy, mlm_loss and nsp_loss.
    Pass ``metrics_for(tokenizer)`` to ``training.train``/``evaluate`` as ``metrics_fn``.
    """
    sums: dict[str, tuple[float, int]] = {}
    for name in ("mlm_loss", "nsp_loss"):
        if getattr(out, name, None) is not None:
            sums[name] = (float(getattr(out, name)), 1)
    labels = batch.get("mlm_labels")
    if out.mlm_logits is not None and labels is not None:  # logits (batch, seq, vocab): not sparse
        chosen = labels != IGNORE_INDEX  # (batch, seq)
        top5 = out.mlm_logits.topk(5, dim=-1).indices  # (batch, seq, 5)
        right = top5[..., 0] == labels  # (batch, seq)
        sums["chosen_accuracy"] = (int(right[chosen].sum()), int(chosen.sum()))
        if mask_token_id is not None:
            masked = chosen & (batch["input_ids"] == mask_token_id)  # (batch, seq)
            in_top5 = (top5 == labels.unsqueeze(-1)).any(-1)  # (batch, seq)
            sums["mask_accuracy"] = (int(right[masked].sum()), int(masked.sum()))
            sums["mask_top5"] = (int(in_top5[masked].sum()), int(masked.sum()))
    nsp_labels = batch.get("next_sentence_label")
    if out.nsp_logits is not None and nsp_labels is not None:
        keep = nsp_labels != IGNORE_INDEX  # (batch,)
        right = out.nsp_logits.argmax(-1) == nsp_labels
        sums["nsp_accuracy"] = (int(right[keep].sum()), int(keep.sum()))
    return sums


def metrics_for(tokenizer) -> Callable[[dict, Any], dict[str, tuple[float, int]]]:
    """``pretraining_metrics`` with the tokenizer's [MASK] id: the metrics_fn of a pretraining run."""
    return functools.partial(pretraining_metrics, mask_token_id=tokenizer.mask_token_id)


def tokenize_documents(articles: Sequence, tokenizer) -> list[list[list[int]]]:
    """Articles (anything with .sentences) -> documents of sentences of token ids, empties dropped."""
    documents = []
    for article in articles:
        sentences = [
            tokenizer.convert_tokens_to_ids(tokenizer.tokenize(s)) for s in article.sentences
        ]
        documents.append([s for s in sentences if s])
    return documents


def heldout_dataset(
    articles: Sequence,
    tokenizer,
    max_len: int = 128,
    objective: str = "nsp",
    seed: int = 1,
    whole_word: bool = False,
    max_predictions: int | None = None,
) -> PretrainingDataset:
    """Held-out examples with one fixed (static) mask, so every scoring sees the same tokens."""
    documents = tokenize_documents(articles, tokenizer)
    examples = create_examples(documents, max_len, objective=objective, seed=seed)
    return PretrainingDataset.from_tokenizer(
        examples,
        tokenizer,
        whole_word=whole_word,
        max_predictions=max_predictions,
        dynamic=False,
        seed=seed,
    )


def sentence_pairs(
    documents: Sequence[Sequence[Sequence[int]]], max_len: int = 128, seed: int = 0
) -> list[PretrainingExample]:
    """d2l-style NSP pairs: each sentence and the next one (IsNext) or any random sentence (NotNext).

    As in d2l's ``_get_next_sentence``: one sentence per segment, and the random sentence may come
    from the same document. Pairs longer than max_len are truncated like Google's.
    """
    rng = random.Random(seed)
    every = [(d, i) for d, doc in enumerate(documents) for i in range(len(doc))]
    if len(every) < 2:
        raise ValueError("sentence pairs need at least two sentences")
    examples = []
    for d, doc in enumerate(documents):
        for i in range(len(doc) - 1):
            if rng.random() < 0.5:
                label, (doc_b, j) = IS_NEXT, (d, i + 1)
            else:
                label, (doc_b, j) = NOT_NEXT, rng.choice(every)
            tokens_a, tokens_b = list(doc[i]), list(documents[doc_b][j])
            truncate_pair(tokens_a, tokens_b, max_len - 3, rng)
            examples.append(
                PretrainingExample(
                    tuple(tokens_a), tuple(tokens_b), label, d, doc_b, (i, i + 1), (j, j + 1)
                )
            )
    return examples
