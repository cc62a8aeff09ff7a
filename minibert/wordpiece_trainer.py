"""Training a WordPiece vocabulary on a corpus: the likelihood-gain merges of Schuster and Nakajima.

    vocab = train_wordpiece(texts, vocab_size=8000)   # a list of tokens, ids = positions
    tok = BertTokenizer(vocab)

The trainer cuts texts into words with ``tokenization.BasicTokenizer`` (the same rules the
tokenizer applies), so a vocabulary it learns tokenizes text the way it was trained.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from minibert.tokenization import MAX_INPUT_CHARS_PER_WORD, SPECIAL_TOKENS, BasicTokenizer

__all__ = ["train_wordpiece"]


def train_wordpiece(
    texts: Iterable[str],
    vocab_size: int,
    lowercase: bool = True,
    strip_accents: bool | None = None,
    min_frequency: int = 2,
    limit_alphabet: int | None = None,
    criterion: str = "likelihood",
    progress: bool = True,
) -> list[str]:
    """Learn a WordPiece vocabulary of vocab_size tokens from raw texts (ids = list positions).

    The algorithm (WordPiece as described by Schuster and Nakajima, 2012, and in Hugging Face's
    course), with this module's BasicTokenizer to cut the texts into words:

    1. Count the words. Write each word as its characters, "##" before every non-initial one:
       "hug" -> h ##u ##g. The alphabet is every such symbol (the limit_alphabet most frequent
       ones, if given; words with other characters are then left out).
    2. Repeat until the vocabulary has vocab_size tokens: among adjacent pairs (a, b) seen at
       least min_frequency times, merge the one that most increases the likelihood of the corpus
       under a unigram model of the symbols (criterion="likelihood", the default). With n_x the
       count of symbol x and N the total, the log-likelihood is sum_x n_x log(n_x / N); merging
       moves n_ab occurrences of a and of b into the new symbol ab, and the gain is computed
       exactly. Per merged occurrence it is about log(N n_ab / (n_a n_b)): the log of the ratio
       n_ab / (n_a n_b) that Hugging Face's course ranks pairs by (criterion="ratio"). Ranked
       alone, that ratio prefers pairs of rare symbols and spends the vocabulary on rare words
       spelled out letter by letter; the likelihood gain weighs it by how often the pair occurs.
       Ties go to the pair seen first in the texts. The merged symbol is a + b without b's "##":
       h + ##u -> hu, ##u + ##g -> ##ug.
    3. Vocabulary = special tokens ([PAD] [UNK] [CLS] [SEP] [MASK], ids 0-4), then the alphabet
       (sorted), then the new tokens in the order they were learned. Training stops early, with
       fewer tokens, when no pair is frequent enough.

    Pair and symbol counts are updated incrementally: a merge touches only the words that contain
    the pair, and the scores of all pairs are recomputed at once with numpy. Training 8,000
    tokens on 400k words takes well under a minute on one CPU core. Deterministic.
    """
    import numpy as np
    from tqdm import tqdm

    if isinstance(texts, str):
        raise TypeError("texts must be an iterable of strings, got one str; wrap it in a list")
    if criterion not in ("likelihood", "ratio"):
        raise ValueError(f"criterion must be 'likelihood' or 'ratio', got {criterion!r}")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    if min_frequency < 1:
        raise ValueError(f"min_frequency must be >= 1, got {min_frequency}")
    basic = BasicTokenizer(lowercase, strip_accents)
    word_counts: Counter[str] = Counter()
    for text in texts:
        word_counts.update(basic.tokenize(text))
    words = [
        (w, f)
        for w, f in word_counts.items()
        if w not in basic.never_split and len(w) <= MAX_INPUT_CHARS_PER_WORD
    ]

    # 1. the alphabet: initial characters and "##" continuation characters
    def symbols_of(word: str) -> list[str]:
        return [word[0], *("##" + c for c in word[1:])]

    symbol_counts: Counter[str] = Counter()
    for w, f in words:
        for sym in symbols_of(w):
            symbol_counts[sym] += f
    alphabet = sorted(symbol_counts)
    if limit_alphabet is not None and len(alphabet) > limit_alphabet:
        ranked = sorted(alphabet, key=lambda sym: (-symbol_counts[sym], sym))
        alphabet = sorted(ranked[:limit_alphabet])
    vocab = [*SPECIAL_TOKENS, *(a for a in alphabet if a not in SPECIAL_TOKENS)]
    if len(vocab) > vocab_size:
        raise ValueError(
            f"vocab_size={vocab_size} is smaller than the special tokens plus the alphabet "
            f"({len(vocab)} tokens); raise vocab_size or set limit_alphabet"
        )

    # symbols are ints: ids into `names`; each word is a list of symbol ids with a frequency
    sym_id = {name: i for i, name in enumerate(vocab)}
    names = list(vocab)
    word_syms: list[list[int]] = []
    word_freq: list[int] = []
    for w, f in words:
        syms = symbols_of(w)
        if all(s in sym_id for s in syms):
            word_syms.append([sym_id[s] for s in syms])
            word_freq.append(f)
    unit = np.zeros(len(names) + vocab_size, dtype=np.float64)  # count(symbol)
    for syms, f in zip(word_syms, word_freq):
        for s in syms:
            unit[s] += f

    # pair statistics: one row per pair ever seen; rows are never removed
    row_of: dict[tuple[int, int], int] = {}
    left: list[int] = []
    right: list[int] = []
    where: list[set[int]] = []  # words that contain (or once contained) each pair

    def row(pair: tuple[int, int]) -> int:
        r = row_of.get(pair)
        if r is None:
            r = row_of[pair] = len(left)
            left.append(pair[0])
            right.append(pair[1])
            where.append(set())
        return r

    delta: Counter[int] = Counter()
    for w, (syms, f) in enumerate(zip(word_syms, word_freq)):
        for pair in zip(syms, syms[1:]):
            r = row(pair)
            delta[r] += f
            where[r].add(w)
    count = np.zeros(max(1024, 2 * len(left)), dtype=np.float64)
    rows = np.fromiter(delta.keys(), dtype=np.int64, count=len(delta))
    count[rows] = np.fromiter(delta.values(), dtype=np.float64, count=len(delta))
    left_arr = np.zeros(len(count), dtype=np.int64)
    right_arr = np.zeros(len(count), dtype=np.int64)
    left_arr[: len(left)] = left
    right_arr[: len(left)] = right
    # candidate rows: a pair of old symbols can only lose counts, so once below min_frequency a
    # row is out for good; new rows are appended as merges create new symbols
    candidates = np.flatnonzero(count[: len(left)] >= min_frequency)

    bar = tqdm(total=vocab_size - len(vocab), desc="WordPiece", unit="token", disable=not progress)
    while len(vocab) < vocab_size and len(candidates):
        c = count[candidates]
        c_a, c_b = unit[left_arr[candidates]], unit[right_arr[candidates]]
        total = float(unit.sum())
        if criterion == "ratio":
            score = c / (c_a * c_b)
        else:
            score = _likelihood_gain(
                c, c_a, c_b, left_arr[candidates] == right_arr[candidates], total
            )
        score[c < min_frequency] = -np.inf
        best = score.max()
        if best == -np.inf:
            break
        r = int(candidates[np.argmax(score)])  # ties: the pair seen first (rows are in order)
        a, b = left[r], right[r]
        name = names[a] + names[b][2:]
        new = sym_id.get(name)
        if new is None:
            new = sym_id[name] = len(names)
            names.append(name)
            vocab.append(name)
            bar.update(1)
        # 2. merge (a, b) in every word that has it, updating counts from the changed words only
        delta.clear()
        unit_delta: Counter[int] = Counter()
        n_rows_before = len(left)
        for w in sorted(where[r]):
            syms = word_syms[w]
            merged: list[int] = []
            i, n = 0, len(syms)
            while i < n:
                if i + 1 < n and syms[i] == a and syms[i + 1] == b:
                    merged.append(new)
                    i += 2
                else:
                    merged.append(syms[i])
                    i += 1
            if len(merged) == n:
                continue  # the pair left this word in an earlier merge
            f = word_freq[w]
            for pair in zip(syms, syms[1:]):
                delta[row_of[pair]] -= f
            for pair in zip(merged, merged[1:]):
                nr = row(pair)
                delta[nr] += f
                where[nr].add(w)
            k = (n - len(merged)) * f  # k occurrences of a and of b became new
            unit_delta[a] -= k
            unit_delta[b] -= k
            unit_delta[new] += k
            word_syms[w] = merged
        where[r] = set()
        if len(left) > len(count):  # grow the arrays for the new rows
            grow = len(left) + len(count)
            count = np.concatenate([count, np.zeros(grow)])
            left_arr = np.concatenate([left_arr, np.zeros(grow, dtype=np.int64)])
            right_arr = np.concatenate([right_arr, np.zeros(grow, dtype=np.int64)])
        left_arr[n_rows_before : len(left)] = left[n_rows_before:]
        right_arr[n_rows_before : len(left)] = right[n_rows_before:]
        if delta:
            idx = np.fromiter(delta.keys(), dtype=np.int64, count=len(delta))
            count[idx] += np.fromiter(delta.values(), dtype=np.float64, count=len(delta))
        for s, d in unit_delta.items():
            unit[s] += d
        fresh = np.arange(n_rows_before, len(left), dtype=np.int64)
        candidates = np.concatenate([candidates[count[candidates] >= min_frequency], fresh])
    bar.close()
    return vocab


def _likelihood_gain(n_ab: Any, n_a: Any, n_b: Any, same: Any, total: float) -> Any:
    """Exact change of sum_x n_x log(n_x / N) when the pairs (a, b) merge; arrays (pairs,)."""
    import numpy as np

    def xlogx(x: Any) -> Any:
        return x * np.log(np.maximum(x, 1.0))  # 0 log 0 = 0; counts are whole numbers

    # a pair of one symbol with itself ("##s" "##s") removes 2 n_ab of that symbol
    rest_a = n_a - np.where(same, 2 * n_ab, n_ab)
    rest_b = np.where(same, 0.0, n_b - n_ab)
    before = xlogx(n_a) + np.where(same, 0.0, xlogx(n_b))
    after = xlogx(n_ab) + xlogx(rest_a) + xlogx(rest_b)
    # sum_x n_x log(n_x / N) = sum_x n_x log n_x - N log N, and N shrinks by n_ab
    return after - before - xlogx(total - n_ab) + xlogx(total)
