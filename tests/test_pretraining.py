"""minibert.pretraining: each test catches a bug that a popular BERT implementation shipped."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from minibert import assets, corpora
from minibert import pretraining as P
from minibert.tokenization import BertTokenizer

MAX_LEN = 128


def five_sigma(p: float, n: int) -> float:
    """Half-width of a 5-sigma interval for a binomial proportion p over n trials."""
    return 5 * math.sqrt(p * (1 - p) / n)


@pytest.fixture(scope="module")
def tok():
    return BertTokenizer.from_pretrained(assets.path("minilm"))


@pytest.fixture(scope="module")
def documents(tok):
    articles = corpora.wikipedia_articles("train")
    return [[tok.convert_tokens_to_ids(tok.tokenize(s)) for s in a.sentences] for a in articles]


@pytest.fixture(scope="module")
def examples(documents):
    return P.create_examples(documents, max_len=MAX_LEN, seed=0)


@pytest.fixture(scope="module")
def items(examples, tok):
    dataset = P.PretrainingDataset.from_tokenizer(examples, tok, seed=0)
    return [dataset[i] for i in range(len(dataset))]


def test_enough_tokens_for_the_statistics(items):
    assert sum(len(item["input_ids"]) for item in items) >= 100_000


def test_fifteen_percent_chosen_and_80_10_10(items, tok):
    candidates = chosen = masked = random_ = kept = 0
    for item in items:
        n = len(item["input_ids"]) - (3 if 1 in item["token_type_ids"] else 2)
        labels = np.array(item["mlm_labels"])
        ids = np.array(item["input_ids"])
        at = labels != -100
        candidates += n
        chosen += at.sum()
        masked += (ids[at] == tok.mask_token_id).sum()
        kept += (ids[at] == labels[at]).sum()
        random_ += ((ids[at] != tok.mask_token_id) & (ids[at] != labels[at])).sum()
    # per sequence the count is round(0.15 * n) (n <= 125), so the fraction is 0.15 up to rounding
    assert abs(chosen / candidates - 0.15) < 0.005
    # each chosen token is [MASK] / random / kept independently: binomial, 5-sigma bounds
    assert abs(masked / chosen - 0.8) < five_sigma(0.8, chosen)
    assert abs(random_ / chosen - 0.1) < five_sigma(0.1, chosen)
    assert abs(kept / chosen - 0.1) < five_sigma(0.1, chosen)


def test_special_tokens_are_never_chosen_and_labels_only_where_chosen(items, tok):
    batch = P.collate(items[:256], pad_token_id=tok.pad_token_id)
    ids, labels = batch["input_ids"], batch["mlm_labels"]
    originals = torch.where(labels != -100, labels, ids)
    special = torch.isin(
        originals, torch.tensor([tok.cls_token_id, tok.sep_token_id, tok.pad_token_id])
    )
    assert special.any()
    assert (labels[special] == -100).all()  # [CLS], [SEP], [PAD] never chosen
    unchosen = labels == -100
    assert torch.equal(
        ids[unchosen], originals[unchosen]
    )  # nothing changes where nothing is predicted
    assert ((batch["attention_mask"] == 0) == (ids == tok.pad_token_id)).all()


def test_whole_word_masking_takes_whole_words(examples, tok):
    dataset = P.PretrainingDataset.from_tokenizer(examples[:800], tok, whole_word=True, seed=3)
    vocab = tok.vocab if isinstance(tok.vocab, list) else list(tok.vocab)
    words_checked = 0
    for i in range(len(dataset)):
        item = dataset[i]
        labels = item["mlm_labels"]
        originals = [lab if lab != -100 else t for lab, t in zip(labels, item["input_ids"])]
        # group positions into words: a piece and the "##" pieces that follow it; a special token
        # is a word of its own (truncation can leave a "##" piece right after [CLS] or [SEP])
        specials = {tok.cls_token_id, tok.sep_token_id}
        words, current = [], []
        for pos, token_id in enumerate(originals):
            follows_word = current and originals[current[-1]] not in specials
            if vocab[token_id].startswith("##") and follows_word and token_id not in specials:
                current.append(pos)
            else:
                if current:
                    words.append(current)
                current = [pos]
        words.append(current)
        for word in words:
            chosen = [labels[p] != -100 for p in word]
            assert all(chosen) or not any(chosen), f"part of a word chosen: {word}"
            words_checked += len(word) > 1 and all(chosen)
    assert words_checked > 50  # multi-piece words were chosen, whole


def test_next_sentence_pairs(examples, documents):
    chosen = [e for e in examples if not e.forced_random]
    is_next = sum(e.next_sentence_label == P.IS_NEXT for e in chosen)
    assert abs(is_next / len(chosen) - 0.5) < five_sigma(0.5, len(chosen))
    assert {e.next_sentence_label for e in examples} == {0, 1}
    for e in examples:
        assert len(e.tokens_a) + len(e.tokens_b) + 3 <= MAX_LEN
        assert e.tokens_a and e.tokens_b
        if e.next_sentence_label == P.NOT_NEXT:
            assert e.doc_b != e.doc_a  # never from the same document
            true_next = [t for s in documents[e.doc_a][e.sentences_a[1] :] for t in s]
            assert list(e.tokens_b) != true_next[: len(e.tokens_b)]  # never the real continuation
        else:
            assert e.doc_b == e.doc_a and e.sentences_b[0] == e.sentences_a[1]
    assert all(e.next_sentence_label == P.NOT_NEXT for e in examples if e.forced_random)


def test_short_sequences_and_truncation(documents):
    examples = P.create_examples(documents[:20], max_len=64, short_seq_prob=1.0, seed=1)
    lengths = [len(e.tokens_a) + len(e.tokens_b) + 3 for e in examples]
    assert max(lengths) <= 64 and min(lengths) < 40
    a, b = list(range(10)), list(range(100, 104))
    P.truncate_pair(a, b, 8, __import__("random").Random(0))
    assert len(a) + len(b) == 8 and len(b) == 4  # only the longer one is cut


def test_mlm_only_mode(documents, tok):
    examples = P.create_examples(documents[:10], max_len=MAX_LEN, objective="none", seed=0)
    assert all(not e.tokens_b and e.next_sentence_label == -100 for e in examples)
    assert all(len(e.tokens_a) + 2 <= MAX_LEN for e in examples)
    item = P.PretrainingDataset.from_tokenizer(examples, tok)[0]
    assert item["input_ids"][-1] == tok.sep_token_id and 1 not in item["token_type_ids"]


def test_dynamic_and_static_masking_are_deterministic(examples, tok):
    dynamic = P.PretrainingDataset.from_tokenizer(examples[:50], tok, seed=7)
    again = P.PretrainingDataset.from_tokenizer(examples[:50], tok, seed=7)
    assert [dynamic[i] for i in range(50)] == [again[i] for i in range(50)]
    first = [dynamic[i]["mlm_labels"] for i in range(50)]
    dynamic.set_epoch(1)
    assert [dynamic[i]["mlm_labels"] for i in range(50)] != first  # a new mask each epoch
    static = P.PretrainingDataset.from_tokenizer(examples[:50], tok, seed=7, dynamic=False)
    first = [static[i]["mlm_labels"] for i in range(50)]
    static.set_epoch(1)
    assert [static[i]["mlm_labels"] for i in range(50)] == first
    assert P.create_examples([[[1, 2]], [[3, 4]]], seed=5) == P.create_examples(
        [[[1, 2]], [[3, 4]]], seed=5
    )


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=200),
    max_predictions=st.one_of(st.none(), st.integers(min_value=1, max_value=30)),
    seed=st.integers(min_value=0, max_value=2**31),
)
def test_masking_properties(n, max_predictions, seed):
    ids = [5 + (i % 50) for i in range(n + 2)]
    special = [1] + [0] * n + [1]
    rng = np.random.default_rng(seed)
    masked, labels = P.mask_tokens(ids, special, 4, list(range(5, 100)), rng, 0.15, max_predictions)
    chosen = [i for i, lab in enumerate(labels) if lab != -100]
    expected = max(1, round(n * 0.15))
    if max_predictions is not None:
        expected = min(expected, max_predictions)
    assert len(chosen) == expected
    assert 0 not in chosen and n + 1 not in chosen
    assert all(labels[i] == ids[i] for i in chosen)
    assert all(masked[i] == ids[i] for i in range(len(ids)) if i not in chosen)


def test_bad_input():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="special_tokens_mask"):
        P.mask_tokens([1, 2, 3], [1, 0], 4, [5], rng)
    with pytest.raises(ValueError, match="two non-empty documents"):
        P.create_examples([[[1, 2, 3]]])
    with pytest.raises(ValueError, match="max_len"):
        P.create_examples([[[1]], [[2]]], max_len=3)
    with pytest.raises(ValueError, match="empty batch"):
        P.collate([])


def test_metrics_score_masks_apart_from_copied_tokens():
    # three chosen positions: a [MASK] (id 4) answered wrongly, a kept token copied rightly,
    # a random replacement answered rightly; a fourth position is not chosen
    from types import SimpleNamespace

    batch = {
        "input_ids": torch.tensor([[2, 4, 7, 9, 8]]),
        "mlm_labels": torch.tensor([[-100, 6, 7, 5, -100]]),
        "next_sentence_label": torch.tensor([-100]),
    }
    logits = torch.zeros(1, 5, 10)
    logits[0, 1, 6], logits[0, 1, 3] = 1.0, 2.0  # [MASK]: top-1 is 3 (wrong), 6 is second
    logits[0, 2, 7] = 5.0  # kept token, copied
    logits[0, 3, 5] = 5.0  # random replacement, recovered
    out = SimpleNamespace(mlm_logits=logits, nsp_logits=torch.zeros(1, 2))
    sums = P.pretraining_metrics(batch, out, mask_token_id=4)
    assert sums["mask_accuracy"] == (0, 1)
    assert sums["mask_top5"] == (1, 1)
    assert sums["chosen_accuracy"] == (2, 3)
    assert sums["nsp_accuracy"] == (0, 0)  # the ignored NSP label is not counted
    assert "mask_accuracy" not in P.pretraining_metrics(batch, out)
    assert P.metrics_for(SimpleNamespace(mask_token_id=4))(batch, out) == sums


def test_sentence_pairs_are_single_sentences_half_next(documents):
    pairs = P.sentence_pairs(documents, seed=0)
    nexts = [p for p in pairs if p.next_sentence_label == P.IS_NEXT]
    assert abs(len(nexts) / len(pairs) - 0.5) < five_sigma(0.5, len(pairs))
    for p in pairs[:2000]:
        assert p.sentences_a[1] - p.sentences_a[0] == p.sentences_b[1] - p.sentences_b[0] == 1
        assert len(p.tokens_a) + len(p.tokens_b) <= MAX_LEN - 3
    assert all(p.doc_b == p.doc_a and p.sentences_b[0] == p.sentences_a[1] for p in nexts)
    # d2l's negatives may come from the same document (Google's never do)
    assert any(p.doc_b == p.doc_a for p in pairs if p.next_sentence_label == P.NOT_NEXT)


def test_sentence_order_pairs_are_in_order_or_swapped(documents):
    examples = P.create_examples(documents, max_len=MAX_LEN, objective="sop", seed=0)
    swapped = [e for e in examples if e.next_sentence_label == P.NOT_NEXT]
    assert abs(len(swapped) / len(examples) - 0.5) < five_sigma(0.5, len(examples))
    for e in examples:
        assert e.doc_a == e.doc_b  # always one document
        assert len(e.tokens_a) + len(e.tokens_b) <= MAX_LEN - 3 and e.tokens_a and e.tokens_b
        if e.next_sentence_label == P.IS_NEXT:  # A's sentences come right before B's
            assert e.sentences_a[1] == e.sentences_b[0]
        else:  # the same two segments, swapped: B's sentences come right before A's
            assert e.sentences_b[1] == e.sentences_a[0]


def test_a_swapped_pair_is_exactly_the_ordered_pair_reversed():
    import random

    chunk = [[5, 6], [7], [8, 9, 10]]
    by_cut: dict = {}
    for seed in range(200):
        e = P._sop_example(chunk, 0, 0, 100, random.Random(seed))
        first = e.sentences_a if e.next_sentence_label == P.IS_NEXT else e.sentences_b
        by_cut.setdefault(first, {})[e.next_sentence_label] = e
    assert len(by_cut) == 2  # both places to cut the three sentences
    for pair in by_cut.values():
        ordered, swapped = pair[P.IS_NEXT], pair[P.NOT_NEXT]
        assert (swapped.tokens_a, swapped.tokens_b) == (ordered.tokens_b, ordered.tokens_a)


def test_unknown_objective_is_refused(documents):
    with pytest.raises(ValueError, match="objective"):
        P.create_examples(documents[:3], objective="nsp+sop")
