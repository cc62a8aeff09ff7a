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

``BasicTokenizer.tokenize_with_offsets`` gives the same words with, for each of their characters,
the span of the original text it came from (what extractive question answering maps answers
back with): a removed character (control, accent) belongs to no word.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Container, Iterable, Sequence

Span = tuple[int, int]  # (start, end) character offsets into the original text
# a word and, for each of its characters, the start and the end in the text of what it came from
Word = tuple[str, Sequence[int], Sequence[int]]
AlignedChars = list[tuple[str, int, int]]  # (character, start, end): a character and its source

__all__ = [
    "MAX_INPUT_CHARS_PER_WORD",
    "SPECIAL_TOKENS",
    "BasicTokenizer",
    "Span",
    "Word",
    "is_chinese_char",
    "is_control",
    "is_punctuation",
    "is_whitespace",
    "piece_offsets",
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
    """A Unicode 'other' character (Cc, Cf, Cn, Co, Cs) other than tab, newline, carriage return.

    The categories are this Python's (``unicodedata.unidata_version``: Unicode 13.0 on Python
    3.10, 14.0 on 3.11, 15.0 on 3.12 and 3.13), as in BERT's own tokenizer: a character newer
    than the tables (U+1FAE0, an emoji of Unicode 14, on 3.10) is unassigned (Cn) and dropped."""
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
# the text between BERT's whitespace (is_whitespace: \t \n \r and the space separators, Zs),
# which cleaning turns into spaces that end words: each chunk can be tokenized on its own
_BERT_WHITESPACE = " \t\n\r\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000"
_CHUNK = re.compile(f"[^{_BERT_WHITESPACE}]+")


# ---- the same steps on aligned characters: each keeps the span of the text it came from -------


def _aligned_translate(chars: AlignedChars, table: dict) -> AlignedChars:
    """str.translate, character by character: what a character becomes keeps its span."""
    return [(out, start, end) for char, start, end in chars for out in char.translate(table)]


def _nfc(text: str) -> str:
    """text in Unicode normal form C (composed)."""
    return unicodedata.normalize("NFC", text)


def _nfd(text: str) -> str:
    """text in Unicode normal form D (decomposed, combining marks in canonical order)."""
    return unicodedata.normalize("NFD", text)


def _aligned_lower(chars: AlignedChars) -> AlignedChars:
    """str.lower: the whole text's (for the word-final sigma), each character keeping the span of
    the character it came from (str.lower gives len(char.lower()) characters for each)."""
    text = "".join(char for char, _, _ in chars).lower()
    spans = [(start, end) for char, start, end in chars for _ in char.lower()]
    return [(out, start, end) for out, (start, end) in zip(text, spans, strict=True)]


def _aligned_nfd(chars: AlignedChars) -> AlignedChars:
    """NFD, aligned as Hugging Face's Rust tokenizer does: each character decomposed, its first
    part marked as replacing it and the others as inserted; each run of combining marks put in
    canonical order (a stable sort by combining class); then, in order, a replacing part takes
    the span of the next character of the text, an inserted part that of the last one taken."""
    stream = [(part, i > 0) for char, _, _ in chars for i, part in enumerate(_nfd(char))]
    i = 0
    while i < len(stream):
        j = i
        while j < len(stream) and unicodedata.combining(stream[j][0]):
            j += 1
        stream[i:j] = sorted(stream[i:j], key=lambda item: unicodedata.combining(item[0]))
        i = j + 1
    out: AlignedChars = []
    taken = -1
    for part, inserted in stream:
        taken += not inserted
        out.append((part, chars[taken][1], chars[taken][2]))
    return out


def _aligned_nfc(chars: AlignedChars) -> AlignedChars:
    """NFC: cut the text wherever cutting does not change its NFC; a stretch that NFC changes
    (e + U+0301 -> é, reordered marks) gives characters that all span the whole stretch."""
    text = "".join(char for char, _, _ in chars)
    composed = _nfc(text)
    if composed == text:
        return chars
    inner = [i for i in range(1, len(text)) if _nfc(text[:i]) + _nfc(text[i:]) == composed]
    cuts = [0, *inner, len(text)]
    out: AlignedChars = []
    for i, j in zip(cuts, cuts[1:]):
        stretch = _nfc(text[i:j])
        out += (
            chars[i:j]
            if stretch == text[i:j]
            else [(c, chars[i][1], chars[j - 1][2]) for c in stretch]
        )
    if "".join(char for char, _, _ in out) != composed:  # never seen: then one stretch
        out = [(c, chars[0][1], chars[-1][2]) for c in composed]
    return out


def _aligned_split(chars: AlignedChars) -> list[Word]:
    """str.split() on aligned characters: each word with its characters' starts and ends."""
    words: list[Word] = []
    current: AlignedChars = []
    for item in [*chars, (" ", 0, 0)]:
        if not item[0].isspace():
            current.append(item)
        elif current:
            word, starts, ends = zip(*current)
            words.append(("".join(word), starts, ends))
            current = []
    return words


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

    def tokenize_with_offsets(self, text: str) -> list[Word]:
        """tokenize, with the start and end in text of what each character of a word came from.

        Mostly a character of a word is one character of text; several can come from one ("İ"
        lower-cased is i + a dot, a Hangul syllable becomes its letters) and, in a cased
        vocabulary (NFC, no accent stripping), one can come from several (e + U+0301 -> é).
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if self._is_plain(text):
            return self._plain_words(text, 0)
        words: list[Word] = []
        for match in _CHUNK.finditer(text):  # only the unusual chunks take the slow path
            chunk, start = match.group(), match.start()
            plain = self._is_plain(chunk)
            words += self._plain_words(chunk, start) if plain else self._aligned_words(chunk, start)
        return words

    def _is_plain(self, text: str) -> bool:
        """ASCII without control characters or never-split tokens: no character changes length."""
        return (
            text.isascii()
            and not _ASCII_CONTROL.search(text)
            and not ("[" in text and self._has_never_split(text))
        )

    def _plain_words(self, text: str, start: int) -> list[Word]:
        """The words of a plain text that starts at `start`: each character is its own."""
        if self.lowercase:
            text = text.lower()
        return [
            (
                m.group(),
                range(start + m.start(), start + m.end()),
                range(start + m.start() + 1, start + m.end() + 1),
            )
            for m in _ASCII_WORD.finditer(text)
        ]

    def _aligned_words(self, chunk: str, start: int) -> list[Word]:
        """tokenize's steps on aligned characters, for a chunk of text that starts at `start`."""
        chars = _aligned_translate([(c, i, i + 1) for i, c in enumerate(chunk, start)], self._clean)
        if not self.strip_accents:  # with stripping, NFD follows: NFC then changes nothing
            chars = _aligned_nfc(chars)
        cleaned = "".join(char for char, _, _ in chars)
        if not ("[" in cleaned and self._has_never_split(cleaned)):
            return self._split_words_aligned(chars)
        words: list[Word] = []
        for word in _aligned_split(chars):  # as _tokenize_word_by_word
            if word[0] in self.never_split:
                words.append(word)
            else:
                words += self._split_words_aligned(list(zip(*word)))
        return words

    def _split_words_aligned(self, chars: AlignedChars) -> list[Word]:
        """_split_words on aligned characters, in the Rust tokenizer's order: accents stripped
        before lower-casing (its spans differ where lower-casing makes a mark, "İ" -> i + U+0307;
        the characters are the same)."""
        if self.strip_accents:
            chars = [item for item in _aligned_nfd(chars) if unicodedata.category(item[0]) != "Mn"]
        if self.lowercase:
            chars = _aligned_lower(chars)
        return _aligned_split(_aligned_translate(chars, self._split))

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


def piece_offsets(pieces: Sequence[str], starts: Sequence[int], ends: Sequence[int]) -> list[Span]:
    """Each piece's (start, end) in the text, from the starts and ends of its word's characters.

    One piece ([UNK] included) spans the whole word; otherwise the first piece covers len(piece)
    characters and each "##" piece len(piece) - 2, as Hugging Face's fast tokenizer counts.
    """
    if len(pieces) == 1:
        return [(starts[0], ends[-1])]
    offsets = []
    first = 0
    for i, piece in enumerate(pieces):
        last = first + len(piece) - (2 if i else 0) - 1
        offsets.append((starts[first], ends[last]))
        first = last + 1
    return offsets
