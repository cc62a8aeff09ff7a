"""The baselines' predictors, each predicting at the positions a task scores (a task names them:
``Baseline("always lower-case", majority)``); each is ``(train, dev, test, tokenizer) -> list``.

- ``majority``: the label most frequent in train, everywhere (for a word task: at every word);
- ``bag_of_words``: TF-IDF unigrams and bigrams (``BagOfWords``) and a logistic regression, its
  L2 chosen on dev by balanced accuracy (accuracy would reward the majority label);
- ``per_word_majority``: each word gets the label it has most often in train (words unseen there
  get the majority label);
- ``sentence_starts``: the first cased word of a text and each cased word after ".", "!" or "?"
  is capitalised, no other (a word task of restoring capitals; no training);
- ``sentence_starts_or_per_word_majority``: capitalised where either rule says so.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Sequence

import torch

from minibert import finetuning
from minibert.config import IGNORE_INDEX
from minibert.frozen_features import fit_logistic_regression, predict
from minibert.wordpiece import BasicTokenizer

__all__ = [
    "BagOfWords",
    "bag_of_words",
    "labelled_words",
    "majority",
    "ngrams",
    "per_word_majority",
    "sentence_starts",
    "sentence_starts_or_per_word_majority",
]


def _labels(data: Sequence) -> list:
    """Each item's label: an int per text, or the labels of a text's labelled pieces."""
    return [
        y if isinstance(y := data[i]["labels"], int) else [v for v in y if v != IGNORE_INDEX]
        for i in range(len(data))
    ]


def _flat(data: Sequence) -> list[int]:
    """Every scored label of data, in order."""
    return [v for y in _labels(data) for v in (y if isinstance(y, list) else [y])]


def _most_frequent(labels: Sequence[int]) -> int:
    """The most frequent label (ties: the smaller id)."""
    counts = collections.Counter(labels)
    return max(sorted(counts), key=counts.__getitem__)


def majority(train, dev, test, tokenizer) -> list[int]:
    """The label most frequent at train's scored positions, at every scored position of test."""
    label = _most_frequent(_flat(train))
    return [[label] * len(y) if isinstance(y, list) else label for y in _labels(test)]


def ngrams(text: str, n: int = 2) -> list[str]:
    """The lower-cased words of text and its word n-grams up to n ("not bad" -> not, bad, not_bad)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    words = BasicTokenizer().tokenize(text)
    grams = list(words)
    for k in range(2, n + 1):
        grams += ["_".join(words[i : i + k]) for i in range(len(words) - k + 1)]
    return grams


class BagOfWords:
    """Texts -> TF-IDF weighted counts of the unigrams and bigrams seen at least min_count times."""

    def __init__(self, texts: Sequence[str], min_count: int = 2, n: int = 2):
        counts: dict[str, int] = {}
        docs = [set(ngrams(t, n)) for t in texts]
        for doc in docs:
            for g in doc:
                counts[g] = counts.get(g, 0) + 1
        kept = sorted(g for g, c in counts.items() if c >= min_count)
        if not kept:
            raise ValueError(f"no n-gram occurs {min_count} times in the {len(texts)} texts")
        self.index = {g: i for i, g in enumerate(kept)}
        self.idf = torch.tensor(
            [math.log((1 + len(docs)) / (1 + counts[g])) + 1 for g in kept], dtype=torch.float32
        )
        self.n = n

    def __call__(self, texts: Sequence[str]) -> torch.Tensor:
        """(texts, features), sparse: log(1 + count) x idf, each row scaled to unit length."""
        rows, cols, values = [], [], []
        for row, text in enumerate(texts):
            counts: dict[int, int] = {}
            for g in ngrams(text, self.n):
                if g in self.index:
                    counts[self.index[g]] = counts.get(self.index[g], 0) + 1
            weights = {c: math.log1p(k) * float(self.idf[c]) for c, k in counts.items()}
            norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
            for c, w in weights.items():
                rows.append(row)
                cols.append(c)
                values.append(w / norm)
        return torch.sparse_coo_tensor(
            torch.tensor([rows, cols], dtype=torch.long).reshape(2, -1),
            torch.tensor(values, dtype=torch.float32),
            (len(texts), len(self.index)),
            check_invariants=True,
        ).coalesce()


def bag_of_words(train, dev, test, tokenizer, l2s=(1e-5, 3e-5, 1e-4)) -> list[int]:
    """Logistic regression on BagOfWords features of the texts, its L2 chosen on dev."""
    features = BagOfWords(train.texts)
    x_train, x_dev, x_test = (features(d.texts) for d in (train, dev, test))

    def balanced(linear) -> float:  # on dev
        predicted = predict(linear, x_dev).tolist()
        return finetuning.scores(dev.labels, predicted)["balanced_accuracy"]

    fits = [fit_logistic_regression(x_train, train.labels, l2=l2) for l2 in l2s]
    return predict(max(fits, key=balanced), x_test).tolist()


def labelled_words(example: dict[str, list[int]], tokenizer) -> list[tuple[tuple[str, ...], int]]:
    """(the word's pieces, its label) at each labelled position of a per-word example."""
    pieces = tokenizer.convert_ids_to_tokens(example["input_ids"])
    words = []
    for i, label in enumerate(example["labels"]):
        if label == IGNORE_INDEX:
            continue
        end = i + 1
        while end < len(pieces) and pieces[end].startswith("##"):
            end += 1
        words.append((tuple(pieces[i:end]), label))
    return words


def per_word_majority(train, dev, test, tokenizer) -> list[int]:
    """Each word of test gets its most frequent label in train (unseen: the majority label)."""
    seen: dict[tuple[str, ...], collections.Counter] = collections.defaultdict(collections.Counter)
    for i in range(len(train)):
        for word, label in labelled_words(train[i], tokenizer):
            seen[word][label] += 1
    default = _most_frequent(_flat(train))
    return [
        [
            _most_frequent(seen[word]) if word in seen else default
            for word, _ in labelled_words(test[i], tokenizer)
        ]
        for i in range(len(test))
    ]


ENDS = frozenset(".!?")  # the pieces that end a sentence


def starts(example: dict[str, list[int]], tokenizer) -> list[int]:
    """1 at each labelled word of a per-word example that begins a sentence (the text's first
    labelled word, or the first after ".", "!" or "?"), else 0: a label per labelled word."""
    pieces = tokenizer.convert_ids_to_tokens(example["input_ids"])
    guesses, fresh = [], True
    for piece, label in zip(pieces, example["labels"], strict=True):
        if piece in ENDS:
            fresh = True
        elif label != IGNORE_INDEX:
            guesses.append(int(fresh))
            fresh = False
    return guesses


def sentence_starts(train, dev, test, tokenizer) -> list[int]:
    """Each word of test that begins a sentence is capitalised, no other (train is not read)."""
    return [starts(test[i], tokenizer) for i in range(len(test))]


def sentence_starts_or_per_word_majority(train, dev, test, tokenizer) -> list[int]:
    """A word of test is capitalised if it begins a sentence or is capitalised most often in train."""
    table = per_word_majority(train, dev, test, tokenizer)
    return [
        [a | b for a, b in zip(first, usual, strict=True)]
        for first, usual in zip(sentence_starts(train, dev, test, tokenizer), table, strict=True)
    ]
