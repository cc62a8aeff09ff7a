"""Fine-tuning data and measures: labelled texts -> encoded examples -> batches -> accuracy, F1.

    data = ClassificationDataset.from_reviews(corpora.rotten_tomatoes("train"), tok, max_length=128)
    batch = collate([data[0], data[1]], tok.pad_token_id)   # input_ids, ..., labels (batch,)
    train(model, data, dev, collate_fn=..., metrics_fn=classification_metrics)

Sequence classification (one label per text, or per pair of texts) feeds
``BertForSequenceClassification``; token classification (one label per word, on its first
piece; -100 on the others) feeds ``BertForTokenClassification``. The course's token task restores
capitalisation: lower-cased Wikipedia sentences, each word labelled 1 if it was capitalised in
the original text. The labels come from the text itself, so they are real and free.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from minibert.config import IGNORE_INDEX
from minibert.model import mean_pool
from minibert.tokenization import build_inputs, pad
from minibert.wordpiece import BasicTokenizer

__all__ = [
    "ClassificationDataset",
    "TokenLabellingDataset",
    "capitalisation_examples",
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


def _paired(a: Sequence, b: Sequence) -> torch.Tensor:
    """b - a as a (seeds, items) float64 tensor; a and b are (items,) or (seeds, items) each."""
    a, b = torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64)
    if a.shape != b.shape or a.dim() not in (1, 2) or a.shape[-1] < 2:
        raise ValueError(f"a and b must be (items,) or (seeds, items) alike with 2+ items, got {tuple(a.shape)} and {tuple(b.shape)}")  # fmt: skip
    return (b - a).reshape(-1, a.shape[-1])


def paired_bootstrap(
    a: Sequence, b: Sequence, resamples: int = 2000, level: float = 0.95, seed: int = 0,
    resample_seeds: bool = False,
) -> tuple[float, float, float]:  # fmt: skip
    """mean(b) - mean(a) and its percentile bootstrap interval, the test items resampled with both
    models scored on each resample. a, b: (items,) per-item scores (1/0 right, or a per-item F1),
    or (seeds, items): the seeds averaged within each resample (the interval then holds the
    items' variation, and the seeds' mean); with resample_seeds, the seeds are drawn too (a's and
    b's seed s together: the same training subset), so it holds the runs' variation as well.
    Returns (difference, low, high)."""
    if resamples < 100 or not 0 < level < 1:
        raise ValueError(f"resamples must be >= 100 and level in (0, 1), got {resamples} and {level}")  # fmt: skip
    gaps = _paired(a, b)
    n = gaps.shape[-1]
    g = torch.Generator().manual_seed(seed)
    picks = torch.randint(n, (resamples, n), generator=g)  # (resamples, items)
    runs = _seed_picks(gaps.shape[0], resamples, g, resample_seeds)  # (resamples, seeds)
    by_seed = gaps[:, picks].mean(2)  # (seeds, resamples): each seed on the resampled items
    means = by_seed.gather(0, runs.T).mean(0)  # (resamples,): over the drawn seeds
    tail = (1 - level) / 2
    low, high = torch.quantile(means, torch.tensor([tail, 1 - tail], dtype=torch.float64)).tolist()
    return float(gaps.mean()), low, high


def paired_sign_flip_test(a: Sequence, b: Sequence, resamples: int = 10000, seed: int = 0) -> float:
    """Two-sided p-value for "a and b score the same" (per-item scores, paired as in
    paired_bootstrap): each item's difference (averaged over seeds) has its sign flipped at random;
    the share of flips whose mean is at least as far from 0 as the observed one (counting the
    observed one, so never 0)."""
    gaps = _paired(a, b).mean(0)  # (items,)
    g = torch.Generator().manual_seed(seed)
    signs = torch.randint(2, (resamples, gaps.numel()), generator=g, dtype=torch.float64) * 2 - 1
    observed = abs(float(gaps.mean()))
    extreme = int(((signs * gaps).mean(1).abs() >= observed - 1e-12).sum())
    return (extreme + 1) / (resamples + 1)


def _seed_picks(seeds: int, resamples: int, g: torch.Generator, draw: bool) -> torch.Tensor:
    """(resamples, seeds) seed indices: each resample's seeds drawn with replacement, or all."""
    if not draw:
        return torch.arange(seeds).expand(resamples, seeds)
    if seeds < 2:
        raise ValueError("resampling the seeds needs at least two seeds")
    return torch.randint(seeds, (resamples, seeds), generator=g)


def _f1_of_counts(counts: torch.Tensor) -> torch.Tensor:
    """F1 from summed (..., 3) counts of (true positives, false positives, false negatives)."""
    tp, fp, fn = counts.unbind(-1)
    denominator = 2 * tp + fp + fn
    return torch.where(denominator > 0, 2 * tp / denominator.clamp(min=1), torch.zeros_like(tp))


def paired_bootstrap_f1(
    a: Sequence, b: Sequence, resamples: int = 2000, level: float = 0.95, seed: int = 0,
    resample_seeds: bool = False,
) -> tuple[float, float, float]:  # fmt: skip
    """F1(b) - F1(a) and its percentile bootstrap interval, for a measure that is not a mean of
    per-item scores: a, b are (seeds, items, 3) counts of (tp, fp, fn) per test item (a sentence's
    words, say). Each resample draws items with replacement; each seed's F1 is computed on the
    summed counts of the drawn items, and the seeds' F1 averaged (with resample_seeds, over seeds
    drawn with replacement, a's and b's together). Returns (difference, low, high)."""
    if resamples < 100 or not 0 < level < 1:
        raise ValueError(f"resamples must be >= 100 and level in (0, 1), got {resamples} and {level}")  # fmt: skip
    a, b = (torch.as_tensor(x, dtype=torch.float64) for x in (a, b))
    if a.shape != b.shape or a.dim() != 3 or a.shape[-1] != 3:
        raise ValueError(f"a and b must both be (seeds, items, 3) counts, got {tuple(a.shape)} and {tuple(b.shape)}")  # fmt: skip
    n = a.shape[1]
    g = torch.Generator().manual_seed(seed)
    picks = torch.randint(n, (resamples, n), generator=g)  # (resamples, items)
    gaps = _f1_of_counts(b[:, picks].sum(2)) - _f1_of_counts(
        a[:, picks].sum(2)
    )  # (seeds, resamples)
    runs = _seed_picks(a.shape[0], resamples, g, resample_seeds)  # (resamples, seeds)
    tail = (1 - level) / 2
    qs = torch.tensor([tail, 1 - tail], dtype=torch.float64)
    low, high = torch.quantile(gaps.gather(0, runs.T).mean(0), qs).tolist()
    observed = _f1_of_counts(b.sum(1)) - _f1_of_counts(a.sum(1))  # (seeds,)
    return float(observed.mean()), low, high


def paired_permutation_test_f1(
    a: Sequence, b: Sequence, resamples: int = 10000, seed: int = 0
) -> float:
    """Two-sided p-value for "a and b have the same F1" (counts as in paired_bootstrap_f1): each
    item's two sets of counts are swapped between a and b at random (the same swap for every
    seed); the share of swaps whose mean F1 gap is at least as far from 0 as the observed one
    (counting the observed one, so never 0)."""
    a, b = (torch.as_tensor(x, dtype=torch.float64) for x in (a, b))
    if a.shape != b.shape or a.dim() != 3 or a.shape[-1] != 3:
        raise ValueError(f"a and b must both be (seeds, items, 3) counts, got {tuple(a.shape)} and {tuple(b.shape)}")  # fmt: skip
    observed = abs(float((_f1_of_counts(b.sum(1)) - _f1_of_counts(a.sum(1))).mean()))
    g = torch.Generator().manual_seed(seed)
    extreme = 0
    for chunk in range(0, resamples, 500):  # (swaps, seeds, items, 3) in chunks: bounded memory
        swap = torch.randint(2, (min(500, resamples - chunk), 1, a.shape[1], 1), generator=g).bool()
        a_swapped, b_swapped = torch.where(swap, b, a), torch.where(swap, a, b)
        gaps = (_f1_of_counts(b_swapped.sum(2)) - _f1_of_counts(a_swapped.sum(2))).mean(1)
        extreme += int((gaps.abs() >= observed - 1e-12).sum())
    return (extreme + 1) / (resamples + 1)


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


# --- the token task: restoring capitalisation ---------------------------------------------------


def capitalisation_examples(
    sentences: Sequence[str], tokenizer, max_length: int = 64
) -> list[dict[str, list[int]]]:
    """Lower-cased sentences with, on each word's first piece, 1 if the word was capitalised.

    Words are split on whitespace and punctuation by the tokenizer's basic tokenizer on the
    original text; a word counts as capitalised when its first character is upper case. The
    other pieces of a word, [CLS], [SEP] and punctuation that has no case get -100 (ignored).
    """
    if max_length < 3:
        raise ValueError(f"max_length {max_length} leaves no room for a word after [CLS] and [SEP]")
    cased = BasicTokenizer(lowercase=False, strip_accents=False)  # words with their case
    examples = []
    for sentence in sentences:
        pieces, labels = [], []
        for word in cased.tokenize(sentence):
            word_pieces = tokenizer.tokenize(word)  # lower-cased by an uncased tokenizer
            if not word_pieces:
                continue
            has_case = word[0].lower() != word[0].upper()
            labels += [int(word[0].isupper()) if has_case else IGNORE_INDEX]
            labels += [IGNORE_INDEX] * (len(word_pieces) - 1)
            pieces += word_pieces
        pieces, labels = pieces[: max_length - 2], labels[: max_length - 2]
        if all(label == IGNORE_INDEX for label in labels):
            continue
        input_ids, token_type_ids, _ = build_inputs(
            tokenizer.convert_tokens_to_ids(pieces), None, tokenizer.cls_token_id,
            tokenizer.sep_token_id,
        )  # fmt: skip
        examples.append(
            {
                "input_ids": input_ids,
                "token_type_ids": token_type_ids,
                "labels": [IGNORE_INDEX, *labels, IGNORE_INDEX],
            }
        )
    return examples


class TokenLabellingDataset(torch.utils.data.Dataset):
    """Examples of ``capitalisation_examples`` (or any with per-token labels) as a dataset."""

    def __init__(self, examples: Sequence[dict[str, list[int]]]):
        if not examples:
            raise ValueError("no examples: give at least one labelled sentence")
        self.items = list(examples)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, list[int]]:
        return self.items[index]


# --- frozen features and a linear classifier on them (BERT's feature-based approach) -------------


def fit_logistic_regression(
    x: torch.Tensor, y: Sequence[int], l2: float = 1e-4, steps: int = 300
) -> torch.nn.Linear:
    """Multinomial logistic regression with an L2 penalty, fitted with L-BFGS: (n, d) -> Linear(d, k).

    Dense features are standardised first (so one l2 suits every scale; the returned layer takes
    raw features); sparse ones (a bag of words, already unit rows) are used as they are.
    """
    y = torch.as_tensor(y, dtype=torch.long)
    if x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise ValueError(f"{x.shape[0]} rows of features but {y.shape[0]} labels")
    sparse = x.is_sparse
    values = x.coalesce().values() if sparse else x
    if not torch.isfinite(values).all():
        raise ValueError("the features hold NaN or infinite values (a model that diverged?)")
    if not sparse:
        mean, std = x.mean(0), x.std(0).clamp(min=1e-6)
        x = (x - mean) / std
    linear = torch.nn.Linear(x.shape[1], int(y.max()) + 1)
    torch.nn.init.zeros_(linear.weight)
    torch.nn.init.zeros_(linear.bias)
    optimizer = torch.optim.LBFGS(
        linear.parameters(), max_iter=steps, line_search_fn="strong_wolfe"
    )

    def closure():
        optimizer.zero_grad()
        logits = x @ linear.weight.T + linear.bias  # (n, k); sparse @ dense works
        loss = torch.nn.functional.cross_entropy(logits, y) + l2 * linear.weight.square().sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    if not sparse:
        with torch.no_grad():  # fold the standardisation into the weights: raw features in
            linear.weight /= std
            linear.bias -= (linear.weight * mean).sum(1)
    return linear


def predict(linear: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """Labels (n,) from a fitted logistic regression on features x (dense or sparse)."""
    with torch.no_grad():
        return (x @ linear.weight.T + linear.bias).argmax(-1)


@torch.no_grad()
def sentence_features(
    model, tokenizer, texts: Sequence[str], pooling: str | tuple[str, ...] = "cls",
    max_length: int = 128, batch_size: int = 64,
) -> torch.Tensor | tuple[torch.Tensor, ...]:  # fmt: skip
    """Frozen features of a BertModel (or any model with .bert): (texts, hidden), [CLS] or mean.

    A tuple of poolings, e.g. ("cls", "mean"), gives a tuple of feature tensors from one pass.
    """
    if not texts:
        raise ValueError("no texts to encode")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    poolings = (pooling,) if isinstance(pooling, str) else tuple(pooling)
    if not poolings or any(p not in ("cls", "mean") for p in poolings):
        raise ValueError(f"pooling must be 'cls', 'mean' or a tuple of them, got {pooling!r}")
    encoder = getattr(model, "bert", model).eval()
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # similar lengths pad less
    rows: dict[str, list[torch.Tensor]] = {p: [] for p in poolings}
    for start in range(0, len(texts), batch_size):
        batch = tokenizer.encode_batch(
            [texts[i] for i in order[start : start + batch_size]],
            max_length=max_length,
            truncation=True,
        )
        hidden = encoder(**batch).last_hidden_state  # (batch, seq, hidden)
        for p in poolings:
            rows[p].append(
                hidden[:, 0] if p == "cls" else mean_pool(hidden, batch["attention_mask"])
            )
    features = []
    for p in poolings:
        pooled = torch.cat(rows[p])
        features.append(torch.empty_like(pooled))
        features[-1][torch.tensor(order)] = pooled  # back in the order of texts
    return features[0] if isinstance(pooling, str) else tuple(features)
