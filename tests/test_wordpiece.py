"""minibert.wordpiece: the basic tokenizer's steps and greedy longest-match-first WordPiece.
(Their parity with transformers, on real text, is tested through BertTokenizer in
test_tokenization.py.)"""

import pytest

from minibert.wordpiece import BasicTokenizer, wordpiece_tokenize


def test_basic_tokenizer_steps():
    basic = BasicTokenizer()
    assert basic.tokenize("Héllo, WORLD!") == ["hello", ",", "world", "!"]
    assert basic.tokenize("BERT是模型") == ["bert", "是", "模", "型"]
    assert basic.tokenize("a\u200bb\x00c\td") == ["abc", "d"]  # controls dropped, tab is a space
    assert basic.tokenize("$5^2`x|y~") == ["$", "5", "^", "2", "`", "x", "|", "y", "~"]
    assert basic.tokenize("the [MASK] .") == ["the", "[MASK]", "."]
    assert BasicTokenizer(lowercase=False).tokenize("Héllo Wörld") == ["Héllo", "Wörld"]
    assert BasicTokenizer(lowercase=True, strip_accents=False).tokenize("Héllo") == ["héllo"]
    assert BasicTokenizer(tokenize_chinese_chars=False).tokenize("是模型") == ["是模型"]
    with pytest.raises(TypeError, match="got bytes"):
        basic.tokenize(b"bytes")


def test_wordpiece_greedy_longest_match_first():
    vocab = {"un", "##aff", "##able", "a", "##ff", "##a", "##b", "##l", "##e", "[UNK]"}
    assert wordpiece_tokenize("unaffable", vocab) == ["un", "##aff", "##able"]
    assert wordpiece_tokenize("affable", vocab) == ["a", "##ff", "##able"]
    assert wordpiece_tokenize("unzip", vocab) == ["[UNK]"]  # one uncoverable piece: whole word
    assert wordpiece_tokenize("", vocab) == []
    assert wordpiece_tokenize("a" * 100, vocab) == ["a"] + ["##a"] * 99
    assert wordpiece_tokenize("a" * 101, vocab) == ["[UNK]"]  # over 100 characters


def test_unicode_categories_are_this_pythons():
    import unicodedata

    from minibert.wordpiece import is_control

    melting_face = "\U0001fae0"  # Unicode 14 (Python 3.11's tables); unknown to Python 3.10's
    newer = unicodedata.unidata_version < "14"
    assert is_control(melting_face) == newer
    assert BasicTokenizer().tokenize(f"a {melting_face} b") == (["a", "b"] if newer else ["a", melting_face, "b"])  # fmt: skip
