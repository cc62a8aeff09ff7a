"""Tests for minibert.wordpiece_trainer: the likelihood-gain merges, against a naive re-count."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from minibert import corpora
from minibert.tokenization import SPECIAL_TOKENS, BertTokenizer
from minibert.wordpiece import BasicTokenizer
from minibert.wordpiece_trainer import _likelihood_gain, train_wordpiece

HF_COURSE_CORPUS = ["hug"] * 10 + ["pug"] * 5 + ["pun"] * 12 + ["bun"] * 4 + ["hugs"] * 5


def test_train_wordpiece_on_the_hugging_face_course_example():
    vocab = train_wordpiece(
        HF_COURSE_CORPUS, 15, min_frequency=1, criterion="ratio", progress=False
    )
    assert vocab[:5] == list(SPECIAL_TOKENS)
    assert vocab[5:12] == ["##g", "##n", "##s", "##u", "b", "h", "p"]
    assert vocab[12:] == ["##gs", "hu", "hugs"]  # the course's first merges: ##g ##s, then h ##u
    by_likelihood = train_wordpiece(HF_COURSE_CORPUS, 15, min_frequency=1, progress=False)
    assert by_likelihood[12:] == ["##ug", "##un", "hug"]


def test_likelihood_gain_is_the_exact_change_of_the_unigram_log_likelihood():
    def log_likelihood(counts):
        total = sum(counts)
        return sum(c * math.log(c / total) for c in counts if c)

    # symbols a, b, c with counts 30, 20, 50; 12 of the a's are followed by a b
    before = log_likelihood([30, 20, 50])
    after = log_likelihood([30 - 12, 20 - 12, 50, 12])
    gain = _likelihood_gain(np.array([12.0]), np.array([30.0]), np.array([20.0]), False, 100.0)
    assert gain[0] == pytest.approx(after - before, rel=1e-12)
    # a pair of one symbol with itself: 10 pairs take 20 of the 40 a's
    same = _likelihood_gain(np.array([10.0]), np.array([40.0]), np.array([40.0]), True, 100.0)
    assert same[0] == pytest.approx(log_likelihood([20, 60, 10]) - log_likelihood([40, 60]))


def naive_train_wordpiece(texts, vocab_size, criterion, min_frequency):
    """Recount every pair after every merge: slow and obviously right; same tie rule."""
    counts = Counter(w for t in texts for w in BasicTokenizer().tokenize(t))
    splits = [[w[0], *("##" + c for c in w[1:])] for w in counts]
    freqs = list(counts.values())
    vocab = [*SPECIAL_TOKENS, *sorted({s for split in splits for s in split})]
    first_seen: dict[tuple[str, str], int] = {}  # pairs in the order they first appeared
    while len(vocab) < vocab_size:
        unit, pairs = Counter(), Counter()
        for split, f in zip(splits, freqs):
            for s in split:
                unit[s] += f
            for pair in zip(split, split[1:]):
                pairs[pair] += f
                first_seen.setdefault(pair, len(first_seen))
        ranked = sorted((p for p in pairs if pairs[p] >= min_frequency), key=first_seen.get)
        if not ranked:
            break
        c = np.array([pairs[p] for p in ranked], dtype=float)
        ca = np.array([unit[a] for a, _ in ranked], dtype=float)
        cb = np.array([unit[b] for _, b in ranked], dtype=float)
        same = np.array([a == b for a, b in ranked])
        if criterion == "ratio":
            score = c / (ca * cb)
        else:
            score = _likelihood_gain(c, ca, cb, same, float(sum(unit.values())))
        a, b = ranked[int(np.argmax(score))]
        name = a + b[2:]
        if name not in vocab:
            vocab.append(name)
        for split in splits:
            i = 0
            while i < len(split) - 1:
                if split[i] == a and split[i + 1] == b:
                    split[i : i + 2] = [name]
                i += 1
    return vocab


@pytest.mark.parametrize("criterion", ["likelihood", "ratio"])
def test_incremental_training_equals_recounting_from_scratch(criterion):
    article = corpora.wikipedia_articles("train")[0]
    texts = list(article.paragraphs[:40])
    n_alphabet = len(naive_train_wordpiece(texts, 0, criterion, 2))
    size = n_alphabet + 150
    expected = naive_train_wordpiece(texts, size, criterion, 2)
    assert len(expected) == size
    assert train_wordpiece(texts, size, criterion=criterion, progress=False) == expected


def test_trained_vocabulary_covers_its_training_text_and_is_deterministic():
    texts = [p for a in corpora.wikipedia_articles("train")[:3] for p in a.paragraphs]
    vocab = train_wordpiece(texts, 1200, progress=False)
    assert len(vocab) == 1200 == len(set(vocab))
    assert vocab[:5] == list(SPECIAL_TOKENS)
    assert any(t.startswith("##") and len(t) > 3 for t in vocab)
    tok = BertTokenizer(vocab)
    assert all("[UNK]" not in tok.tokenize(t) for t in texts)
    assert train_wordpiece(texts, 1200, progress=False) == vocab
    pieces_per_word = sum(len(tok.tokenize(t)) for t in texts) / sum(
        len(tok.basic_tokenizer.tokenize(t)) for t in texts
    )
    assert pieces_per_word < 2.0  # letters alone would give about 5


def test_train_wordpiece_errors_and_early_stop():
    with pytest.raises(ValueError, match="smaller than the special tokens plus the alphabet"):
        train_wordpiece(["abcdef"], 8, progress=False)
    with pytest.raises(TypeError, match="one str"):
        train_wordpiece("a text, not a list", 100, progress=False)
    with pytest.raises(ValueError, match="criterion"):
        train_wordpiece(["a"], 100, criterion="frequency", progress=False)
    # every pair occurs once: nothing reaches min_frequency=2, so no merges
    assert train_wordpiece(["abc"], 100, progress=False) == [*SPECIAL_TOKENS, "##b", "##c", "a"]
    limited = train_wordpiece(["aaa bbb ccc z"] * 3, 20, limit_alphabet=4, progress=False)
    assert "z" not in limited and "a" in limited


def test_a_vocabulary_larger_than_the_texts_can_give_stops_at_what_they_give():
    """The trainer's tables are sized for the tokens the texts can give, not those asked
    (its progress bar estimated 1,400 hours for 100,000,000)."""
    texts = ["the cat sat on the mat", "the dog sat on the log"]
    vocab = train_wordpiece(texts, vocab_size=100_000_000, progress=False)
    assert vocab == train_wordpiece(texts, vocab_size=32, progress=False)  # 32: every word whole


def test_the_command_refuses_a_vocabulary_beyond_the_largest_in_one_line(tmp_path):
    from conftest import cli

    done = cli("pretrain", "--out", str(tmp_path / "m"), "--vocab-size", "100000000")
    assert (
        done.returncode == 2 and "--vocab-size: must be an int in [100, 1,048,576]" in done.stderr
    )
    assert not (tmp_path / "m").exists()
