"""Tests for minibert.teaching.exercises: each checker passes a right answer and catches typical mistakes."""

from __future__ import annotations

import math
import re

import pytest
import torch

from minibert.teaching import exercises

# --- Lesson 2: attention math ------------------------------------------------------------------


def attention_right(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, -1e9)  # d2l's large negative number is fine too
    weights = scores.softmax(-1)
    return weights @ v, weights


def attention_unscaled(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(-1)
    return weights @ v, weights


def attention_minus_inf(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(-1)
    return weights @ v, weights


def attention_ignores_mask(q, k, v, mask=None):
    return attention_right(q, k, v)


def attention_softmax_over_queries(q, k, v, mask=None):
    weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-2)
    return weights @ v, weights


def attention_mask_after_softmax(q, k, v, mask=None):
    weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


def attention_by_d_k(q, k, v, mask=None):
    weights = (q @ k.transpose(-2, -1) / q.shape[-1]).softmax(-1)
    return weights @ v, weights


def attention_weights_only(q, k, v, mask=None):
    return attention_right(q, k, v, mask)[1]


def attention_not_written(q, k, v, mask=None):
    raise NotImplementedError


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (attention_right, True, "PASS"),
        (attention_unscaled, False, "sqrt(d_k)"),
        (attention_minus_inf, False, "not -inf"),
        (attention_ignores_mask, False, "the mask was ignored"),
        (attention_softmax_over_queries, False, "over the queries (dim=-2)"),
        (attention_mask_after_softmax, False, "applied after the softmax"),
        (attention_by_d_k, False, "divided by d_k, not sqrt(d_k)"),
        (attention_weights_only, False, "pair (output, weights)"),
        (attention_not_written, False, "NotImplementedError"),
    ],
)
def test_check_attention(fn, passes, hint, capsys):
    assert exercises.check_attention(fn).passed is passes
    assert hint in capsys.readouterr().out


def padding_mask_right(attention_mask):
    additive = (1.0 - attention_mask.float()) * torch.finfo(torch.float32).min
    return additive[:, None, None, :]


def padding_mask_minus_inf(attention_mask):
    additive = torch.zeros(attention_mask.shape).masked_fill(attention_mask == 0, float("-inf"))
    return additive[:, None, None, :]


def padding_mask_reversed(attention_mask):
    return padding_mask_right(1 - attention_mask)


def padding_mask_2d(attention_mask):
    return padding_mask_right(attention_mask)[:, 0, 0, :]


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (padding_mask_right, True, "PASS"),
        (padding_mask_minus_inf, False, "not -inf"),
        (padding_mask_reversed, False, "The mask is reversed"),
        (padding_mask_2d, False, "expected shape (2, 1, 1,"),
        (lambda m: padding_mask_right(m).double(), False, "float32"),
    ],
)
def test_check_padding_mask(fn, passes, hint, capsys):
    assert exercises.check_padding_mask(fn).passed is passes
    assert hint in capsys.readouterr().out


def split_right(x, num_heads):
    batch, seq, hidden = x.shape
    return x.view(batch, seq, num_heads, hidden // num_heads).transpose(1, 2)


def split_direct_view(x, num_heads):
    batch, seq, hidden = x.shape
    return x.reshape(batch, num_heads, seq, hidden // num_heads)


def merge_right(x):
    batch, heads, seq, head_dim = x.shape
    return x.transpose(1, 2).reshape(batch, seq, heads * head_dim)


def merge_direct_reshape(x):
    batch, heads, seq, head_dim = x.shape
    return x.reshape(batch, seq, heads * head_dim)


def test_check_split_and_merge_heads(capsys):
    assert exercises.check_split_heads(split_right).passed is True
    assert exercises.check_merge_heads(merge_right).passed is True
    assert capsys.readouterr().out.count("PASS") == 2
    assert exercises.check_split_heads(split_direct_view).passed is False
    assert "transpose(1, 2)" in capsys.readouterr().out
    assert exercises.check_merge_heads(merge_direct_reshape).passed is False
    assert "transpose(1, 2) back" in capsys.readouterr().out
    assert exercises.check_merge_heads(lambda x: x.flatten(2)).passed is False
    assert "expected shape" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, passes, hint",
    [
        (torch.full((3, 4), 0.25), True, "PASS"),
        ([[0.25] * 4] * 3, True, "PASS"),
        (torch.full((3, 4), 1 / 3), False, "softmax make of equal numbers"),
        (torch.eye(3, 4), False, "whatever the query is"),
        (torch.full((4, 3), 0.25), False, "shape (3, 4)"),
        ("uniform", False, "nested list"),
    ],
)
def test_check_equal_keys(answer, passes, hint, capsys):
    assert exercises.check_equal_keys(answer).passed is passes
    assert hint in capsys.readouterr().out


# --- Lesson 3: the encoder ---------------------------------------------------------------------


def embeddings_right(input_ids, token_type_ids, emb):
    positions = emb.position_embeddings(torch.arange(input_ids.shape[1]))
    x = emb.word_embeddings(input_ids) + emb.token_type_embeddings(token_type_ids) + positions
    return emb.layer_norm(x)


def embeddings_without_positions(input_ids, token_type_ids, emb):
    x = emb.word_embeddings(input_ids) + emb.token_type_embeddings(token_type_ids)
    return emb.layer_norm(x)


def embeddings_without_norm(input_ids, token_type_ids, emb):
    positions = emb.position_embeddings(torch.arange(input_ids.shape[1]))
    return emb.word_embeddings(input_ids) + emb.token_type_embeddings(token_type_ids) + positions


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (embeddings_right, True, "PASS embedding sum"),
        (embeddings_without_positions, False, "missing the position embeddings"),
        (embeddings_without_norm, False, "apply embeddings.layer_norm"),
        (lambda i, t, e: e.word_embeddings(i), False, "NOT YET embedding sum"),
    ],
)
def test_check_embeddings(fn, passes, hint, capsys):
    assert exercises.check_embeddings(fn).passed is passes
    assert hint in capsys.readouterr().out


def post_ln(x, mask, layer, act=torch.nn.functional.gelu):
    a, _ = layer.attention(x, mask)
    h = layer.attention_norm(x + a)
    return layer.ffn_norm(h + layer.ffn_out(act(layer.ffn_in(h))))


def pre_ln(x, mask, layer):
    h = x + layer.attention(layer.attention_norm(x), mask)[0]
    return h + layer.ffn_out(torch.nn.functional.gelu(layer.ffn_in(layer.ffn_norm(h))))


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (post_ln, True, "PASS post-LN encoder layer"),
        (pre_ln, False, "pre-LN"),
        (lambda x, m, layer: post_ln(x, m, layer, torch.relu), False, "BERT uses GELU"),
        (
            lambda x, m, layer: post_ln(
                x, m, layer, lambda t: torch.nn.functional.gelu(t, approximate="tanh")
            ),
            False,
            "tanh approximation of GELU",
        ),
        (lambda x, m, layer: post_ln(x, None, layer), False, "padding mask was not passed"),
        (lambda x, m, layer: x, False, "off from the reference"),
    ],
)
def test_check_encoder_layer(fn, passes, hint, capsys):
    assert exercises.check_encoder_layer(fn).passed is passes
    assert hint in capsys.readouterr().out


def count_right(c):
    h, i, n = c.hidden_size, c.intermediate_size, c.num_layers
    embeddings = (c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * h + 2 * h
    layer = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h
    return embeddings + n * layer + (h * h + h)


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (count_right, True, "PASS parameter count"),
        (lambda c: count_right(c) - c.hidden_size**2 - c.hidden_size, False, "the pooler"),
        (
            lambda c: count_right(c) - c.hidden_size**2 - c.hidden_size * (4 * c.num_layers + 3),
            False,
            "the LayerNorms' weights and biases plus the pooler",
        ),
        (
            lambda c: count_right(c) - c.max_position_embeddings * c.hidden_size,
            False,
            "the position embeddings",
        ),
        (lambda c: 110_000_000, False, "expected 4,385,920"),
        (lambda c: float(count_right(c)), False, "return an int"),
    ],
)
def test_check_parameter_count(fn, passes, hint, capsys):
    assert exercises.check_parameter_count(fn).passed is passes
    assert hint in capsys.readouterr().out


def strongest_diagonal(offset):
    def find(attentions, attention_mask):
        scores = torch.stack([a.diagonal(offset, -2, -1).mean((0, 2)) for a in attentions])
        best = int(scores.argmax())
        return best // scores.shape[1], best % scores.shape[1]

    return find


def test_check_previous_token_head(capsys):
    assert exercises.check_previous_token_head(strongest_diagonal(-1)).passed is True
    assert "PASS previous-token head" in capsys.readouterr().out
    assert exercises.check_previous_token_head(strongest_diagonal(1)).passed is False
    assert "NEXT-token head" in capsys.readouterr().out
    assert exercises.check_previous_token_head(lambda a, m: (0, 2)).passed is False  # a guess
    assert "planted previous-token head" in capsys.readouterr().out
    assert exercises.check_previous_token_head(lambda a, m: "layer 0").passed is False
    assert "two ints" in capsys.readouterr().out


def test_check_previous_token_head_on_given_attentions(capsys):
    seq = 6
    prev = torch.zeros(1, 1, seq, seq)
    prev[0, 0, torch.arange(1, seq), torch.arange(seq - 1)] = 1.0
    prev[0, 0, 0, 0] = 1.0
    uniform = torch.full((1, 1, seq, seq), 1 / seq)
    attentions = (torch.cat([uniform, prev], 1),)  # layer 0: head 0 uniform, head 1 previous
    mask = torch.ones(1, seq, dtype=torch.long)
    finder = strongest_diagonal(-1)
    assert exercises.check_previous_token_head(finder, attentions, mask).passed is True
    assert "layer 0, head 1 puts 100%" in capsys.readouterr().out
    assert (
        exercises.check_previous_token_head(lambda a, m: (0, 0), attentions, mask).passed is False
    )


# --- Lesson 1: tokens and segments -------------------------------------------------------------


def wordpiece_right(word, vocab):
    if len(word) > 100:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
            end -= 1
        else:
            return ["[UNK]"]
        pieces.append(piece)
        start = end
    return pieces


def wordpiece_shortest(word, vocab):
    pieces, start = [], 0
    while start < len(word):
        for end in range(start + 1, len(word) + 1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                pieces.append(piece)
                start = end
                break
        else:
            return ["[UNK]"]
    return pieces


def wordpiece_partial_unk(word, vocab):
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
            end -= 1
        else:
            pieces.append("[UNK]")  # the mistake: skip one character, keep going
            start += 1
            continue
        pieces.append(piece)
        start = end
    return pieces


def wordpiece_no_length_limit(word, vocab):
    return wordpiece_right(word[:100], vocab) if len(word) > 100 else wordpiece_right(word, vocab)


def wordpiece_without_prefix(word, vocab):
    return [p.removeprefix("##") for p in wordpiece_right(word, vocab)]


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (wordpiece_right, True, "PASS"),
        (wordpiece_shortest, False, "LONGEST piece"),
        (wordpiece_partial_unk, False, "the WHOLE word becomes"),
        (wordpiece_no_length_limit, False, "longer than 100 characters"),
        (wordpiece_without_prefix, False, "'##' prefix"),
        (lambda word, vocab: " ".join(wordpiece_right(word, vocab)), False, "list of strings"),
        (lambda word, vocab: wordpiece_right(word), False, "raised TypeError"),
    ],
)
def test_check_wordpiece(fn, passes, hint, capsys):
    assert exercises.check_wordpiece(fn).passed is passes
    assert hint in capsys.readouterr().out


def segments_right(tokens_a, tokens_b=None):
    tokens = ["[CLS]", *tokens_a, "[SEP]"]
    segments = [0] * len(tokens)
    if tokens_b is not None:
        tokens += [*tokens_b, "[SEP]"]
        segments += [1] * (len(tokens_b) + 1)
    return tokens, segments


def segments_sep_in_a(tokens_a, tokens_b=None):
    tokens, segments = segments_right(tokens_a, tokens_b)
    if tokens_b is not None:
        segments[-1] = 0  # the mistake: the final [SEP] counted with sentence A
    return tokens, segments


def segments_no_final_sep(tokens_a, tokens_b=None):
    tokens, segments = segments_right(tokens_a, tokens_b)
    return (tokens[:-1], segments[:-1]) if tokens_b is not None else (tokens, segments)


def segments_pair_required(tokens_a, tokens_b):
    return segments_right(tokens_a, tokens_b)


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (segments_right, True, "PASS"),
        (segments_sep_in_a, False, "closing [SEP] are segment 1"),
        (segments_no_final_sep, False, "[SEP] after each sentence"),
        (segments_pair_required, False, "default None"),
        (lambda a, b=None: segments_right(a, b)[0], False, "pair (tokens, segments)"),
    ],
)
def test_check_tokens_and_segments(fn, passes, hint, capsys):
    assert exercises.check_tokens_and_segments(fn).passed is passes
    assert hint in capsys.readouterr().out


def pad_right(sequences, pad_id):
    longest = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), longest), pad_id, dtype=torch.long)
    mask = torch.zeros(len(sequences), longest, dtype=torch.long)
    for i, s in enumerate(sequences):
        ids[i, : len(s)] = torch.tensor(s)
        mask[i, : len(s)] = 1
    return ids, mask


def pad_left(sequences, pad_id):
    ids, mask = pad_right([s[::-1] for s in sequences], pad_id)
    return ids.flip(1), mask.flip(1)


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (pad_right, True, "PASS"),
        (pad_left, False, "pad on the right"),
        (lambda s, p: (pad_right(s, p)[0], 1 - pad_right(s, p)[1]), False, "mask is reversed"),
        (lambda s, p: (pad_right(s, p)[0], pad_right(s, p)[1].float()), False, "torch.long"),
        (lambda s, p: (pad_right(s, 0)[0], pad_right(s, p)[1]), False, "input_ids differ"),
        (lambda s, p: pad_right(s, p)[0], False, "pair (input_ids, attention_mask)"),
    ],
)
def test_check_pad_batch(fn, passes, hint, capsys):
    assert exercises.check_pad_batch(fn).passed is passes
    assert hint in capsys.readouterr().out


# --- Lesson 4: masked language modelling -------------------------------------------------------


def _never_random(ids, special, mask_id, random_ids, rng):
    from minibert.pretraining import mask_tokens

    masked, labels = mask_tokens(ids, special, mask_id, random_ids, rng)
    return [mask_id if lab != -100 else t for t, lab in zip(masked, labels)], labels


def _labels_everywhere(ids, special, mask_id, random_ids, rng):
    from minibert.pretraining import mask_tokens

    masked, _ = mask_tokens(ids, special, mask_id, random_ids, rng)
    return masked, list(ids)


def _hugging_face_style(ids, special, mask_id, random_ids, rng):
    labels, out = [-100] * len(ids), list(ids)
    for i, t in enumerate(ids):
        if special[i] or rng.random() >= 0.15:
            continue
        labels[i], r = t, rng.random()
        out[i] = mask_id if r < 0.8 else int(rng.choice(random_ids)) if r < 0.9 else t
    return out, labels


def _choose_half(ids, special, mask_id, random_ids, rng):
    labels = [t if not s and i % 2 else -100 for i, (t, s) in enumerate(zip(ids, special))]
    return [mask_id if lab != -100 else t for t, lab in zip(ids, labels)], labels


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        ("reference", True, "PASS"),
        (_never_random, False, "[MASK]; BERT uses 80%"),
        (_labels_everywhere, False, "every position has a label"),
        (_hugging_face_style, True, "legitimate variant"),
        (_choose_half, False, "BERT chooses 15%"),
        (lambda *args: None, False, "return a pair"),
    ],
)
def test_check_masking(fn, passes, hint, capsys):
    from minibert.pretraining import mask_tokens

    assert exercises.check_masking(mask_tokens if fn == "reference" else fn).passed is passes
    assert hint in capsys.readouterr().out


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (
            lambda lg, y: torch.nn.functional.cross_entropy(lg.flatten(0, 1), y.flatten()),
            True,
            "PASS",
        ),
        (
            lambda lg, y: torch.nn.functional.cross_entropy(
                lg.flatten(0, 1), y.flatten().clamp(min=0)
            ),
            False,
            "You counted every position",
        ),
        (
            lambda lg, y: torch.nn.functional.cross_entropy(
                lg.flatten(0, 1), y.flatten(), reduction="none"
            ).mean(),
            False,
            "labelled positions only",
        ),
        (lambda lg, y: torch.zeros(2), False, "return one number"),
    ],
)
def test_check_mlm_loss(fn, passes, hint, capsys):
    assert exercises.check_mlm_loss(fn).passed is passes
    assert hint in capsys.readouterr().out


# --- lesson 6 ------------------------------------------------------------------------------------


def head_with(first=lambda h: h[:, 0], squash=torch.tanh, loss=None, transpose=True):
    """A classification head built with one deliberate change (or none)."""
    F = torch.nn.functional

    def fn(h, pw, pb, cw, cb, y):
        logits = squash(first(h) @ (pw.T if transpose else pw) + pb) @ cw.T + cb
        return logits, (loss or F.cross_entropy)(logits, y)

    return fn


def not_implemented(*args):
    raise NotImplementedError


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (head_with(), True, "PASS"),
        (head_with(first=lambda h: h.mean(1)), False, "mean of every position"),
        (head_with(first=lambda h: h[:, -1]), False, "last position"),
        (head_with(squash=lambda x: x), False, "tanh"),
        (head_with(transpose=False), False, "x @ W.T + b"),
        (
            head_with(loss=lambda lg, y: torch.nn.functional.cross_entropy(lg.softmax(-1), y)),
            False,
            "applied softmax first",
        ),
        (
            head_with(loss=lambda lg, y: torch.nn.functional.cross_entropy(lg, y, reduction="sum")),
            False,
            "you summed it",
        ),
        (lambda *a: a[0][:, 0], False, "return a pair"),
        (not_implemented, False, "NotImplementedError"),
    ],
)
def test_check_classification_head(fn, passes, hint, capsys):
    assert exercises.check_classification_head(fn).passed is passes
    assert hint in capsys.readouterr().out


def evaluation_with(transpose=False, count=False, percent=False, label=1, zero=True):
    """An evaluation function with one deliberate mistake (or none)."""

    def fn(labels, predictions):
        m = [[0, 0], [0, 0]]
        for y, p in zip(labels, predictions):
            m[y][p] += 1
        right = m[0][0] + m[1][1]
        accuracy = right if count else 100 * right / len(labels) if percent else right / len(labels)
        other = 1 - label
        tp, fp, fn_ = m[label][label], m[other][label], m[label][other]
        f1 = 0.0 if zero and tp == 0 else 2 / (1 / (tp / (tp + fp)) + 1 / (tp / (tp + fn_)))
        return accuracy, f1, [list(r) for r in zip(*m)] if transpose else m

    return fn


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (evaluation_with(), True, "PASS"),
        (evaluation_with(transpose=True), False, "transposed"),
        (evaluation_with(count=True), False, "not a count"),
        (evaluation_with(percent=True), False, "not a percentage"),
        (evaluation_with(label=0), False, "F1 of label 0"),
        (evaluation_with(zero=False), False, "nothing was predicted positive"),
        (lambda y, p: 0.5, False, "return a triple"),
    ],
)
def test_check_evaluation(fn, passes, hint, capsys):
    assert exercises.check_evaluation(fn).passed is passes
    assert hint in capsys.readouterr().out


# --- lesson 5 ------------------------------------------------------------------------------------


def nsp_pairs_with(same_document=False, labels=(0, 1), truncate=True):
    """NSP pairs with one deliberate mistake (or none); labels = (IsNext, NotNext)."""

    def fn(documents, max_len, rng):
        pairs = []
        for d, doc in enumerate(documents):
            for i in range(len(doc) - 1):
                a = list(doc[i])
                if rng.random() < 0.5:
                    b, label = list(doc[i + 1]), labels[0]
                else:
                    others = [e for e in range(len(documents)) if same_document or e != d]
                    other = documents[rng.choice(others)]
                    b, label = list(rng.choice(other)), labels[1]
                while truncate and len(a) + len(b) > max_len - 3:
                    (a if len(a) > len(b) else b).pop()
                pairs.append((a, b, label))
        return pairs

    return fn


def sop_pairs_with(labels=(0, 1), swap_probability=0.5, neighbour=1):
    def fn(documents, rng):
        pairs = []
        for doc in documents:
            for i in range(len(doc) - 1):
                a, b = doc[i], doc[min(i + neighbour, len(doc) - 1)]
                if rng.random() < swap_probability:
                    pairs.append((b, a, labels[1]))
                else:
                    pairs.append((a, b, labels[0]))
        return pairs

    return fn


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (nsp_pairs_with(), True, "PASS"),
        (nsp_pairs_with(labels=(1, 0)), False, "d2l"),
        (nsp_pairs_with(truncate=False), False, "does not fit max_len"),
        (lambda docs, n, rng: [], False, "one pair per sentence"),
        (not_implemented, False, "NotImplementedError"),
    ],
)
def test_check_nsp_pairs(fn, passes, hint, capsys):
    assert exercises.check_nsp_pairs(fn).passed is passes
    assert hint in capsys.readouterr().out


def test_check_nsp_pairs_catches_a_negative_from_the_same_document(capsys):
    # d2l's rule: the random sentence may come from any document, A's own included
    assert exercises.check_nsp_pairs(nsp_pairs_with(same_document=True)).passed is False
    assert "same document" in capsys.readouterr().out


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (sop_pairs_with(), True, "PASS"),
        (sop_pairs_with(labels=(1, 0)), False, "0 = in order"),
        (sop_pairs_with(swap_probability=0.1), False, "swap each with probability 0.5"),
        (sop_pairs_with(neighbour=2), False, "consecutive"),
    ],
)
def test_check_sop_pairs(fn, passes, hint, capsys):
    assert exercises.check_sop_pairs(fn).passed is passes
    assert hint in capsys.readouterr().out


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (lambda lg, y: torch.nn.functional.cross_entropy(lg, y), True, "PASS"),
        (
            lambda lg, y: torch.nn.functional.cross_entropy(lg, y, ignore_index=0),
            False,
            "ignore_index=0",
        ),
        (lambda lg, y: torch.nn.functional.cross_entropy(lg, 1 - y), False, "reversed"),
        (
            lambda lg, y: torch.nn.functional.cross_entropy(lg, y, reduction="sum"),
            False,
            "you summed",
        ),
        (lambda lg, y: torch.zeros(3), False, "one number"),
    ],
)
def test_check_nsp_loss(fn, passes, hint, capsys):
    assert exercises.check_nsp_loss(fn).passed is passes
    assert hint in capsys.readouterr().out


def _mask_accuracy_right(logits, labels, input_ids, mask_id):
    at = (labels != -100) & (input_ids == mask_id)
    return float((logits.argmax(-1) == labels)[at].float().mean())


def _mask_accuracy_everywhere(logits, labels, input_ids, mask_id):
    return float((logits.argmax(-1) == labels).float().mean())


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (_mask_accuracy_right, True, "PASS"),
        (_mask_accuracy_everywhere, False, "every position was counted"),
        (lambda lg, y, ids, m: "high", False, "return a number"),
    ],
)
def test_check_mask_accuracy(fn, passes, hint, capsys):
    assert exercises.check_mask_accuracy(fn).passed is passes
    assert hint in capsys.readouterr().out


# --- lesson 7 ------------------------------------------------------------------------------------


def opinion_scores_with(once=True, smooth=1, plus_vocab=True, sign=1, min_texts=True):
    def fn(texts, labels, min_count):
        counts = ({}, {})
        for text, label in zip(texts, labels):
            words = re.findall(r"[a-z]+", text.lower())
            for w in set(words) if once else words:
                counts[label][w] = counts[label].get(w, 0) + 1
        vocab = set(counts[0]) | set(counts[1])
        totals = [sum(c.values()) + (len(vocab) if plus_vocab else 0) for c in counts]
        out = {}
        for w in vocab:
            f, r = counts[1].get(w, 0), counts[0].get(w, 0)
            if (f + r if min_texts else 99) >= min_count:
                out[w] = sign * (
                    math.log((f + smooth) / totals[1]) - math.log((r + smooth) / totals[0])
                )
        return out

    return fn


@pytest.mark.parametrize(
    "fn, passes, hint",
    [
        (opinion_scores_with(), True, "PASS"),
        (opinion_scores_with(once=False), False, "once per text"),
        (opinion_scores_with(smooth=0), False, "add one"),
        (opinion_scores_with(plus_vocab=False), False, "plus the vocabulary size"),
        (opinion_scores_with(sign=-1), False, "signs are reversed"),
        (opinion_scores_with(min_texts=False), False, "at least min_count"),
        (lambda texts, labels, m: [], False, "return a dict"),
    ],
)
def test_check_opinion_scores(fn, passes, hint, capsys):
    assert exercises.check_opinion_scores(fn).passed is passes
    assert hint in capsys.readouterr().out
