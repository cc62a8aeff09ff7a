"""Fine-tuning data and measures: labelled texts -> encoded examples -> batches -> accuracy, F1.

    data = ClassificationDataset.from_reviews(corpora.rotten_tomatoes("train"), tok, max_length=128)
    batch = collate([data[0], data[1]], tok.pad_token_id)   # input_ids, ..., labels (batch,)
    train(model, data, dev, collate_fn=..., metrics_fn=classification_metrics)

Sequence classification (one label per text, or per pair of texts) feeds
``BertForSequenceClassification``; token classification (one label per word, on its first
piece; -100 on the others) feeds ``BertForTokenClassification``. A task builds its own examples
(the course's token task, restoring capitalisation: ``minibert.tasks.capitalisation``).

The paired statistics (``minibert.paired_statistics``) and the frozen features with their
logistic regression (``minibert.frozen_features``) live in modules of their own; their names are
re-exported here, where the lessons have always read them (``finetuning.paired_bootstrap``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from minibert.config import IGNORE_INDEX
from minibert.frozen_features import fit_logistic_regression, predict, sentence_features
from minibert.paired_statistics import (
    paired_bootstrap,
    paired_bootstrap_f1,
    paired_permutation_test_f1,
    paired_sign_flip_test,
)
from minibert.tokenization import pad

__all__ = [
    "ClassificationDataset",
    "TokenLabellingDataset",
    "classification_metrics",
    "collate",
    "confusion_matrix",
    "f1_score",
    "fit_logistic_regression",
    "paired_bootstrap",
    "paired_bootstrap_f1",
    "paired_permutation_test_f1",
    "paired_sign_flip_test",
    "predict",
    "scores",
    "sentence_features",
    "token_metrics",
]


class ClassificationDataset(torch.utils.data.Dataset):
    """Texts (or text pairs) with one label each, encoded once: [CLS] A [SEP] (B [SEP])."""

    def __init__(
        self,
        texts: Sequence[str],
        labels: Sequence[int],
        tokenizer,
        max_length: int = 128,
        text_pairs: Sequence[str] | None = None,
    ):
        if len(texts) != len(labels):
            raise ValueError(f"{len(texts)} texts but {len(labels)} labels")
        if text_pairs is not None and len(text_pairs) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(text_pairs)} second texts")
        if not texts:
            raise ValueError("no examples: give at least one labelled text")
        if max_length < 3 + (text_pairs is not None):
            raise ValueError(f"max_length {max_length} leaves no room for text")
        bad = [y for y in labels if isinstance(y, bool) or int(y) != y or y < 0]
        if bad:
            raise ValueError(f"labels must be whole numbers from 0, got {bad[0]!r}")
        self.texts, self.labels = list(texts), [int(y) for y in labels]
        self.text_pairs = None if text_pairs is None else list(text_pairs)
        self.items = []
        for i, text in enumerate(self.texts):
            second = None if text_pairs is None else text_pairs[i]
            enc = tokenizer(text, second, max_length=max_length, truncation=True)
            self.items.append(
                {
                    "input_ids": enc.input_ids,
                    "token_type_ids": enc.token_type_ids,
                    "labels": self.labels[i],
                }
            )

    @classmethod
    def from_reviews(cls, reviews: Sequence, tokenizer, max_length: int = 128):
        """Rotten Tomatoes snippets (corpora.Review: text, label) as a dataset."""
        return cls([r.text for r in reviews], [r.label for r in reviews], tokenizer, max_length)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.items[index]


def collate(batch: Sequence[dict], pad_token_id: int = 0) -> dict[str, torch.Tensor]:
    """Pad to the longest: input_ids, token_type_ids, attention_mask (batch, seq); every other key
    (labels, start_positions, ...) as (batch,), or (batch, seq) padded with -100 for a list."""
    if not batch:
        raise ValueError("cannot collate an empty batch")
    seq = max(len(item["input_ids"]) for item in batch)

    def column(key: str, padding: int) -> torch.Tensor:
        return torch.tensor([pad(item[key], seq, padding) for item in batch], dtype=torch.long)

    out = {
        "input_ids": column("input_ids", pad_token_id),
        "token_type_ids": column("token_type_ids", 0),
        "attention_mask": torch.tensor(
            [pad([1] * len(item["input_ids"]), seq, 0) for item in batch], dtype=torch.long
        ),
    }
    for key in (k for k in batch[0] if k not in out):  # labels, start_positions, end_positions
        if isinstance(batch[0][key], list):  # a label per token
            out[key] = column(key, IGNORE_INDEX)
        else:  # one per example
            out[key] = torch.tensor([item[key] for item in batch], dtype=torch.long)
    return out


# --- measures ----------------------------------------------------------------------------------


def classification_metrics(batch: dict[str, torch.Tensor], out: Any) -> dict[str, tuple[int, int]]:
    """Accuracy of one batch, each label's recall, and the counts F1 needs, as (sum, count) for
    the loop to add. For two labels, label 1 is the positive class: tp, predicted, actual positive.
    """
    predictions, labels = out.logits.argmax(-1), batch["labels"]  # (batch,), (batch,)
    n = int(labels.numel())
    sums = {"accuracy": (int((predictions == labels).sum()), n)}
    for k in range(out.logits.shape[-1]):  # each label's recall: their mean is balanced accuracy
        sums[f"recall_{k}"] = (
            int(((predictions == k) & (labels == k)).sum()),
            int((labels == k).sum()),
        )
    if out.logits.shape[-1] == 2:
        sums["positive_precision"] = (
            int(((predictions == 1) & (labels == 1)).sum()),
            int((predictions == 1).sum()),
        )
        sums["positive_recall"] = (
            int(((predictions == 1) & (labels == 1)).sum()),
            int((labels == 1).sum()),
        )
    return sums


def token_metrics(batch: dict[str, torch.Tensor], out: Any) -> dict[str, tuple[int, int]]:
    """Word-level accuracy, precision and recall of label 1, over labelled positions only."""
    predictions, labels = out.logits.argmax(-1), batch["labels"]  # (batch, seq) each
    keep = labels != IGNORE_INDEX
    p, y = predictions[keep], labels[keep]
    return {
        "accuracy": (int((p == y).sum()), int(keep.sum())),
        "positive_precision": (int(((p == 1) & (y == 1)).sum()), int((p == 1).sum())),
        "positive_recall": (int(((p == 1) & (y == 1)).sum()), int((y == 1).sum())),
    }


def f1_score(precision: float, recall: float) -> float:
    """Harmonic mean of precision and recall (0 when both are 0)."""
    if not (0 <= precision <= 1 and 0 <= recall <= 1):
        raise ValueError(f"precision and recall must be in [0, 1], got {precision} and {recall}")
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def confusion_matrix(
    labels: Sequence[int], predictions: Sequence[int], num_labels: int
) -> list[list[int]]:
    """counts[true][predicted], a num_labels x num_labels list of lists."""
    if len(labels) != len(predictions):
        raise ValueError(f"{len(labels)} labels but {len(predictions)} predictions")
    counts = [[0] * num_labels for _ in range(num_labels)]
    for y, p in zip(labels, predictions):
        if not (0 <= y < num_labels and 0 <= p < num_labels):
            raise ValueError(f"label {y} or prediction {p} outside [0, {num_labels})")
        counts[y][p] += 1
    return counts


def balanced_accuracy(record: dict[str, float]) -> float:
    """The mean of each label's recall in an evaluation record (its eval_recall_K measures): a
    model that answers one label everywhere scores 1 / labels, whatever the labels' balance."""
    recalls = [v for k, v in record.items() if k.startswith("eval_recall_")]
    if not recalls:
        raise ValueError("the evaluation has no eval_recall_K measures (classification_metrics)")
    return sum(recalls) / len(recalls)


def positive_f1(record: dict[str, float]) -> float:
    """F1 of label 1 from an evaluation record's positive precision and recall (0 where a model
    never predicts the label, whose precision is then undefined)."""
    precision = record.get("eval_positive_precision", 0.0)
    return f1_score(precision, record.get("eval_positive_recall", 0.0))


def scores(
    labels: Sequence[int], predictions: Sequence[int], num_labels: int = 2
) -> dict[str, Any]:
    """Accuracy, balanced accuracy (the mean recall per label), precision, recall and F1 of label 1
    (0 when it is never predicted or never true) and the confusion matrix."""
    if num_labels < 2:
        raise ValueError(f"num_labels must be at least 2 (F1 is that of label 1), got {num_labels}")
    matrix = confusion_matrix(labels, predictions, num_labels)
    if not labels:
        raise ValueError("no labels to score")
    tp, fp, fn = (
        matrix[1][1],
        sum(r[1] for r in matrix) - matrix[1][1],
        sum(matrix[1]) - matrix[1][1],
    )
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    recalls = [matrix[k][k] / sum(matrix[k]) for k in range(num_labels) if sum(matrix[k])]
    return {
        "accuracy": sum(matrix[i][i] for i in range(num_labels)) / len(labels),
        "balanced_accuracy": sum(recalls) / len(recalls),
        "precision": precision,
        "recall": recall,
        "f1": f1_score(precision, recall),
        "confusion": matrix,
    }


class TokenLabellingDataset(torch.utils.data.Dataset):
    """Examples with per-token labels (``tasks.capitalisation.capitalisation_examples``, say) as a
    dataset."""

    def __init__(self, examples: Sequence[dict[str, list[int]]]):
        if not examples:
            raise ValueError("no examples: give at least one labelled sentence")
        self.items = list(examples)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, list[int]]:
        return self.items[index]
