"""The two stages of BERT's tokenizer, as in Google's BERT (tokenization.py) and Hugging Face's
pure-Python BertTokenizer; ``tokenization.BertTokenizer`` runs them and makes BERT's input.

    BasicTokenizer().tokenize("Héllo, World!")          # ["hello", ",", "world", "!"]
    wordpiece_tokenize("unaffable", vocab)               # ["un", "##aff", "##able"]

1. BasicTokenizer: drop control characters, normalise whitespace, put spaces around CJK
   ideographs, NFC; for an uncased vocabulary lower-case and strip accents (NFD, drop the
   combining marks); split on whitespace and punctuation. The special tokens ([CLS], [MASK], ...)
   are never split.
2. WordPiece: each word becomes the longest vocabulary piece that starts it, then the longest
   "##" piece that continues it, and so on (greedy longest-match-first). A word that cannot be
   covered, or has more than 100 characters, becomes [UNK].
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Container, Iterable

__all__ = [
    "MAX_INPUT_CHARS_PER_WORD",
    "SPECIAL_TOKENS",
    "BasicTokenizer",
    "is_chinese_char",
    "is_control",
    "is_punctuation",
    "is_whitespace",
    "wordpiece_tokenize",
]

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)  # the order train_wordpiece gives them: ids 0..4
MAX_INPUT_CHARS_PER_WORD = 100  # longer words become [UNK], as in BERT


# ---- character classes (the definitions of Google's BERT tokenization.py) --------------------


def is_whitespace(char: str) -> bool:
    """Space, tab, newline, carriage return or any Unicode space separator (Zs)."""
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def is_control(char: str) -> bool:
    """A Unicode 'other' character (Cc, Cf, Cn, Co, Cs) other than tab, newline, carriage return."""
    return char not in "\t\n\r" and unicodedata.category(char).startswith("C")


def is_punctuation(char: str) -> bool:
    """Unicode punctuation (P*) or one of the ASCII symbols BERT also splits off (``$+<=>^`|~``)."""
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
    max_piece_chars: int | None = None,
) -> list[str]:
    """Greedy longest-match-first WordPiece on one word: "unaffable" -> ["un", "##aff", "##able"].

    Take the longest prefix of the word that is in the vocabulary, then the longest "##" piece
    that continues it, until the word is used up. A word that no pieces cover, or that is longer
    than max_input_chars_per_word characters, becomes [unk_token] (the whole word, as BERT).
    max_piece_chars (the longest piece of the vocabulary, "##" not counted) only saves time.
    """
    if len(word) > max_input_chars_per_word:
        return [unk_token]
    longest = len(word) if max_piece_chars is None else max_piece_chars
    pieces = []
    start = 0
    while start < len(word):
        end = min(len(word), start + longest)
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
