"""BERT's tokenizer: the vocabulary, the two stages of ``wordpiece``, the input layout, encoding.

    tok = BertTokenizer.from_pretrained(folder)          # a Hugging Face folder with vocab.txt
    enc = tok("a sentence", "another one", max_length=32, padding="max_length")
    enc.tokens, enc.input_ids, enc.token_type_ids, enc.attention_mask, enc.word_ids
    tok = BertTokenizer(vocab)                           # a list of tokens (see wordpiece_trainer)

    windows = tok(question, context, max_length=384, truncation="only_second", stride=128,
                  return_overflowing_tokens=True, return_offsets_mapping=True)
    windows[0].offsets, windows[0].sequence_ids        # for extractive question answering

Text goes through the two stages of Google's BERT (tokenization.py) and Hugging Face's
pure-Python BertTokenizer, in ``minibert.wordpiece``: the BasicTokenizer (clean, split CJK,
lower-case and strip accents for an uncased vocabulary, split on whitespace and punctuation;
special tokens never split) and greedy longest-match-first WordPiece. This module adds what makes
them BERT's input: the vocabulary and its files, [CLS] A [SEP] B [SEP] with segments, truncation,
padding and the attention mask, batches of tensors; and, for extractive question answering, the
character offsets of each piece and the overlapping windows of a long context (cut by
``minibert.context_windows``), both exactly as Hugging Face's fast (Rust) tokenizer gives them.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from minibert.context_windows import Segment, cut_into_windows
from minibert.utils import atomic_write, read_json_object
from minibert.wordpiece import (
    CLS,
    MASK,
    PAD,
    SEP,
    SPECIAL_TOKENS,
    UNK,
    BasicTokenizer,
    Span,
    Word,
    piece_offsets,
    wordpiece_tokenize,
)

__all__ = [
    "SPECIAL_TOKENS",
    "BertTokenizer",
    "Encoding",
    "EncodingWithOffsets",
    "build_inputs",
    "get_tokens_and_segments",
    "load_vocab",
    "pad",
]

# their names in a Hugging Face tokenizer_config.json / special_tokens_map.json
SPECIAL_TOKEN_NAMES = dict(
    zip(("pad_token", "unk_token", "cls_token", "sep_token", "mask_token"), SPECIAL_TOKENS)
)
TRUNCATION_STRATEGIES = ("longest_first", "only_first", "only_second")
PADDING_STRATEGIES = ("longest", "max_length")


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
    try:
        text = path.read_text(encoding="utf-8-sig")  # -sig: a byte-order mark is not a token
    except UnicodeDecodeError as exc:
        raise ValueError(f"vocabulary file {path} is not UTF-8 text ({exc})") from None
    if text.endswith("\n"):
        text = text[:-1]
    tokens = text.split("\n") if text else []  # not splitlines(): tokens may hold \x85 or \u2028
    _check_vocab(tokens, f"vocabulary file {path.name}")
    return tokens


def _read_tokenizer_config(file: Path) -> dict[str, Any]:
    """tokenizer_config.json as a dict ({} when absent); a broken file raises naming it."""
    if not file.is_file():
        return {}
    config = read_json_object(file)
    for key, allowed in (
        ("do_lower_case", (True, False)),
        ("tokenize_chinese_chars", (True, False)),
        ("strip_accents", (True, False, None)),
    ):
        if key in config and not any(config[key] is a for a in allowed):
            raise ValueError(
                f"{file}: {key} must be true or false (JSON booleans), got {config[key]!r}"
            )
    return config


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

    @property
    def sequence_ids(self) -> list[int | None]:
        """Which text each position holds: 0 for A, 1 for B, None for [CLS], [SEP] and [PAD]."""
        return [None if w is None else t for w, t in zip(self.word_ids, self.token_type_ids)]

    def __getitem__(self, key: str) -> list:
        """enc["input_ids"] as in Hugging Face."""
        if key not in self.__dataclass_fields__:
            raise KeyError(f"an Encoding has {', '.join(self.__dataclass_fields__)}; not {key!r}")
        return getattr(self, key)


@dataclass
class EncodingWithOffsets(Encoding):
    """An Encoding that also says where in its text each piece came from (what the tokenizer
    returns with return_offsets_mapping=True; computing offsets costs time, so only then)."""

    # (start, end): the characters of its own text (A or B) the piece came from, its part of the
    # word for a "##" piece, the whole word for [UNK]; (0, 0) for [CLS], [SEP] and [PAD]
    offsets: list[Span]


T = TypeVar("T")


def build_inputs(
    first: Sequence[T], second: Sequence[T] | None, cls: T, sep: T
) -> tuple[list[T], list[int], list[int]]:
    """BERT's input layout [CLS] A [SEP] (B [SEP]) -> (sequence, token_type_ids, special mask).

    Works on anything per position: tokens, ids or word indices. token_type_ids are 0 for
    [CLS] A [SEP] and 1 for B [SEP]; the special-tokens mask is 1 at [CLS] and each [SEP].
    """
    sequence = [cls, *first, sep]
    token_type_ids = [0] * len(sequence)
    special = [1, *[0] * len(first), 1]
    if second is not None:
        sequence += [*second, sep]
        token_type_ids += [1] * (len(second) + 1)
        special += [*[0] * len(second), 1]
    return sequence, token_type_ids, special


def pad(values: Sequence[T], length: int, value: T) -> list[T]:
    """values followed by `value` up to `length` items (unchanged when already that long)."""
    return [*values, *[value] * (length - len(values))]


def get_tokens_and_segments(
    tokens_a: list[str], tokens_b: list[str] | None = None
) -> tuple[list[str], list[int]]:
    """d2l's helper: [CLS] A [SEP] (B [SEP]) and its segment ids, 0 for A's part and 1 for B's."""
    tokens, segments, _ = build_inputs(tokens_a, tokens_b, CLS, SEP)
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
        # no piece is longer than this (in characters, without "##"): bounds the greedy search
        self._max_piece_chars = max((len(t.removeprefix("##")) for t in tokens), default=0)
        self._pad_values = {  # what each Encoding field holds at a padding position
            "tokens": PAD,
            "input_ids": self.pad_token_id,
            "token_type_ids": 0,
            "attention_mask": 0,
            "special_tokens_mask": 1,
            "word_ids": None,
        }
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
        config = _read_tokenizer_config(folder / "tokenizer_config.json")
        for key, expected in SPECIAL_TOKEN_NAMES.items():
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
            lowercase=config.get("do_lower_case", True),
            strip_accents=config.get("strip_accents"),
            tokenize_chinese_chars=config.get("tokenize_chinese_chars", True),
            model_max_length=max_length
            if isinstance(max_length, int) and max_length < 10**9
            else 512,
        )

    def save_pretrained(self, path: str | Path) -> Path:
        """Write vocab.txt, tokenizer_config.json and special_tokens_map.json into a folder."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        specials = SPECIAL_TOKEN_NAMES
        config = {
            "tokenizer_class": "BertTokenizer",
            "do_lower_case": self.lowercase,
            "strip_accents": self.strip_accents,
            "tokenize_chinese_chars": self.tokenize_chinese_chars,
            "model_max_length": self.model_max_length,
            **specials,
        }
        atomic_write(folder / "vocab.txt", "".join(t + "\n" for t in self.ids_to_tokens))
        atomic_write(folder / "tokenizer_config.json", json.dumps(config, indent=2) + "\n")
        atomic_write(folder / "special_tokens_map.json", json.dumps(specials, indent=2) + "\n")
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
        """wordpiece_tokenize on one word, with ids, cached (words repeat a lot in text)."""
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        pieces = wordpiece_tokenize(word, self.vocab, max_piece_chars=self._max_piece_chars)
        result = (tuple(pieces), tuple(self.vocab[p] for p in pieces))
        if len(self._cache) >= 1 << 20:  # a bound for endless streams of new words
            self._cache.clear()
        self._cache[word] = result
        return result

    def _encode_text(self, text: str) -> Segment:
        """Text -> its pieces, their ids and the word index of each, no special tokens added."""
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
        return Segment(pieces, ids, word_ids)

    def _encode_text_with_offsets(self, text: str) -> Segment:
        """_encode_text, plus the (start, end) characters of text that each piece came from."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        words: list[Word] = []
        start = 0
        for i, chunk in enumerate(self._special_re.split(text) if "[" in text else [text]):
            end = start + len(chunk)
            if i % 2:  # a special token written in the text: one word, never split
                words.append((chunk, range(start, end), range(start + 1, end + 1)))
            elif start == 0:
                words += self.basic_tokenizer.tokenize_with_offsets(chunk)
            else:  # a chunk after a special token: its offsets move by `start`
                for word, starts, ends in self.basic_tokenizer.tokenize_with_offsets(chunk):
                    words.append((word, [x + start for x in starts], [x + start for x in ends]))
            start = end
        pieces: list[str] = []
        ids: list[int] = []
        word_ids: list[int] = []
        offsets: list[Span] = []
        for index, (word, starts, ends) in enumerate(words):
            word_pieces, word_piece_ids = self._wordpiece(word)
            pieces += word_pieces
            ids += word_piece_ids
            word_ids += [index] * len(word_piece_ids)
            offsets += piece_offsets(word_pieces, starts, ends)
        return Segment(pieces, ids, word_ids, offsets)

    def tokenize(self, text: str) -> list[str]:
        """Text -> WordPiece tokens, without [CLS] and [SEP]."""
        return self._encode_text(text).tokens

    def __call__(
        self,
        text: str,
        text_pair: str | None = None,
        max_length: int | None = None,
        truncation: bool | str | None = None,
        padding: bool | str = False,
        stride: int = 0,
        return_overflowing_tokens: bool = False,
        return_offsets_mapping: bool = False,
    ) -> Encoding | list[Encoding]:
        """Encode one text or a pair: [CLS] A [SEP] (B [SEP]), truncated and padded on request.

        truncation: False never cuts (a too-long input comes back whole); True or "longest_first"
        removes pieces one at a time from the longer segment (the second on ties); "only_first"
        or "only_second" cut one segment; None (default) means "longest_first" when max_length
        is given. padding: False, "longest" or "max_length".
        return_offsets_mapping: return an EncodingWithOffsets. return_overflowing_tokens: a list
        of Encodings, one per window of the text that truncation cuts (the context, with
        "only_second"), consecutive windows sharing `stride` pieces, as Hugging Face's fast
        tokenizer; "longest" padding then pads every window to the longest.
        """
        n_special = 2 if text_pair is None else 3
        options = self._check_options(n_special, max_length, truncation, padding)
        if stride and (isinstance(stride, bool) or not isinstance(stride, int) or stride < 0):
            raise ValueError(f"stride must be an int >= 0 (pieces windows share), got {stride!r}")
        if return_overflowing_tokens:
            return self._encode_windows(
                text, text_pair, *options, stride=stride, offsets=return_offsets_mapping
            )
        return self._encode(text, text_pair, *options, offsets=return_offsets_mapping)

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

    def _segments(
        self, text: str, text_pair: str | None, truncation: str | None, offsets: bool
    ) -> tuple[Segment, Segment | None]:
        """Both texts encoded (with their offsets if asked); the pair checked."""
        if text_pair is not None and not isinstance(text_pair, str):
            raise TypeError(f"text_pair must be a str or None, got {type(text_pair).__name__}")
        if truncation == "only_second" and text_pair is None:
            raise ValueError("truncation='only_second' needs a text_pair; use True for one text")
        encode_text = self._encode_text_with_offsets if offsets else self._encode_text
        return encode_text(text), encode_text(text_pair) if text_pair is not None else None

    def _assemble(self, a: Segment, b: Segment | None) -> Encoding:
        """[CLS] A [SEP] (B [SEP]) from encoded segments, offsets (0, 0) at the special tokens."""

        def both(field: str, cls: Any, sep: Any) -> list:  # one field of A and B, specials added
            return build_inputs(getattr(a, field), b and getattr(b, field), cls, sep)[0]

        tokens, token_type_ids, special = build_inputs(a.tokens, b and b.tokens, CLS, SEP)
        fields = (
            tokens,
            both("input_ids", self.cls_token_id, self.sep_token_id),
            token_type_ids,
            [1] * len(tokens),  # attention_mask
            special,
            both("word_ids", None, None),
        )
        if a.offsets is None:
            return Encoding(*fields)
        return EncodingWithOffsets(*fields, both("offsets", (0, 0), (0, 0)))

    def _encode(
        self,
        text: str,
        text_pair: str | None,
        max_length: int | None,
        truncation: str | None,
        padding: str | None,
        offsets: bool = False,
    ) -> Encoding:
        """Encode with options already checked by _check_options."""
        a, b = self._segments(text, text_pair, truncation, offsets)
        if truncation and max_length is not None:
            n_special = 2 if text_pair is None else 3
            a, b = _truncate(a, b, max_length - n_special, truncation)
        enc = self._assemble(a, b)
        return self._pad(enc, max_length) if padding == "max_length" else enc

    def _encode_windows(
        self,
        text: str,
        text_pair: str | None,
        max_length: int | None,
        truncation: str | None,
        padding: str | None,
        stride: int,
        offsets: bool,
    ) -> list[Encoding]:
        """One Encoding per window of the text that truncation cuts (context_windows)."""
        if text_pair is not None and truncation == "longest_first":
            raise ValueError(
                "return_overflowing_tokens with a pair of texts needs truncation='only_second' "
                f"(windows over the second text, the context) or 'only_first'; got {truncation!r}, "
                "which would cut both texts"
            )
        a, b = self._segments(text, text_pair, truncation, offsets)
        pairs = cut_into_windows(a, b, max_length, truncation, stride) if truncation else [(a, b)]
        encodings = [self._assemble(first, second) for first, second in pairs]
        if padding is None:
            return encodings
        length = max_length if padding == "max_length" else max(map(len, encodings))
        return [self._pad(enc, length) for enc in encodings]

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
        attention_mask (ready for ``model(**batch)``); None gives the list of Encodings.
        """
        if isinstance(batch, str) or not isinstance(batch, Sequence):
            raise TypeError(
                f"batch must be a list of texts or of (text, text_pair) tuples, got "
                f"{type(batch).__name__}; for one text call the tokenizer itself"
            )
        if return_tensors not in ("pt", None):
            raise ValueError(f"return_tensors must be 'pt' or None, got {return_tensors!r}")
        if not batch:
            raise ValueError("batch is empty: encode_batch needs at least one text")
        pairs = [(x, None) if isinstance(x, str) else x for x in batch]
        for i, pair in enumerate(pairs):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(
                    f"batch item {i} is a {type(pair).__name__}; expected a str or a "
                    "(text, text_pair) tuple"
                )
        n_special = 3 if any(b is not None for _, b in pairs) else 2
        max_length, truncation, padding = self._check_options(
            n_special, max_length, truncation, padding
        )  # once for the whole batch
        encodings = [self._encode(a, b, max_length, truncation, None) for a, b in pairs]
        if padding is not None:
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
        return {k: torch.tensor([e[k] for e in encodings], dtype=torch.long) for k in keys}

    def _pad(self, enc: Encoding, length: int) -> Encoding:
        """The encoding padded at the end to `length` positions ([PAD], mask 0, segment 0)."""
        padded = {f: pad(getattr(enc, f), length, v) for f, v in self._pad_values.items()}
        if isinstance(enc, EncodingWithOffsets):
            return EncodingWithOffsets(**padded, offsets=pad(enc.offsets, length, (0, 0)))
        return Encoding(**padded)

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
    a: Segment, b: Segment | None, budget: int, strategy: str
) -> tuple[Segment, Segment | None]:
    """Cut segments to budget pieces in all: longest_first, only_first or only_second."""
    n_a, n_b = len(a.tokens), len(b.tokens) if b is not None else 0
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
    return a.cut(0, keep_a), b.cut(0, keep_b) if b is not None else None
