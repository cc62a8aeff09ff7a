"""Lesson 1, tokens and segments: WordPiece, the [CLS] A [SEP] B [SEP] layout, a padded batch."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import torch

from minibert.teaching.exercises.common import Result, call_safely, report
from minibert.tokenization import get_tokens_and_segments
from minibert.wordpiece import wordpiece_tokenize


def _shortest_match(word: str, vocab: set[str]) -> list[str]:
    """The classic mistake: greedy shortest-match-first (for the hint only)."""
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


def check_wordpiece(fn: Callable[..., Any], cases: int = 200) -> Result:
    """Check ``fn(word, vocab) -> list of pieces`` against greedy longest-match-first WordPiece.

    ``vocab`` is a set of strings: word-initial pieces, "##" continuation pieces and "[UNK]".
    """
    name = "greedy WordPiece"
    rng = random.Random(0)
    for case in range(cases):
        letters = "abcde"
        vocab = {"[UNK]"}
        for _ in range(rng.randint(3, 25)):
            piece = "".join(rng.choices(letters, k=rng.randint(1, 4)))
            vocab.add(piece if rng.random() < 0.4 else "##" + piece)
        if case == cases - 1:  # a long word the vocabulary covers: only its length makes it [UNK]
            vocab |= {"a", "##a"}
            word = "a" * 101
        else:
            word = "".join(rng.choices(letters, k=rng.randint(1, 12)))
        got, hint = call_safely(fn, word, set(vocab))
        if hint is not None:
            return report(name, hint, case)
        expected = wordpiece_tokenize(word, vocab)
        if got == expected:
            continue
        where = f"(word {word!r}, vocab {sorted(vocab)}: expected {expected}, got {got})"
        if not isinstance(got, list) or not all(isinstance(p, str) for p in got):
            problem = "return a list of strings, the pieces of the word."
        elif expected == ["[UNK]"] and len(word) > 100:
            problem = "a word longer than 100 characters becomes ['[UNK]'], as in BERT."
        elif expected == ["[UNK]"]:
            problem = (
                "when some part of the word matches no piece, the WHOLE word becomes ['[UNK]'], "
                "not just the part that is missing."
            )
        elif got == _shortest_match(word, vocab):
            problem = (
                "take the LONGEST piece the vocabulary has: start from the whole rest of the word "
                "and shrink it from the right until it is in the vocabulary."
            )
        elif [p.removeprefix("##") for p in got] == [p.removeprefix("##") for p in expected]:
            problem = (
                "every piece after the first is looked up with the '##' prefix, and kept with it."
            )
        else:
            problem = "the pieces differ from greedy longest-match-first."
        return report(name, f"{problem} {where}", case)
    return report(name, None, cases)


def check_tokens_and_segments(fn: Callable[..., Any], cases: int = 40) -> Result:
    """Check ``fn(tokens_a, tokens_b=None) -> (tokens, segments)``, d2l's get_tokens_and_segments."""
    name = "tokens and segments"
    rng = random.Random(1)
    words = ["the", "cat", "sat", "on", "mat", "##s", "it", "was", "happy", "."]
    for case in range(cases):
        tokens_a = rng.choices(words, k=rng.randint(1, 6))
        tokens_b = rng.choices(words, k=rng.randint(1, 6)) if case % 2 else None
        args = (list(tokens_a),) if tokens_b is None else (list(tokens_a), list(tokens_b))
        got, hint = call_safely(fn, *args)
        if hint is not None:
            if tokens_b is None:
                hint += " (called with tokens_a only: give tokens_b the default None)"
            return report(name, hint, case)
        expected = get_tokens_and_segments(tokens_a, tokens_b)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            return report(name, "return a pair (tokens, segments).", case)
        tokens, segments = (list(x) for x in got)
        where = f"(tokens_a {tokens_a}, tokens_b {tokens_b})"
        if tokens != expected[0]:
            problem = (
                f"tokens should be {expected[0]}, got {tokens}: [CLS] first, [SEP] after each "
                "sentence."
            )
            return report(name, f"{problem} {where}", case)
        if segments != expected[1]:
            problem = f"segments should be {expected[1]}, got {segments}:"
            if (
                tokens_b is not None
                and segments[: len(tokens_a) + 2] == expected[1][: len(tokens_a) + 2]
            ):
                problem += " sentence B and its closing [SEP] are segment 1."
            else:
                problem += " [CLS], sentence A and its [SEP] are segment 0."
            return report(name, f"{problem} {where}", case)
    return report(name, None, cases)


def check_pad_batch(fn: Callable[..., Any], cases: int = 30) -> Result:
    """Check ``fn(sequences, pad_id) -> (input_ids, attention_mask)``: pad on the right.

    ``sequences`` is a list of lists of token ids of different lengths; both results are
    (batch, longest) torch.long tensors; attention_mask is 1 for real tokens, 0 for padding.
    """
    name = "padded batch and attention mask"
    rng = random.Random(2)
    for case in range(cases):
        pad_id = rng.choice([0, 0, 3])
        batch = [
            [rng.randint(5, 99) for _ in range(rng.randint(1, 9))] for _ in range(rng.randint(2, 5))
        ]
        longest = max(map(len, batch))
        expected_ids = torch.tensor([s + [pad_id] * (longest - len(s)) for s in batch])
        expected_mask = torch.tensor([[1] * len(s) + [0] * (longest - len(s)) for s in batch])
        got, hint = call_safely(fn, [list(s) for s in batch], pad_id)
        if hint is not None:
            return report(name, hint, case)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            return report(name, "return a pair (input_ids, attention_mask).", case)
        ids, mask = got
        where = f"(sequences {batch}, pad_id {pad_id})"
        for what, value in (("input_ids", ids), ("attention_mask", mask)):
            if not isinstance(value, torch.Tensor):
                return report(
                    name, f"{what} should be a torch.Tensor, got {type(value).__name__}.", case
                )
            if value.dtype != torch.long:
                return report(
                    name,
                    f"{what} should be torch.long (ids are integers), got {value.dtype}.",
                    case,
                )
            if tuple(value.shape) != tuple(expected_ids.shape):
                return report(
                    name,
                    f"{what}: expected shape {tuple(expected_ids.shape)} (batch, longest), got "
                    f"{tuple(value.shape)}. {where}",
                    case,
                )
        if not torch.equal(ids, expected_ids):
            left = torch.tensor([[pad_id] * (longest - len(s)) + s for s in batch])
            problem = "input_ids differ."
            if torch.equal(ids, left):
                problem = "pad on the right, after the tokens, as BERT does."
            return report(name, f"{problem} {where}", case)
        if not torch.equal(mask, expected_mask):
            problem = "attention_mask differs: 1 for each real token, 0 for each [PAD]."
            if torch.equal(mask, 1 - expected_mask):
                problem = "the mask is reversed: 1 marks the real tokens (attend), 0 the padding."
            return report(name, f"{problem} {where}", case)
    return report(name, None, cases)
