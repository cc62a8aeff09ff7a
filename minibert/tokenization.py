"""BERT's tokenizer from scratch: basic tokenization, WordPiece, vocabulary training, encoding.

    tok = BertTokenizer.from_pretrained(folder)          # a Hugging Face folder with vocab.txt
    enc = tok("a sentence", "another one", max_length=32, padding="max_length")
    enc.tokens, enc.input_ids, enc.token_type_ids, enc.attention_mask, enc.word_ids
    vocab = train_wordpiece(texts, vocab_size=8000)      # learn a vocabulary: a list of tokens

Text goes through two stages, as in Google's BERT (tokenization.py) and Hugging Face's
pure-Python BertTokenizer:

1. BasicTokenizer: drop control characters, normalise whitespace, put spaces around CJK
   ideographs, NFC; for an uncased vocabulary lower-case and strip accents (NFD, drop the
   combining marks); split on whitespace and punctuation. The special tokens ([CLS], [MASK], ...)
   are never split.
2. WordPiece: each word becomes the longest vocabulary piece that starts it, then the longest
   "##" piece that continues it, and so on (greedy longest-match-first). A word that cannot be
   covered, or has more than 100 characters, becomes [UNK].
"""

from __future__ import annotations

import json
import operator
import os
import re
import tempfile
import unicodedata
from collections import Counter
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "SPECIAL_TOKENS",
    "BasicTokenizer",
    "BertTokenizer",
    "Encoding",
    "get_tokens_and_segments",
    "is_chinese_char",
    "is_control",
    "is_punctuation",
    "is_whitespace",
    "load_vocab",
    "train_wordpiece",
    "wordpiece_tokenize",
]

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)  # the order train_wordpiece gives them: ids 0..4
MAX_INPUT_CHARS_PER_WORD = 100  # longer words become [UNK], as in BERT
TRUNCATION_STRATEGIES = ("longest_first", "only_first", "only_second")
PADDING_STRATEGIES = ("longest", "max_length")


# ---- character classes (the definitions of Google's BERT tokenization.py) --------------------


def is_whitespace(char: str) -> bool:
    """Space, tab, newline, carriage return or any Unicode space separator (Zs)."""
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def is_control(char: str) -> bool:
    """A Unicode 'other' character (Cc, Cf, Cn, Co, Cs) other than tab, newline, carriage return."""
    return char not in "\t\n\r" and unicodedata.category(char).startswith("C")


def is_punctuation(char: str) -> bool:
    """Unicode punctuation (P*) or one of the ASCII symbols BERT also splits off ($ + < = > ^ ` |~)."""
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def is_chinese_char(char: str) -> bool:
    """A CJK ideograph (the CJK Unified Ideographs blocks BERT puts spaces around)."""
    cp = ord(char)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


class _TranslationTable(dict):
    """A str.translate table filled on first sight of each character: {code point: replacement}."""

    def __init__(self, rule: Callable[[str], str]):
        super().__init__()
        self.rule = rule

    def __missing__(self, cp: int) -> str:
        value = self.rule(chr(cp))
        self[cp] = value
        return value


def _clean_rule(chinese: bool) -> Callable[[str], str]:
    def rule(char: str) -> str:
        if char in "\x00\ufffd" or is_control(char):
            return ""
        if is_whitespace(char):
            return " "
        if chinese and is_chinese_char(char):
            return f" {char} "
        return char

    return rule


def _split_rule(strip_accents: bool) -> Callable[[str], str]:
    def rule(char: str) -> str:
        if strip_accents and unicodedata.category(char) == "Mn":
            return ""
        if is_punctuation(char):
            return f" {char} "
        return char

    return rule


_CLEAN_TABLES = {flag: _TranslationTable(_clean_rule(flag)) for flag in (False, True)}
_SPLIT_TABLES = {flag: _TranslationTable(_split_rule(flag)) for flag in (False, True)}
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ASCII_PUNCT = r"!-/:-@\[-`{-~"
_ASCII_WORD = re.compile(rf"[^\s{_ASCII_PUNCT}]+|[{_ASCII_PUNCT}]")


class BasicTokenizer:
    """Text -> words: clean, split CJK, lower-case and strip accents (uncased), split punctuation."""

    def __init__(
        self,
        lowercase: bool = True,
        strip_accents: bool | None = None,
        tokenize_chinese_chars: bool = True,
        never_split: Iterable[str] = SPECIAL_TOKENS,
    ):
        self.lowercase = lowercase
        # None means "as lowercase", as in BERT: uncased vocabularies have no accents
        self.strip_accents = lowercase if strip_accents is None else strip_accents
        self.tokenize_chinese_chars = tokenize_chinese_chars
        self.never_split = frozenset(never_split)
        self._clean = _CLEAN_TABLES[tokenize_chinese_chars]
        self._split = _SPLIT_TABLES[self.strip_accents]

    def tokenize(self, text: str) -> list[str]:
        """Split text into words; a word in never_split (a special token) is kept whole."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if text.isascii():  # fast path: no accents, no CJK, no Unicode punctuation
            if _ASCII_CONTROL.search(text):
                text = _ASCII_CONTROL.sub("", text)
            if "[" in text and self._has_never_split(text):
                return self._tokenize_word_by_word(text)
            return _ASCII_WORD.findall(text.lower() if self.lowercase else text)
        text = unicodedata.normalize("NFC", text.translate(self._clean))
        if "[" in text and self._has_never_split(text):
            return self._tokenize_word_by_word(text)
        return self._split_words(text)

    def _split_words(self, text: str) -> list[str]:
        # lower-casing, accent stripping and punctuation splitting act on whitespace-separated
        # words one by one in BERT; on the whole text they give the same result, only faster
        if self.lowercase:
            text = text.lower()
        if self.strip_accents:
            text = unicodedata.normalize("NFD", text)
        return text.translate(self._split).split()

    def _has_never_split(self, text: str) -> bool:
        return any(token in text for token in self.never_split)

    def _tokenize_word_by_word(self, text: str) -> list[str]:
        # the slow path BERT always takes: needed only when a never-split token is in the text
        words: list[str] = []
        for word in text.split():
            if word in self.never_split:
                words.append(word)
            else:
                words.extend(self._split_words(word))
        return words


# ---- WordPiece -----------------------------------------------------------------------------


def wordpiece_tokenize(
    word: str,
    vocab: Container[str],
    unk_token: str = UNK,
    max_input_chars_per_word: int = MAX_INPUT_CHARS_PER_WORD,
) -> list[str]:
    """Greedy longest-match-first WordPiece on one word: "unaffable" -> ["un", "##aff", "##able"].

    Take the longest prefix of the word that is in the vocabulary, then the longest "##" piece
    that continues it, until the word is used up. A word that no pieces cover, or that is longer
    than max_input_chars_per_word characters, becomes [unk_token] (the whole word, as BERT).
    """
    if len(word) > max_input_chars_per_word:
        return [unk_token]
    pieces = []
    start = 0
    while start < len(word):
        end = len(word)
        while end > start:  # shrink the candidate from the right until the vocabulary has it
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
            end -= 1
        else:
            return [unk_token]
        pieces.append(piece)
        start = end
    return pieces


# ---- training a vocabulary ----------------------------------------------------------------


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


# ---- vocabulary files ----------------------------------------------------------------------


def _check_vocab(tokens: Sequence[str], source: str) -> None:
    """Raise ValueError naming the line when tokens are not a usable BERT vocabulary."""
    if not tokens:
        raise ValueError(f"{source} is empty: a vocabulary needs at least the special tokens")
    first_line: dict[str, int] = {}
    for line, token in enumerate(tokens, start=1):
        if not isinstance(token, str):
            raise TypeError(
                f"{source}, entry {line}: tokens must be str, got {type(token).__name__}"
            )
        if token == "" or token.strip() != token:
            raise ValueError(
                f"{source}, line {line}: token {token!r} is empty or has surrounding whitespace; "
                "write one token per line, no blank lines"
            )
        if token in first_line:
            raise ValueError(
                f"{source}, line {line}: duplicate token {token!r} (first on line "
                f"{first_line[token]}); each token must appear once, its id is its line number - 1"
            )
        first_line[token] = line
    missing = [t for t in SPECIAL_TOKENS if t not in first_line]
    if missing:
        raise ValueError(
            f"{source} lacks the special token(s) {', '.join(missing)} (after line {len(tokens)}); "
            f"a BERT vocabulary needs all of {', '.join(SPECIAL_TOKENS)}"
        )


def load_vocab(path: str | Path) -> list[str]:
    """Read a vocab.txt (one token per line, id = line number - 1) and check it."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no vocabulary file at {path}; expected a vocab.txt")
    text = path.read_text(encoding="utf-8")
    if text.endswith("\n"):
        text = text[:-1]
    tokens = text.split("\n") if text else []  # not splitlines(): tokens may hold \x85 or \u2028
    _check_vocab(tokens, f"vocabulary file {path.name}")
    return tokens


def _write_atomically(path: Path, text: str) -> None:
    """Write text to path through a temporary file in the same folder and os.replace."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ---- encodings -----------------------------------------------------------------------------


@dataclass
class Encoding:
    """One model input, [CLS] A [SEP] (B [SEP]) [PAD]...; every field is a list of length seq."""

    tokens: list[str]
    input_ids: list[int]
    token_type_ids: list[int]  # segment: 0 for [CLS] A [SEP], 1 for B [SEP], 0 for padding
    attention_mask: list[int]  # 1 for real tokens, 0 for padding
    special_tokens_mask: list[int]  # 1 for [CLS], [SEP] and padding
    word_ids: list[int | None]  # the word (of its segment) each piece came from; None if special

    def __len__(self) -> int:
        return len(self.input_ids)

    def __getitem__(self, key: str) -> list:
        """enc["input_ids"] as in Hugging Face."""
        if key not in self.__dataclass_fields__:
            raise KeyError(f"an Encoding has {', '.join(self.__dataclass_fields__)}; not {key!r}")
        return getattr(self, key)


def get_tokens_and_segments(
    tokens_a: list[str], tokens_b: list[str] | None = None
) -> tuple[list[str], list[int]]:
    """d2l's helper: [CLS] A [SEP] (B [SEP]) and its segment ids, 0 for A's part and 1 for B's."""
    tokens = [CLS, *tokens_a, SEP]
    segments = [0] * (len(tokens_a) + 2)
    if tokens_b is not None:
        tokens += [*tokens_b, SEP]
        segments += [1] * (len(tokens_b) + 1)
    return tokens, segments


# ---- the tokenizer -------------------------------------------------------------------------


class BertTokenizer:
    """BERT's tokenizer: text (or a pair of texts) -> Encoding, with truncation and padding.

    vocab: the tokens in id order (a list, e.g. from train_wordpiece) or a dict token -> id; it
    must hold [PAD] [UNK] [CLS] [SEP] [MASK]. lowercase: True for uncased vocabularies;
    strip_accents: None means "as lowercase", as in BERT. model_max_length: the length that
    truncation=True and padding="max_length" use when no max_length is given.
    """

    def __init__(
        self,
        vocab: Sequence[str] | dict[str, int],
        lowercase: bool = True,
        strip_accents: bool | None = None,
        tokenize_chinese_chars: bool = True,
        model_max_length: int = 512,
    ):
        if isinstance(vocab, dict):
            ids = sorted(vocab.values())
            if ids != list(range(len(vocab))):
                raise ValueError("a vocab dict must map its tokens to the ids 0, 1, ..., len - 1")
            tokens = sorted(vocab, key=vocab.__getitem__)
        elif isinstance(vocab, (str, Path)):
            raise TypeError(
                "vocab is a list of tokens or a dict; for a file use BertTokenizer.from_vocab_file"
                "(path), for a folder BertTokenizer.from_pretrained(folder)"
            )
        else:
            tokens = list(vocab)
        _check_vocab(tokens, "the vocabulary")
        self.ids_to_tokens: list[str] = tokens
        self.vocab: dict[str, int] = {token: i for i, token in enumerate(tokens)}
        self.lowercase = lowercase
        self.strip_accents = strip_accents
        self.tokenize_chinese_chars = tokenize_chinese_chars
        self.model_max_length = model_max_length
        self.basic_tokenizer = BasicTokenizer(lowercase, strip_accents, tokenize_chinese_chars)
        self.pad_token_id, self.unk_token_id, self.cls_token_id, self.sep_token_id = (
            self.vocab[t] for t in (PAD, UNK, CLS, SEP)
        )
        self.mask_token_id = self.vocab[MASK]
        self.all_special_ids = [self.vocab[t] for t in SPECIAL_TOKENS]
        self._special_re = re.compile("(" + "|".join(map(re.escape, SPECIAL_TOKENS)) + ")")
        # no piece is longer than these (in characters, without "##"): bounds the greedy search
        self._max_initial = max((len(t) for t in tokens if not t.startswith("##")), default=0)
        self._max_continuation = max((len(t) - 2 for t in tokens if t.startswith("##")), default=0)
        self._cache: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] = {}

    # -- loading and saving --

    @classmethod
    def from_vocab_file(cls, path: str | Path, **kwargs: Any) -> BertTokenizer:
        """A tokenizer for a vocab.txt; kwargs as the constructor's (lowercase=True, ...)."""
        return cls(load_vocab(path), **kwargs)

    @classmethod
    def from_pretrained(cls, path: str | Path) -> BertTokenizer:
        """Load a Hugging Face tokenizer folder: vocab.txt and, if there, tokenizer_config.json."""
        folder = Path(path)
        if folder.is_file():
            raise ValueError(
                f"from_pretrained expects a folder, got the file {folder.name}; "
                "for a vocab.txt use BertTokenizer.from_vocab_file(path)"
            )
        if not (folder / "vocab.txt").is_file():
            raise FileNotFoundError(
                f"no vocab.txt in {folder}; expected a tokenizer folder as written by "
                "save_pretrained (vocab.txt + tokenizer_config.json)"
            )
        config: dict[str, Any] = {}
        if (folder / "tokenizer_config.json").is_file():
            config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        for key, expected in zip(
            ("pad_token", "unk_token", "cls_token", "sep_token", "mask_token"), SPECIAL_TOKENS
        ):
            value = config.get(key, expected)
            value = value.get("content", expected) if isinstance(value, dict) else value
            if value != expected:
                raise ValueError(
                    f"tokenizer_config.json sets {key} to {value!r}; minibert's BERT tokenizer "
                    f"uses {expected!r}"
                )
        max_length = config.get("model_max_length", 512)
        return cls.from_vocab_file(
            folder / "vocab.txt",
            lowercase=bool(config.get("do_lower_case", True)),
            strip_accents=config.get("strip_accents"),
            tokenize_chinese_chars=bool(config.get("tokenize_chinese_chars", True)),
            model_max_length=max_length
            if isinstance(max_length, int) and max_length < 10**9
            else 512,
        )

    def save_pretrained(self, path: str | Path) -> Path:
        """Write vocab.txt, tokenizer_config.json and special_tokens_map.json into a folder."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        specials = dict(
            zip(("pad_token", "unk_token", "cls_token", "sep_token", "mask_token"), SPECIAL_TOKENS)
        )
        config = {
            "tokenizer_class": "BertTokenizer",
            "do_lower_case": self.lowercase,
            "strip_accents": self.strip_accents,
            "tokenize_chinese_chars": self.tokenize_chinese_chars,
            "model_max_length": self.model_max_length,
            **specials,
        }
        _write_atomically(folder / "vocab.txt", "".join(t + "\n" for t in self.ids_to_tokens))
        _write_atomically(folder / "tokenizer_config.json", json.dumps(config, indent=2) + "\n")
        _write_atomically(folder / "special_tokens_map.json", json.dumps(specials, indent=2) + "\n")
        return folder

    # -- vocabulary --

    @property
    def vocab_size(self) -> int:
        """Number of tokens in the vocabulary."""
        return len(self.ids_to_tokens)

    def __len__(self) -> int:
        return len(self.ids_to_tokens)

    def __repr__(self) -> str:
        return (
            f"BertTokenizer(vocab_size={self.vocab_size}, lowercase={self.lowercase}, "
            f"model_max_length={self.model_max_length})"
        )

    def convert_tokens_to_ids(self, tokens: str | Iterable[str]) -> int | list[int]:
        """Token(s) -> id(s); a token not in the vocabulary gets the [UNK] id."""
        if isinstance(tokens, str):
            return self.vocab.get(tokens, self.unk_token_id)
        return [self.vocab.get(t, self.unk_token_id) for t in tokens]

    def convert_ids_to_tokens(self, ids: int | Iterable[int]) -> str | list[str]:
        """Id(s) -> token(s); accepts ints, a list or a 1-d tensor."""
        if hasattr(ids, "tolist"):  # a tensor or numpy array
            ids = ids.tolist()
        if not isinstance(ids, Iterable):
            return self._id_to_token(ids)
        return [self._id_to_token(i) for i in ids]

    def _id_to_token(self, i: int) -> str:
        try:
            i = operator.index(i)  # ints and numpy integers; not floats
        except TypeError:
            raise TypeError(f"token ids must be integers, got {type(i).__name__}") from None
        if not 0 <= i < len(self.ids_to_tokens):
            raise ValueError(f"token id {i} is not in the vocabulary (ids 0..{len(self) - 1})")
        return self.ids_to_tokens[i]

    # -- tokenizing --

    def _wordpiece(self, word: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
        """Greedy longest-match-first on one word, cached; the same result as wordpiece_tokenize."""
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        if len(word) > MAX_INPUT_CHARS_PER_WORD:
            pieces = [UNK]
        else:
            pieces = []
            vocab, start, n = self.vocab, 0, len(word)
            while start < n:
                if start == 0:
                    end = min(n, self._max_initial)
                else:
                    end = min(n, start + self._max_continuation)
                while end > start:
                    piece = word[start:end] if start == 0 else "##" + word[start:end]
                    if piece in vocab:
                        break
                    end -= 1
                else:
                    pieces = [UNK]
                    break
                pieces.append(piece)
                start = end
        result = (tuple(pieces), tuple(self.vocab[p] for p in pieces))
        if len(self._cache) >= 1 << 20:  # a bound for endless streams of new words
            self._cache.clear()
        self._cache[word] = result
        return result

    def _encode_text(self, text: str) -> tuple[list[str], list[int], list[int]]:
        """Text -> (pieces, ids, word index of each piece), no special tokens added."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        chunks = self._special_re.split(text) if "[" in text else [text]
        pieces: list[str] = []
        ids: list[int] = []
        word_ids: list[int] = []
        word = 0
        for i, chunk in enumerate(chunks):
            if i % 2:  # a special token written in the text: one word, never split
                words = [chunk]
            elif chunk:
                words = self.basic_tokenizer.tokenize(chunk)
            else:
                continue
            for w in words:
                p, d = self._wordpiece(w)
                pieces += p
                ids += d
                word_ids += [word] * len(d)
                word += 1
        return pieces, ids, word_ids

    def tokenize(self, text: str) -> list[str]:
        """Text -> WordPiece tokens, without [CLS] and [SEP]."""
        return self._encode_text(text)[0]

    def __call__(
        self,
        text: str,
        text_pair: str | None = None,
        max_length: int | None = None,
        truncation: bool | str | None = None,
        padding: bool | str = False,
    ) -> Encoding:
        """Encode one text or a pair: [CLS] A [SEP] (B [SEP]), truncated and padded on request.

        truncation: False never cuts (a too-long input comes back whole); True or "longest_first"
        removes pieces one at a time from the longer segment (the second on ties); "only_first"
        or "only_second" cut one segment; None (default) means "longest_first" when max_length
        is given. padding: False, "longest" (no-op for one input) or "max_length".
        """
        return self._encode(text, text_pair, max_length, truncation, padding, pad_to=None)

    def _check_options(
        self, n_special: int, max_length: int | None, truncation: Any, padding: Any
    ) -> tuple[int | None, str | None, str | None]:
        """Validate the options; return (max_length, truncation strategy, padding strategy)."""
        if truncation is None:
            truncation = max_length is not None
        if truncation is True:
            truncation = "longest_first"
        elif truncation is False:
            truncation = None
        elif truncation not in TRUNCATION_STRATEGIES:
            raise ValueError(
                f"truncation must be True, False, None or one of {TRUNCATION_STRATEGIES}, "
                f"got {truncation!r}"
            )
        if padding is True:
            padding = "longest"
        elif padding is False or padding == "do_not_pad":
            padding = None
        elif padding not in PADDING_STRATEGIES:
            raise ValueError(
                f"padding must be True, False or one of {PADDING_STRATEGIES}, got {padding!r}"
            )
        if max_length is None and (truncation or padding == "max_length"):
            max_length = self.model_max_length
        if max_length is not None:
            if isinstance(max_length, bool) or not isinstance(max_length, int):
                raise TypeError(f"max_length must be an int, got {type(max_length).__name__}")
            if max_length < n_special:
                raise ValueError(
                    f"max_length={max_length} leaves no room: [CLS] and [SEP] alone need "
                    f"{n_special} positions here; use max_length >= {n_special}"
                )
        return max_length, truncation, padding

    def _encode(
        self,
        text: str,
        text_pair: str | None,
        max_length: int | None,
        truncation: Any,
        padding: Any,
        pad_to: int | None,
    ) -> Encoding:
        if text_pair is not None and not isinstance(text_pair, str):
            raise TypeError(f"text_pair must be a str or None, got {type(text_pair).__name__}")
        n_special = 2 if text_pair is None else 3
        max_length, truncation, padding = self._check_options(
            n_special, max_length, truncation, padding
        )
        if truncation == "only_second" and text_pair is None:
            raise ValueError("truncation='only_second' needs a text_pair; use True for one text")
        a = self._encode_text(text)
        b = self._encode_text(text_pair) if text_pair is not None else None
        if truncation and max_length is not None:
            a, b = _truncate(a, b, max_length - n_special, truncation)
        tokens = [CLS, *a[0], SEP]
        ids = [self.cls_token_id, *a[1], self.sep_token_id]
        word_ids: list[int | None] = [None, *a[2], None]
        segments = [0] * len(ids)
        if b is not None:
            tokens += [*b[0], SEP]
            ids += [*b[1], self.sep_token_id]
            word_ids += [*b[2], None]
            segments += [1] * (len(b[1]) + 1)
        special = [1] + [0] * len(a[1]) + [1] + ([0] * len(b[1]) + [1] if b is not None else [])
        attention = [1] * len(ids)
        target = pad_to if pad_to is not None else max_length if padding == "max_length" else None
        n_pad = target - len(ids) if target is not None and target > len(ids) else 0
        return Encoding(
            tokens=tokens + [PAD] * n_pad,
            input_ids=ids + [self.pad_token_id] * n_pad,
            token_type_ids=segments + [0] * n_pad,
            attention_mask=attention + [0] * n_pad,
            special_tokens_mask=special + [1] * n_pad,
            word_ids=word_ids + [None] * n_pad,
        )

    def encode_batch(
        self,
        batch: Sequence[str] | Sequence[tuple[str, str]],
        max_length: int | None = None,
        truncation: bool | str | None = None,
        padding: bool | str = "longest",
        return_tensors: str | None = "pt",
    ) -> dict[str, Any] | list[Encoding]:
        """Encode texts or (text, text_pair) tuples, padded to a common length.

        return_tensors="pt" gives a dict of (batch, seq) long tensors: input_ids, token_type_ids,
        attention_mask (ready for model(**batch)); None gives the list of Encodings.
        """
        if isinstance(batch, str) or not isinstance(batch, Sequence):
            raise TypeError(
                f"batch must be a list of texts or of (text, text_pair) tuples, got "
                f"{type(batch).__name__}; for one text call the tokenizer itself"
            )
        if return_tensors not in ("pt", None):
            raise ValueError(f"return_tensors must be 'pt' or None, got {return_tensors!r}")
        pairs = [(x, None) if isinstance(x, str) else x for x in batch]
        for i, pair in enumerate(pairs):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(
                    f"batch item {i} is a {type(pair).__name__}; expected a str or a "
                    "(text, text_pair) tuple"
                )
        encodings = [self._encode(a, b, max_length, truncation, False, None) for a, b in pairs]
        n_special = 3 if any(b is not None for _, b in pairs) else 2
        max_length, _, padding = self._check_options(n_special, max_length, truncation, padding)
        if padding is not None and encodings:
            target = max(map(len, encodings))
            if padding == "max_length":
                target = max(target, max_length)
            encodings = [self._pad(e, target) for e in encodings]
        if return_tensors is None:
            return encodings
        if padding is None and len({len(e) for e in encodings}) > 1:
            raise ValueError("tensors need equal lengths: use padding='longest' or 'max_length'")
        import torch

        keys = ("input_ids", "token_type_ids", "attention_mask")
        if not encodings:
            return {k: torch.zeros(0, 0, dtype=torch.long) for k in keys}
        return {k: torch.tensor([e[k] for e in encodings], dtype=torch.long) for k in keys}

    def _pad(self, enc: Encoding, target: int) -> Encoding:
        n = target - len(enc)
        if n <= 0:
            return enc
        return Encoding(
            tokens=enc.tokens + [PAD] * n,
            input_ids=enc.input_ids + [self.pad_token_id] * n,
            token_type_ids=enc.token_type_ids + [0] * n,
            attention_mask=enc.attention_mask + [0] * n,
            special_tokens_mask=enc.special_tokens_mask + [1] * n,
            word_ids=enc.word_ids + [None] * n,
        )

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = False) -> str:
        """Ids (seq,) -> text: pieces joined by spaces, "##" pieces glued to the one before."""
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        ids = list(ids)
        if any(isinstance(i, (list, tuple)) for i in ids):
            raise ValueError("decode takes one sequence of ids (seq,); decode a batch row by row")
        tokens = self.convert_ids_to_tokens(ids)
        if skip_special_tokens:
            specials = set(SPECIAL_TOKENS)
            tokens = [t for t in tokens if t not in specials]
        return " ".join(tokens).replace(" ##", "").strip()


def _truncate(
    a: tuple[list[str], list[int], list[int]],
    b: tuple[list[str], list[int], list[int]] | None,
    budget: int,
    strategy: str,
) -> tuple[tuple[list[str], list[int], list[int]], tuple[list[str], list[int], list[int]] | None]:
    """Cut segments to budget pieces in all: longest_first, only_first or only_second."""
    n_a, n_b = len(a[1]), len(b[1]) if b is not None else 0
    excess = n_a + n_b - budget
    if excess <= 0:
        return a, b
    if b is None:
        keep_a, keep_b = budget, 0
    elif strategy == "longest_first":
        # BERT removes one piece at a time from the longer segment (from the second on ties):
        # a short segment is kept whole; when both are long, the first keeps ceil(budget / 2)
        if min(n_a, n_b) <= budget // 2:
            keep_a, keep_b = (budget - n_b, n_b) if n_a > n_b else (n_a, budget - n_a)
        else:
            keep_a, keep_b = budget - budget // 2, budget // 2
    elif strategy == "only_first":
        if excess > n_a:
            raise ValueError(
                f"truncation='only_first' would have to remove {excess} pieces from the first "
                f"text, which has {n_a}; use truncation='longest_first' or a larger max_length"
            )
        keep_a, keep_b = n_a - excess, n_b
    else:  # only_second
        if excess > n_b:
            raise ValueError(
                f"truncation='only_second' would have to remove {excess} pieces from the second "
                f"text, which has {n_b}; use truncation='longest_first' or a larger max_length"
            )
        keep_a, keep_b = n_a, n_b - excess
    a = (a[0][:keep_a], a[1][:keep_a], a[2][:keep_a])
    if b is not None:
        b = (b[0][:keep_b], b[1][:keep_b], b[2][:keep_b])
    return a, b
