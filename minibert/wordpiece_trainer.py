"""Training a WordPiece vocabulary on a corpus: the likelihood-gain merges of Schuster and Nakajima.

    vocab = train_wordpiece(texts, vocab_size=8000)   # a list of tokens, ids = positions
    tok = BertTokenizer(vocab)

The trainer cuts texts into words with ``wordpiece.BasicTokenizer`` (the same rules the
tokenizer applies), so a vocabulary it learns tokenizes text the way it was trained.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from minibert.wordpiece import MAX_INPUT_CHARS_PER_WORD, SPECIAL_TOKENS, BasicTokenizer

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
    from tqdm import tqdm

    if isinstance(texts, str):
        raise TypeError("texts must be an iterable of strings, got one str; wrap it in a list")
    if criterion not in ("likelihood", "ratio"):
        raise ValueError(f"criterion must be 'likelihood' or 'ratio', got {criterion!r}")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    if min_frequency < 1:
        raise ValueError(f"min_frequency must be >= 1, got {min_frequency}")
    words = _count_words(texts, BasicTokenizer(lowercase, strip_accents))
    vocab = _first_vocab(words, vocab_size, limit_alphabet)  # 1. specials and the alphabet
    # the most tokens these texts can give: the alphabet, then merges until each distinct word is
    # one token (a larger vocab_size stops there, without tables sized for what cannot come)
    vocab_size = min(vocab_size, len(vocab) + sum(len(w) - 1 for w, _ in words))
    table = _PairTable(vocab, words, vocab_size, min_frequency)
    bar = tqdm(total=vocab_size - len(vocab), desc="WordPiece", unit="token", disable=not progress)
    while len(vocab) < vocab_size:  # 2. merge the best pair, until the vocabulary is full
        r = table.best(criterion)
        if r is None:
            break
        bar.update(table.merge(r))  # appends the new token to vocab (unless it was there)
    bar.close()
    return vocab


def _symbols_of(word: str) -> list[str]:
    """A word as its characters, "##" before every non-initial one: hug -> h ##u ##g."""
    return [word[0], *("##" + c for c in word[1:])]


def _count_words(texts: Iterable[str], basic: BasicTokenizer) -> list[tuple[str, int]]:
    """(word, count) of every word of the texts, as the tokenizer cuts them (long words out)."""
    word_counts: Counter[str] = Counter()
    for text in texts:
        word_counts.update(basic.tokenize(text))
    return [
        (w, f)
        for w, f in word_counts.items()
        if w not in basic.never_split and len(w) <= MAX_INPUT_CHARS_PER_WORD
    ]


def _first_vocab(
    words: list[tuple[str, int]], vocab_size: int, limit_alphabet: int | None
) -> list[str]:
    """The special tokens, then the alphabet (initial and "##" characters) sorted."""
    symbol_counts: Counter[str] = Counter()
    for w, f in words:
        for sym in _symbols_of(w):
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
    return vocab


def _merge_pair(syms: list[int], a: int, b: int, new: int) -> list[int]:
    """The word's symbols with every adjacent (a, b) replaced by new, left to right."""
    merged: list[int] = []
    i, n = 0, len(syms)
    while i < n:
        if i + 1 < n and syms[i] == a and syms[i + 1] == b:
            merged.append(new)
            i += 2
        else:
            merged.append(syms[i])
            i += 1
    return merged


class _PairTable:
    """Symbol and adjacent-pair counts over the words, updated by each merge from the changed
    words only; pair scores are computed for all candidate pairs at once with numpy.

    Symbols are ints, ids into ``names`` (the vocabulary being built); each word is a list of
    symbol ids with a frequency. Pairs have one row each, in the order first seen; rows are never
    removed.
    """

    def __init__(
        self, names: list[str], words: list[tuple[str, int]], vocab_size: int, min_frequency: int
    ):
        import numpy as np

        self.names, self.min_frequency = names, min_frequency
        self.sym_id = {name: i for i, name in enumerate(names)}
        self.word_syms: list[list[int]] = []
        self.word_freq: list[int] = []
        for w, f in words:  # words with a character outside the alphabet are left out
            syms = _symbols_of(w)
            if all(s in self.sym_id for s in syms):
                self.word_syms.append([self.sym_id[s] for s in syms])
                self.word_freq.append(f)
        self.unit = np.zeros(len(names) + vocab_size, dtype=np.float64)  # count(symbol)
        for syms, f in zip(self.word_syms, self.word_freq):
            for s in syms:
                self.unit[s] += f
        self.row_of: dict[tuple[int, int], int] = {}
        self.left: list[int] = []
        self.right: list[int] = []
        self.where: list[set[int]] = []  # words that contain (or once contained) each pair
        delta: Counter[int] = Counter()
        for w, (syms, f) in enumerate(zip(self.word_syms, self.word_freq)):
            for pair in zip(syms, syms[1:]):
                r = self.row(pair)
                delta[r] += f
                self.where[r].add(w)
        size = max(1024, 2 * len(self.left))
        self.count = np.zeros(size, dtype=np.float64)
        self.left_arr = np.zeros(size, dtype=np.int64)
        self.right_arr = np.zeros(size, dtype=np.int64)
        self.candidates = np.zeros(0, dtype=np.int64)
        self._update(delta, Counter(), 0)

    def row(self, pair: tuple[int, int]) -> int:
        """The pair's row, added if the pair is new."""
        r = self.row_of.get(pair)
        if r is None:
            r = self.row_of[pair] = len(self.left)
            self.left.append(pair[0])
            self.right.append(pair[1])
            self.where.append(set())
        return r

    def best(self, criterion: str) -> int | None:
        """The row of the best pair seen min_frequency times (ties: the first seen), or None."""
        import numpy as np

        rows = self.candidates
        if not len(rows):
            return None
        c = self.count[rows]
        c_a, c_b = self.unit[self.left_arr[rows]], self.unit[self.right_arr[rows]]
        if criterion == "ratio":
            score = c / (c_a * c_b)
        else:
            same = self.left_arr[rows] == self.right_arr[rows]
            score = _likelihood_gain(c, c_a, c_b, same, float(self.unit.sum()))
        score[c < self.min_frequency] = -np.inf
        if score.max() == -np.inf:
            return None
        return int(rows[np.argmax(score)])  # argmax: the first of equals (rows are in order)

    def merge(self, r: int) -> int:
        """Merge the pair of row r in every word that has it; 1 if it added a token, else 0."""
        a, b = self.left[r], self.right[r]
        name = self.names[a] + self.names[b][2:]  # h + ##u -> hu, ##u + ##g -> ##ug
        new = self.sym_id.get(name)
        added = new is None
        if added:
            new = self.sym_id[name] = len(self.names)
            self.names.append(name)
        delta: Counter[int] = Counter()
        unit_delta: Counter[int] = Counter()
        rows_before = len(self.left)
        for w in sorted(self.where[r]):
            syms = self.word_syms[w]
            merged = _merge_pair(syms, a, b, new)
            if len(merged) == len(syms):
                continue  # the pair left this word in an earlier merge
            f = self.word_freq[w]
            for pair in zip(syms, syms[1:]):
                delta[self.row_of[pair]] -= f
            for pair in zip(merged, merged[1:]):
                nr = self.row(pair)
                delta[nr] += f
                self.where[nr].add(w)
            k = (len(syms) - len(merged)) * f  # k occurrences of a and of b became new
            unit_delta[a] -= k
            unit_delta[b] -= k
            unit_delta[new] += k
            self.word_syms[w] = merged
        self.where[r] = set()
        self._update(delta, unit_delta, rows_before)
        return int(added)

    def _update(self, delta: Counter, unit_delta: Counter, rows_before: int) -> None:
        """Apply count changes, store the rows added since rows_before, refresh the candidates.

        A pair of old symbols can only lose counts, so once below min_frequency a row is out
        for good; the new rows join the candidates.
        """
        import numpy as np

        if len(self.left) > len(self.count):  # grow the arrays for the new rows
            grow = len(self.left) + len(self.count)
            self.count = np.concatenate([self.count, np.zeros(grow)])
            self.left_arr = np.concatenate([self.left_arr, np.zeros(grow, dtype=np.int64)])
            self.right_arr = np.concatenate([self.right_arr, np.zeros(grow, dtype=np.int64)])
        self.left_arr[rows_before : len(self.left)] = self.left[rows_before:]
        self.right_arr[rows_before : len(self.left)] = self.right[rows_before:]
        if delta:
            idx = np.fromiter(delta.keys(), dtype=np.int64, count=len(delta))
            self.count[idx] += np.fromiter(delta.values(), dtype=np.float64, count=len(delta))
        for s, d in unit_delta.items():
            self.unit[s] += d
        kept = self.candidates[self.count[self.candidates] >= self.min_frequency]
        fresh = np.arange(rows_before, len(self.left), dtype=np.int64)
        if rows_before == 0:  # the first call: every pair seen often enough
            fresh = fresh[self.count[fresh] >= self.min_frequency]
        self.candidates = np.concatenate([kept, fresh])


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
