"""minibert.teaching.exercises.tokens, lesson 1: WordPiece, segments, a padded batch.

Each checker passes a right answer and catches the typical mistakes, naming them in its hint.
"""

from __future__ import annotations

import pytest
import torch

from minibert.teaching import exercises


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
