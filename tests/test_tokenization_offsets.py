"""minibert.tokenization for extractive question answering: offsets, windows, sequence ids.

The reference is Hugging Face's fast (Rust) tokenizer, ``BertTokenizerFast`` on the same
vocab.txt (MiniLM's, bert-base-uncased's vocabulary): its ``return_offsets_mapping=True``,
``return_overflowing_tokens=True`` with ``stride``, and ``sequence_ids``. Where its pieces differ
from ours (a word-final capital sigma, a special token that appears only once control characters
are removed, and with a cased vocabulary text that is not NFC; see test_tokenization.py), the
offsets are compared word by word instead.
"""

from __future__ import annotations

import functools
import json
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibert import assets, corpora
from minibert.tokenization import SPECIAL_TOKENS, BertTokenizer, Encoding, EncodingWithOffsets
from minibert.wordpiece import BasicTokenizer, is_control, is_whitespace

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()

# hard cases for offsets: text that normalisation lengthens, shortens or drops
HARD_TEXTS = [
    "Café naïve Ångström",
    "cafe\u0301 nai\u0308ve A\u030angstro\u0308m",  # decomposed: the accents are characters
    "\u212bngstr\u00f6m and \u00c5ngstr\u00f6m",  # the Angstrom sign, which NFD decomposes too
    "ÉCOLE Élève İstanbul ǅemal ß",
    "Crème brûlée, jalapeño, façade, smörgåsbord, Dvořák, Łódź",
    "东京Tokyo是日本的首都, 人口约1400万。",
    "我爱NLP!北京大学 and 東京大學",
    "한국어 텍스트와 English 섞기",
    "日本語のテキスト、カタカナ、ひらがな",
    "I ❤️ NLP 🤗🤗 👍🏽 👨‍👩‍👧 ok",
    "wait...what?!?! --==>> ok <<==-- (((nested))) [x]{y}",
    "“quoted” ‘single’ «guillemets» „low“ — dash – en … ellipsis",
    "a  b\t\tc\n\nd \r\n e\u00a0f\u3000g\u2009h\u2028i\u2029j",
    "   leading and trailing   \n\t ",
    "a\x00b\x07c\x1bd\x7fe\x85f\x1cg",
    "zero\u200bwidth\u200cnon\u200djoiner\ufeffbom\u00adsoft\u2060word\u200e\u200f",
    "\u200b\u200b\u200b",
    "a" * 150 + " " + "x" * 101 + " short",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "Pneumonoultramicroscopicsilicovolcanoconiosis!",
    "1,234,567.89 and $3.5bn, 10,000-20,000, 3.14159, 1e-10, 50%",
    "don't it's O'Neill's rock 'n' roll it’s l'homme y'all",
    "Σίσυφος ΟΔΥΣΣΕΥΣ ΣΑΣ",
    "Привет, мир! Ёжик в тумане.",
    "مرحبا بالعالم",
    "नमस्ते दुनिया क़ ख़",
    "ﬁne ﬂower ﬀ Ⅻ ㍿ ½ ²",
    "e\u0301\u0323 o\u0323\u0302 a\u0345",
    # marks that NFD reorders; a spacing mark (U+1D165) that survives accent stripping
    "Z\u0345\u0301 a\u0301\u0316 \u0130\U0001d165 \u03a3\u0130\U0001d16d x\u0f73\u0301 \u0958",
    "snow\u2603man tab\there [MASK] and x[SEP]y [CLS][SEP]",
    "[C\u200bLS] is not [CLS]",
    "",
    " ",
]
EDGE_CASES_FILE = Path(__file__).parent / "data" / "tokenizer_edge_cases.json"
EDGE_CASES = [
    text
    for texts in json.loads(EDGE_CASES_FILE.read_text(encoding="ascii"))["cases"].values()
    for text in texts
]
TEXTS = HARD_TEXTS + EDGE_CASES
CONFIGS = {  # (lowercase, strip_accents)
    "uncased": (True, None),
    "cased": (False, None),
    "lower-keep-accents": (True, False),
    "cased-strip-accents": (False, True),
}


@pytest.fixture(scope="module")
def folder() -> Path:
    return assets.path("minilm")


@pytest.fixture(scope="module")
def tok(folder) -> BertTokenizer:
    return BertTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module")
def ref(folder):
    return transformers.BertTokenizerFast.from_pretrained(folder)


@functools.cache
def pair_of_tokenizers(folder: Path, config: str) -> tuple[BertTokenizer, object]:
    """Ours and the Rust tokenizer for one configuration, loaded once."""
    lowercase, strip_accents = CONFIGS[config]
    mine = BertTokenizer.from_vocab_file(
        folder / "vocab.txt", lowercase=lowercase, strip_accents=strip_accents
    )
    theirs = transformers.BertTokenizerFast.from_pretrained(
        folder, do_lower_case=lowercase, strip_accents=strip_accents
    )
    return mine, theirs


def final_sigma(text: str) -> bool:
    """Python's str.lower writes a word-final capital sigma as ς; the Rust tokenizer writes σ."""
    return text.lower() != "".join(c.lower() for c in text)


def special_token_after_cleaning(text: str) -> bool:
    """A special token that appears only once control and zero-width characters are dropped."""
    cleaned = "".join(c for c in text if c in "\t\n\r" or unicodedata.category(c)[0] != "C")
    return any(cleaned.count(t) > text.count(t) for t in SPECIAL_TOKENS)


def unassigned_here(text: str) -> bool:
    """A character this Python's Unicode tables do not know (Cn: U+1FAE0, an emoji of Unicode 14,
    on Python 3.10's Unicode 13), which BERT's cleaning drops as a control character and the Rust
    tokenizer's own, newer tables keep (as in test_tokenization.py)."""
    return any(unicodedata.category(c) == "Cn" for c in text)


def word_spans(offsets, word_ids, sequence_ids) -> dict:
    """(sequence, word) -> (start, end) of the whole word, from its pieces' offsets."""
    spans: dict = {}
    for (start, end), word, seq in zip(offsets, word_ids, sequence_ids):
        if word is not None:
            first = spans.get((seq, word), (start, end))
            spans[(seq, word)] = (min(first[0], start), max(first[1], end))
    return spans


def expected_fields(out, i: int | None = None) -> dict:
    """A BatchEncoding (row i for a batch) as the fields we compare."""
    row = (lambda key: out[key][i]) if i is not None else (lambda key: out[key])
    return {
        "input_ids": row("input_ids"),
        "token_type_ids": row("token_type_ids"),
        "attention_mask": row("attention_mask"),
        "offsets": [tuple(span) for span in row("offset_mapping")],
        "sequence_ids": out.sequence_ids(i or 0),
        "word_ids": out.word_ids(i or 0),
    }


def fields(enc: EncodingWithOffsets) -> dict:
    keys = ("input_ids", "token_type_ids", "attention_mask", "offsets", "sequence_ids", "word_ids")
    return {key: getattr(enc, key) for key in keys}


# ---- offsets of one text ----------------------------------------------------------------------


@pytest.mark.parametrize("config", list(CONFIGS))
def test_offsets_match_rust_tokenizer(folder, config):
    mine, theirs = pair_of_tokenizers(folder, config)
    compared, by_word = 0, 0
    for text in TEXTS:
        enc = mine(text, return_offsets_mapping=True)
        out = theirs(text, return_offsets_mapping=True)
        expected = expected_fields(out)
        assert enc.input_ids == mine(text).input_ids, repr(text)  # offsets change no piece
        if enc.input_ids == expected["input_ids"]:
            assert fields(enc) == expected, repr(text)
            compared += 1
            continue
        lowercase, strip_accents = CONFIGS[config]
        unknown_here = unassigned_here(text)
        explained = final_sigma(text) or special_token_after_cleaning(text) or unknown_here
        if not (lowercase if strip_accents is None else strip_accents):  # NFC, never NFD
            explained |= not unicodedata.is_normalized("NFC", text)
        assert explained, repr(text)
        if not (special_token_after_cleaning(text) or unknown_here):  # the same words, other pieces
            ours_ = word_spans(enc.offsets, enc.word_ids, enc.sequence_ids)
            assert ours_ == word_spans(expected["offsets"], out.word_ids(), out.sequence_ids())
            by_word += 1
    assert compared >= len(TEXTS) - 15  # the differences are few and explained
    if config == "uncased":
        assert by_word >= 5  # the final sigma cases were compared word by word


def test_offsets_by_hand(tok):
    def offsets(text):
        enc = tok(text, return_offsets_mapping=True)
        return list(zip(enc.tokens, enc.offsets))

    assert offsets("Café naïve") == [
        ("[CLS]", (0, 0)),
        ("cafe", (0, 4)),
        ("naive", (5, 10)),
        ("[SEP]", (0, 0)),
    ]
    # a "##" piece spans its part of the word
    assert offsets("unaffable!")[1:-1] == [
        ("una", (0, 3)),
        ("##ffa", (3, 6)),
        ("##ble", (6, 9)),
        ("!", (9, 10)),
    ]
    # the combining accent (character 4) is dropped and belongs to no piece
    assert offsets("cafe\u0301 x")[1:-1] == [("cafe", (0, 4)), ("x", (6, 7))]
    # a removed zero-width space inside a piece is inside its span; between two, in neither
    assert offsets("un\u200baffable")[1:4] == [
        ("una", (0, 4)),
        ("##ffa", (4, 7)),
        ("##ble", (7, 10)),
    ]
    assert offsets("token\u200bization")[1:3] == [("token", (0, 5)), ("##ization", (6, 13))]
    # a Hangul syllable becomes three letters (NFD), each spanning the whole syllable
    assert offsets("한")[1:-1] == [("ᄒ", (0, 1)), ("##ᅡ", (0, 1)), ("##ᆫ", (0, 1))]
    # an [UNK] word spans the whole word; a special token written in the text spans itself
    assert offsets("a " + "x" * 101 + " [MASK]")[1:-1] == [
        ("a", (0, 1)),
        ("[UNK]", (2, 103)),
        ("[MASK]", (104, 110)),
    ]
    # CJK characters are words of their own
    assert offsets("東京is")[1:-1] == [("東", (0, 1)), ("京", (1, 2)), ("is", (2, 4))]


def test_cased_nfc_composition_spans_both_characters():
    """A cased vocabulary composes e + U+0301 into é (NFC, as the pure-Python tokenizer; the Rust
    one does not): the composed character covers both characters of the text."""
    words = BasicTokenizer(lowercase=False).tokenize_with_offsets("cafe\u0301 x")
    assert [(w, list(s), list(e)) for w, s, e in words] == [
        ("café", [0, 1, 2, 3], [1, 2, 3, 5]),
        ("x", [6], [7]),
    ]


def test_whitespace_and_control_characters_split_and_vanish_as_in_tokenize():
    """Every whitespace, separator, control and format character between two letters: BERT's
    whitespace and the rest of Python's split the word, the others are removed inside it."""
    odd = [
        chr(cp)
        for cp in range(sys.maxunicode + 1)
        if chr(cp).isspace() or unicodedata.category(chr(cp)) in ("Cc", "Cf", "Zs", "Zl", "Zp")
    ]
    odd += ["\u0378", "\ue000", "\U0010fffd", "\ud800"]  # unassigned, private use, surrogate
    assert len(odd) > 200
    for config in CONFIGS.values():
        basic = BasicTokenizer(*config)
        for char in odd:
            text = f"ab{char}cd"
            words = basic.tokenize_with_offsets(text)
            assert [w for w, _, _ in words] == basic.tokenize(text), repr(char)
            splits = is_whitespace(char) or (char.isspace() and not is_control(char))
            spans = [(starts[0], ends[-1]) for _, starts, ends in words]
            assert spans == ([(0, 2), (3, 5)] if splits else [(0, 5)]), repr(char)


@pytest.mark.parametrize("config", list(CONFIGS))
def test_words_with_offsets_are_the_words_of_tokenize(config):
    basic = BasicTokenizer(*CONFIGS[config])
    for text in TEXTS:
        words = basic.tokenize_with_offsets(text)
        assert [w for w, _, _ in words] == basic.tokenize(text), repr(text)
        for word, starts, ends in words:
            assert len(starts) == len(ends) == len(word)
            assert all(0 <= s < e <= len(text) for s, e in zip(starts, ends))


def test_wikipedia_articles_offsets_match_rust_tokenizer(tok, ref):
    texts = [a.text for a in corpora.wikipedia_articles("all")[:40]]
    assert sum(not t.isascii() for t in texts) >= 10  # accents, dashes, quotes: the slow path
    out = ref(texts, return_offsets_mapping=True)
    for i, text in enumerate(texts):
        enc = tok(text, return_offsets_mapping=True)
        if enc.input_ids == out["input_ids"][i]:
            assert enc.offsets == [tuple(span) for span in out["offset_mapping"][i]]
        else:
            assert final_sigma(text)


PROPERTY_SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
HARD_CHARS = list(
    "aZé e\u0301\u0308\u0323Åİßǅ東京한ᄒ\u0345Σς ,.'!-$\t\n\u00a0\u3000\u200b\u200d\x00\x85\u2028"
    "🤗👍🏽\ufe0fक़ि्ﬁ½[]\u0958\u093c\u1100\u1161\u11a8\u0f71\u0f72\U0001d165\U0001d16d\u0b47\u0b3e"
)


@PROPERTY_SETTINGS
@given(
    text=st.text(st.sampled_from(HARD_CHARS), max_size=40), config=st.sampled_from(list(CONFIGS))
)
def test_any_text_offsets_match_rust_tokenizer(folder, text, config):
    mine, theirs = pair_of_tokenizers(folder, config)
    enc = mine(text, return_offsets_mapping=True)
    out = theirs(text, return_offsets_mapping=True)
    assert enc.input_ids == mine(text).input_ids
    if enc.input_ids == out["input_ids"]:
        assert enc.offsets == [tuple(span) for span in out["offset_mapping"]], repr(text)


# Any character: the Rust tokenizer's Unicode tables are newer than Python's (a character Python
# does not know is a letter there, some marks have other classes), so only our own facts here.
@PROPERTY_SETTINGS
@given(text=st.text(max_size=60), config=st.sampled_from(list(CONFIGS)))
def test_any_text_words_and_offsets_are_consistent(text, config):
    basic = BasicTokenizer(*CONFIGS[config])
    words = basic.tokenize_with_offsets(text)
    assert [w for w, _, _ in words] == basic.tokenize(text)
    spans = [(s, e) for _, starts, ends in words for s, e in zip(starts, ends)]
    assert all(0 <= s < e <= len(text) for s, e in spans)
    assert spans == sorted(spans)  # in the order of the text


# ---- pairs and sequence ids -------------------------------------------------------------------


@pytest.mark.parametrize("max_length", [None, 24])
def test_pairs_match_rust_tokenizer(tok, ref, max_length):
    questions = ["Where is Ångström's café?", "What does 東京 mean?", "how many?", "Don't know"]
    contexts = [t for t in HARD_TEXTS if t]  # transformers drops an empty pair (see below)
    differ = [t for t in contexts if final_sigma(t) or special_token_after_cleaning(t)]
    kwargs = {"max_length": max_length, "truncation": "only_second" if max_length else None}
    compared = 0
    for question in questions:
        for context in contexts:
            out = ref(question, context, return_offsets_mapping=True, **kwargs)
            enc = tok(question, context, return_offsets_mapping=True, **kwargs)
            if enc.input_ids == out["input_ids"]:
                assert fields(enc) == expected_fields(out), (question, context)
                compared += 1
            else:
                assert context in differ
    assert compared >= len(questions) * (len(contexts) - len(differ))


def test_empty_second_text_keeps_its_sep(tok, ref):
    """transformers' fast tokenizer encodes ("how many?", "") as one text (it tests `if
    text_pair`); its Rust tokenizer and its pure-Python one keep the pair's [SEP], as we do."""
    enc = tok("how many?", "", return_offsets_mapping=True)
    assert enc.tokens == ["[CLS]", "how", "many", "?", "[SEP]", "[SEP]"]
    assert enc.sequence_ids == [None, 0, 0, 0, None, None]
    rust = ref.backend_tokenizer.encode("how many?", "")
    assert (enc.input_ids, enc.offsets) == (rust.ids, rust.offsets)
    assert len(ref("how many?", "")["input_ids"]) == 5  # the oddity, still there


def test_sequence_ids_by_hand(tok):
    enc = tok("who?", "x [MASK] y", padding="max_length", max_length=12)
    assert enc.tokens[:9] == ["[CLS]", "who", "?", "[SEP]", "x", "[MASK]", "y", "[SEP]", "[PAD]"]
    assert enc.sequence_ids == [None, 0, 0, None, 1, 1, 1, None, None, None, None, None]
    assert tok("a b").sequence_ids == [None, 0, 0, None]


def test_offsets_are_padded_with_zeros_and_only_computed_when_asked(tok):
    enc = tok("a b", "c", padding="max_length", max_length=8, return_offsets_mapping=True)
    assert enc.offsets == [(0, 0), (0, 1), (2, 3), (0, 0), (0, 1), (0, 0), (0, 0), (0, 0)]
    assert enc["offsets"] == enc.offsets
    plain = tok("a b", "c", padding="max_length", max_length=8)
    assert type(plain) is Encoding and not hasattr(plain, "offsets")
    assert {f: getattr(plain, f) for f in plain.__dataclass_fields__} == {
        f: getattr(enc, f) for f in plain.__dataclass_fields__
    }


# ---- windows over a long context ---------------------------------------------------------------


@pytest.fixture(scope="module")
def context() -> str:
    """The hard texts (those both tokenizers cut alike), then the start of an article."""
    hard = [t for t in HARD_TEXTS if not (final_sigma(t) or special_token_after_cleaning(t))]
    article = next(a for a in corpora.wikipedia_articles("all") if not a.text.isascii())
    return " ".join(hard) + " " + article.text[:3000]


QUESTION = "Who wrote the café's Ångström menu?"


def windows_match(tok, ref, question, context, **kwargs) -> list[EncodingWithOffsets]:
    """Our windows, after checking them against the Rust tokenizer's, field by field."""
    kwargs = {"return_overflowing_tokens": True, "return_offsets_mapping": True, **kwargs}
    out = ref(question, context, **kwargs)
    windows = tok(question, context, **kwargs)
    assert out["overflow_to_sample_mapping"] == [0] * len(windows)
    assert [fields(w) for w in windows] == [expected_fields(out, i) for i in range(len(windows))]
    return windows


@pytest.mark.parametrize("padding", [False, "longest", "max_length"])
@pytest.mark.parametrize(("max_length", "stride"), [(384, 128), (128, 32), (64, 0), (40, 20)])
def test_windows_match_rust_tokenizer(tok, ref, context, max_length, stride, padding):
    kwargs = dict(max_length=max_length, truncation="only_second", stride=stride, padding=padding)
    windows = windows_match(tok, ref, QUESTION, context, **kwargs)
    assert len(windows) >= 3
    assert all(len(w) == max_length for w in windows[:-1])
    assert len(windows[-1]) == max_length if padding else len(windows[-1]) <= max_length


@pytest.mark.parametrize("stride", [0, 1, 7, 12])
def test_windows_overlap_by_stride_and_cover_the_context(tok, context, stride):
    max_length = 32
    whole = tok(QUESTION, context, return_offsets_mapping=True)
    pieces = [o for o, s in zip(whole.offsets, whole.sequence_ids) if s == 1]
    kwargs = dict(return_overflowing_tokens=True, return_offsets_mapping=True)
    windows = tok(QUESTION, context, max_length=max_length, truncation="only_second",
                  stride=stride, **kwargs)  # fmt: skip
    room = max_length - 3 - len(tok.tokenize(QUESTION))  # context pieces per window
    own = [[o for o, s in zip(w.offsets, w.sequence_ids) if s == 1] for w in windows]
    assert [len(o) for o in own[:-1]] == [room] * (len(own) - 1)
    # the last window holds what the others, each room - stride pieces further, left
    assert len(own[-1]) == len(pieces) - (len(own) - 1) * (room - stride)
    for before, after in zip(own, own[1:]):
        assert before[len(before) - stride :] == after[:stride]  # the shared pieces
    rebuilt = own[0] + [o for window in own[1:] for o in window[stride:]]
    assert rebuilt == pieces  # every piece of the context, in order, once
    assert windows[-1].offsets[-2][1] == len(context.rstrip())


def test_answer_across_two_windows(tok, ref):
    # 20 words of 2 pieces, 3 words, then the answer at pieces 43-47 of the context; with 45
    # pieces per window and a stride of 10, windows start at pieces 0 and 35
    context = " ".join(f"w{i}" for i in range(20)) + " the answer is Ångström's café. " + "x " * 30
    answer = "Ångström's café"
    start = context.index(answer)
    end = start + len(answer)
    windows = windows_match(
        tok, ref, "where?", context, max_length=50, truncation="only_second", stride=10
    )
    held = []
    for w in windows:
        own = [(i, o) for i, (o, s) in enumerate(zip(w.offsets, w.sequence_ids)) if s == 1]
        covers_start = any(o[0] <= start < o[1] for _, o in own)
        covers_end = any(o[0] < end <= o[1] for _, o in own)
        held.append((covers_start, covers_end))
        if covers_start and covers_end:
            first = next(i for i, o in own if o[1] > start)
            last = next(i for i, o in reversed(own) if o[0] < end)
            assert context[w.offsets[first][0] : w.offsets[last][1]] == answer
    assert held == [(True, False), (True, True)]  # cut in the first window, whole in the second
    assert len(windows[1]) == 3 + 2 + 79 - 35  # the last window is short: pieces 35 to 78


def test_windows_of_one_text_and_of_the_first_text(tok, ref, context):
    windows_match(tok, ref, context, None, max_length=48, truncation=True, stride=8)
    windows_match(tok, ref, context, QUESTION, max_length=48, truncation="only_first", stride=8)
    one = windows_match(
        tok, ref, QUESTION, "a short context", max_length=48, truncation="only_second", stride=8
    )
    assert len(one) == 1


def test_stride_must_leave_room(tok, ref, context):
    n_question = len(tok.tokenize(QUESTION))
    room = 50 - 3 - n_question
    kwargs = dict(max_length=50, truncation="only_second", return_overflowing_tokens=True)
    windows_match(tok, ref, QUESTION, context, stride=room - 1, **kwargs)  # the largest stride
    with pytest.raises(ValueError, match=f"leaves {room} positions per window.*stride={room}"):
        tok(QUESTION, context, stride=room, **kwargs)
    with pytest.raises(ValueError, match="leaves 0 positions"):
        tok(QUESTION, context, **{**kwargs, "max_length": 3 + n_question})
    with pytest.raises(Exception, match="too short"):  # Hugging Face: "Truncation error"
        ref(QUESTION, context, **{**kwargs, "max_length": 3 + n_question})
    # a context that fits needs no windows, whatever the stride (as Hugging Face)
    assert len(windows_match(tok, ref, QUESTION, "short", stride=room, **kwargs)) == 1
    with pytest.raises(ValueError, match="stride must be an int >= 0"):
        tok(QUESTION, context, stride=-1, **kwargs)


def test_overflow_with_longest_first_on_a_pair_is_refused(tok):
    # Hugging Face's fast tokenizer then cuts both texts and returns combinations of their
    # windows; its pure-Python tokenizer refuses, and so do we
    with pytest.raises(ValueError, match="only_second"):
        tok("a b c", "d e f", max_length=6, truncation=True, return_overflowing_tokens=True)
