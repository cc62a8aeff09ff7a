"""Checkers for the notebooks' exercises, usable in assignments too.

Each ``check_*`` function calls the learner's function on random inputs, compares the result with
minibert's reference implementation, prints one line (a pass, or a hint saying what differs) and
returns True or False, so a teacher can also ``assert check_attention(student_fn)`` in a grader.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from minibert.config import IGNORE_INDEX


@dataclass(frozen=True)
class Result:
    """A checker's verdict: whether it passed, and the one line a learner reads (a hint if not).

    ``bool(result)`` is whether it passed; ``str(result)`` the printed line. The notebooks print
    it; ``minibert.teaching.assignments`` scores it.
    """

    name: str
    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return f"{'PASS' if self.passed else 'NOT YET'} {self.name}: {self.message}"


_quiet = threading.local()  # a grader checking in several threads at once prints nothing


@contextlib.contextmanager
def quietly() -> Iterator[None]:
    """The checkers called in this thread, inside the block, print nothing (they still return)."""
    before = getattr(_quiet, "on", False)
    _quiet.on = True
    try:
        yield
    finally:
        _quiet.on = before


def report(name: str, problem: str | None, cases: int, passed: str | None = None) -> Result:
    """Print the verdict of one checker and return it (passed: the message of a pass, if not the usual)."""
    result = Result(name, problem is None,
                    problem or passed or f"matches the reference on {cases} cases.")  # fmt: skip
    if not getattr(_quiet, "on", False):
        print(result)
    return result


def call_safely(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, str | None]:
    """Call a learner's function; return (result, None) or (None, a hint naming the exception)."""
    try:
        return fn(*args, **kwargs), None
    except NotImplementedError:
        return None, "the function still raises NotImplementedError; fill in its body."
    except Exception as exc:  # the learner's code may raise anything; report it as a hint
        return None, f"it raised {type(exc).__name__}: {exc}"


# --- Lesson 1: tokens and segments -------------------------------------------------------------


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
    import random

    from minibert.tokenization import wordpiece_tokenize

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
    import random

    from minibert.tokenization import get_tokens_and_segments

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
    import random

    import torch

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


# --- Lesson 2: attention math ------------------------------------------------------------------


def attention_problem(got: Any, expected: Any, what: str, atol: float = 1e-5) -> str | None:
    """None if ``got`` is a tensor equal to ``expected`` within atol, else a hint saying how not."""
    import torch

    if not isinstance(got, torch.Tensor):
        return f"{what} should be a torch.Tensor, got {type(got).__name__}."
    if tuple(got.shape) != tuple(expected.shape):
        return f"{what}: expected shape {tuple(expected.shape)}, got {tuple(got.shape)}."
    if torch.isnan(got).any():
        return f"{what}: NaN where the reference has numbers."
    if not torch.allclose(got.to(expected.dtype), expected, rtol=0.0, atol=atol):
        worst = (got.to(expected.dtype) - expected).abs().max().item()
        return f"{what}: off from the reference by up to {worst:.3g}."
    return None


def _attention_mistake(weights: Any, q: Any, k: Any, mask: Any) -> str:
    """A hint naming the classic mistake that gives these weights (batch, heads, q_len, k_len)."""
    import math

    import torch

    scores = q @ k.transpose(-2, -1)  # (batch, heads, q_len, k_len), unscaled
    keep = torch.ones_like(scores, dtype=torch.bool) if mask is None else mask.expand_as(scores)
    low = torch.finfo(scores.dtype).min

    def masked(s: Any) -> Any:
        return s.masked_fill(~keep, low)

    d_k = q.shape[-1]
    candidates = {
        "the scores were not divided by sqrt(d_k): divide q @ k^T by sqrt(d_k) before the "
        "softmax": masked(scores).softmax(-1),
        "the scores were divided by d_k, not sqrt(d_k)": masked(scores / d_k).softmax(-1),
        "the softmax ran over the queries (dim=-2); each query's row of weights must sum to 1: "
        "softmax over the keys, the last dim": masked(scores / math.sqrt(d_k)).softmax(-2),
        "the mask was applied after the softmax: masked keys got weight 0 but the row no longer "
        "sums to 1; fill masked scores with a very negative number before the softmax": (
            (scores / math.sqrt(d_k)).softmax(-1) * keep
        ),
        "the mask was ignored: keys where the mask is False should get weight 0 (fill their "
        "scores with a very negative number before the softmax)": (
            (scores / math.sqrt(d_k)).softmax(-1)
        ),
    }
    finite = torch.nan_to_num(weights, nan=-1.0)
    for what, candidate in candidates.items():
        if torch.allclose(finite, candidate, atol=1e-5):
            return f" It looks like {what}."
    if torch.isnan(weights).any():
        return (
            " A row whose keys are all masked must not give NaN: fill masked scores with "
            "torch.finfo(scores.dtype).min, not -inf."
        )
    if not torch.allclose(weights.sum(-1), torch.ones(()), atol=1e-4):
        return " Each row (one query) should sum to 1: softmax over the last dim."
    return ""


def check_attention(fn: Callable[..., Any], cases: int = 20) -> Result:
    """Check ``fn(q, k, v, mask=None) -> (output, weights)`` against scaled dot-product attention.

    ``mask`` is boolean, True where a key may be attended; it broadcasts to (..., q_len, k_len).
    """
    import torch

    from minibert.attention import scaled_dot_product_attention

    name = "scaled dot-product attention"
    g = torch.Generator().manual_seed(0)
    for case in range(cases):
        batch, heads = (int(n) for n in torch.randint(1, 4, (2,), generator=g))
        q_len, k_len, d_k, d_v = (int(n) for n in torch.randint(1, 9, (4,), generator=g))
        q = torch.randn(batch, heads, q_len, d_k, generator=g)
        k = torch.randn(batch, heads, k_len, d_k, generator=g)
        v = torch.randn(batch, heads, k_len, d_v, generator=g)
        mask = None
        if case >= cases // 2:  # the second half masks keys
            mask = torch.rand(batch, 1, 1, k_len, generator=g) > 0.3
            mask[..., 0] = True  # at least one key to attend to ...
            if case == cases - 1:
                mask[0] = False  # ... except in the last case: all of example 0 is padding
        result, hint = (
            call_safely(fn, q, k, v, mask) if mask is not None else call_safely(fn, q, k, v)
        )
        if hint is not None:
            return report(name, hint, case)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            return report(name, "return a pair (output, weights).", case)
        output, weights = result
        expected_out, expected_w = scaled_dot_product_attention(q, k, v, mask)
        problem = attention_problem(weights, expected_w, "weights")
        if problem is not None:
            if isinstance(weights, torch.Tensor) and weights.shape == expected_w.shape:
                problem += _attention_mistake(weights, q, k, mask)
            return report(
                name, f"{problem} (case {case}: q {tuple(q.shape)}, k {tuple(k.shape)})", case
            )
        problem = attention_problem(output, expected_out, "output")
        if problem is not None:
            return report(name, f"{problem} The output is weights @ v.", case)
    return report(name, None, cases)


def check_padding_mask(fn: Callable[..., Any], cases: int = 20) -> Result:
    """Check ``fn(attention_mask) -> additive mask``: (batch, seq) 1/0 -> (batch, 1, 1, seq) float32.

    The additive mask holds 0.0 for real tokens and torch.finfo(torch.float32).min for padding.
    """
    import torch

    from minibert.attention import padding_mask

    name = "padding mask"
    g = torch.Generator().manual_seed(1)
    for case in range(cases):
        batch = int(torch.randint(1, 5, (1,), generator=g))
        seq = int(torch.randint(1, 10, (1,), generator=g))
        lengths = torch.randint(0, seq + 1, (batch,), generator=g)
        attention_mask = (torch.arange(seq)[None, :] < lengths[:, None]).long()  # (batch, seq)
        got, hint = call_safely(fn, attention_mask.clone())
        if hint is not None:
            return report(name, hint, case)
        expected = padding_mask(attention_mask, dtype=torch.float32)
        if isinstance(got, torch.Tensor) and got.dtype != torch.float32:
            return report(name, f"the mask should be float32 (additive), got {got.dtype}.", case)
        if isinstance(got, torch.Tensor) and torch.isinf(got).any():
            return report(
                name,
                "use torch.finfo(torch.float32).min, not -inf: with -inf a sequence that is all "
                "padding would give NaN after the softmax.",
                case,
            )
        problem = attention_problem(got, expected, "the mask", atol=0.0)
        if problem is not None:
            reversed_mask = padding_mask(1 - attention_mask, dtype=torch.float32)
            if isinstance(got, torch.Tensor) and torch.equal(got, reversed_mask):
                problem += (
                    " The mask is reversed: real tokens (1) get the most negative float and "
                    "padding (0) gets 0.0; it must be the other way round."
                )
            elif isinstance(got, torch.Tensor) and got.numel() == expected.numel():
                problem += (
                    " Real tokens (1) get 0.0 and padding (0) gets the most negative float; the "
                    "shape (batch, 1, 1, seq) broadcasts over heads and queries."
                )
            return report(
                name, f"{problem} (case {case}: attention_mask {attention_mask.tolist()})", case
            )
    return report(name, None, cases)


def check_split_heads(fn: Callable[..., Any], cases: int = 10) -> Result:
    """Check ``fn(x, num_heads)``: (batch, seq, hidden) -> (batch, heads, seq, head_dim)."""
    import torch

    from minibert.attention import split_heads

    name = "split heads"
    g = torch.Generator().manual_seed(2)
    for case in range(cases):
        batch, seq, heads, head_dim = (int(n) for n in torch.randint(1, 6, (4,), generator=g))
        heads += 1  # at least two heads, so a wrong reshape shows
        x = torch.randn(batch, seq, heads * head_dim, generator=g)
        got, hint = call_safely(fn, x, heads)
        if hint is not None:
            return report(name, hint, case)
        expected = split_heads(x, heads)
        problem = attention_problem(got, expected, "the result", atol=0.0)
        if problem is not None:
            if isinstance(got, torch.Tensor) and got.shape == expected.shape:
                problem += (
                    " Right shape, wrong order: view as (batch, seq, heads, head_dim) first, then "
                    "transpose(1, 2); a direct view to (batch, heads, seq, head_dim) mixes tokens."
                )
            return report(name, f"{problem} (case {case}: x {tuple(x.shape)}, {heads} heads)", case)
    return report(name, None, cases)


def check_merge_heads(fn: Callable[..., Any], cases: int = 10) -> Result:
    """Check ``fn(x)``: (batch, heads, seq, head_dim) -> (batch, seq, heads * head_dim)."""
    import torch

    from minibert.attention import merge_heads

    name = "merge heads"
    g = torch.Generator().manual_seed(3)
    for case in range(cases):
        batch, heads, seq, head_dim = (int(n) for n in torch.randint(2, 6, (4,), generator=g))
        x = torch.randn(batch, heads, seq, head_dim, generator=g)
        got, hint = call_safely(fn, x)
        if hint is not None:
            return report(name, hint, case)
        expected = merge_heads(x)
        problem = attention_problem(got, expected, "the result", atol=0.0)
        if problem is not None:
            if isinstance(got, torch.Tensor) and got.shape == expected.shape:
                problem += (
                    " Right shape, wrong order: transpose(1, 2) back to (batch, seq, heads, "
                    "head_dim) before reshaping to (batch, seq, hidden)."
                )
            return report(name, f"{problem} (case {case}: x {tuple(x.shape)})", case)
    return report(name, None, cases)


def check_equal_keys(weights: Any) -> Result:
    """Conceptual question: 3 queries, 4 keys that are all the same vector; what are the weights?

    ``weights`` is the (3, 4) matrix (tensor, array or nested list) you predict, without running
    attention; it is checked against attention run with random queries and one repeated key.
    """
    import torch

    from minibert.attention import scaled_dot_product_attention

    name = "equal keys"
    try:
        got = torch.as_tensor(weights, dtype=torch.float32)
    except (TypeError, ValueError, RuntimeError) as exc:
        return report(name, f"give the weights as a (3, 4) tensor or nested list ({exc}).", 0)
    g = torch.Generator().manual_seed(4)
    cases = 5
    for case in range(cases):
        q = torch.randn(3, 8, generator=g) * 5  # queries of every size and direction
        k = torch.randn(1, 8, generator=g).expand(4, 8)  # four copies of one key
        v = torch.randn(4, 2, generator=g)
        _, expected = scaled_dot_product_attention(q, k, v)
        problem = attention_problem(got, expected, "your weights", atol=1e-4)
        if problem is not None:
            if got.shape == expected.shape:
                problem += (
                    " Hint: when every key is the same, every score in a row is the same number, "
                    "whatever the query is. What does softmax make of equal numbers?"
                )
            return report(name, problem, case)
    return report(name, None, cases)


# --- Lesson 3: the encoder ---------------------------------------------------------------------


def _tiny_bert_config(g: Any) -> Any:
    """A small random BertConfig for the checkers: (vocab, layers, hidden, heads) drawn from g."""
    import torch

    from minibert.config import BertConfig

    heads = int(torch.randint(1, 5, (1,), generator=g))
    hidden = heads * int(torch.randint(2, 9, (1,), generator=g))
    return BertConfig(
        vocab_size=int(torch.randint(20, 60, (1,), generator=g)),
        hidden_size=hidden,
        num_layers=int(torch.randint(1, 4, (1,), generator=g)),
        num_heads=heads,
        intermediate_size=int(torch.randint(4, 40, (1,), generator=g)),
        max_position_embeddings=int(torch.randint(12, 30, (1,), generator=g)),
    )


def check_embeddings(fn: Callable[..., Any], cases: int = 10) -> Result:
    """Check ``fn(input_ids, token_type_ids, embeddings) -> (batch, seq, hidden)``.

    ``embeddings`` is a ``minibert.model.Embeddings`` in eval mode: use its three tables
    (word_embeddings, token_type_embeddings, position_embeddings) and its layer_norm.
    """
    import torch

    from minibert.model import Embeddings

    name = "embedding sum"
    g = torch.Generator().manual_seed(30)
    for case in range(cases):
        torch.manual_seed(30 + case)
        config = _tiny_bert_config(g)
        emb = Embeddings(config).eval()
        emb.layer_norm.weight.data.uniform_(0.5, 1.5)  # not the identity, so that it shows
        emb.layer_norm.bias.data.uniform_(-0.5, 0.5)
        batch = int(torch.randint(1, 4, (1,), generator=g))
        seq = int(torch.randint(2, config.max_position_embeddings + 1, (1,), generator=g))
        ids = torch.randint(0, config.vocab_size, (batch, seq), generator=g)
        types = (torch.arange(seq) >= seq // 2).long().expand(batch, seq).clone()
        got, hint = call_safely(fn, ids, types, emb)
        if hint is not None:
            return report(name, hint, case)
        with torch.no_grad():
            expected = emb(ids, types)
            got = got.detach() if isinstance(got, torch.Tensor) else got
            positions = emb.position_embeddings(torch.arange(seq))
            raw = emb.word_embeddings(ids) + emb.token_type_embeddings(types) + positions
            partial = {
                "the position embeddings": raw - positions,
                "the segment (token type) embeddings": raw - emb.token_type_embeddings(types),
            }
        problem = attention_problem(got, expected, "the embeddings")
        if problem is not None:
            if isinstance(got, torch.Tensor) and got.shape == expected.shape:
                if torch.allclose(got, raw, atol=1e-5):
                    problem += " You summed the tables; now apply embeddings.layer_norm to the sum."
                for what, without in partial.items():
                    if torch.allclose(got, emb.layer_norm(without), atol=1e-5):
                        problem += f" The sum is missing {what}."
            return report(name, f"{problem} (case {case}: input_ids {tuple(ids.shape)})", case)
    return report(name, None, cases)


def check_encoder_layer(fn: Callable[..., Any], cases: int = 10) -> Result:
    """Check ``fn(x, mask, layer) -> (batch, seq, hidden)``: one post-LN encoder layer.

    ``layer`` is a ``minibert.model.EncoderLayer`` in eval mode and ``mask`` the additive mask
    (batch, 1, 1, seq) that BertModel builds once and hands every layer: call
    ``layer.attention(x, mask)`` (it returns (output, weights)) and use attention_norm, ffn_in,
    ffn_out and ffn_norm yourself, with exact GELU.
    """
    import torch
    import torch.nn.functional as F

    from minibert.attention import padding_mask
    from minibert.model import EncoderLayer

    name = "post-LN encoder layer"
    g = torch.Generator().manual_seed(31)
    for case in range(cases):
        torch.manual_seed(31 + case)
        config = _tiny_bert_config(g)
        layer = EncoderLayer(config).eval()
        for norm in (layer.attention_norm, layer.ffn_norm):
            norm.weight.data.uniform_(0.5, 1.5)
            norm.bias.data.uniform_(-0.5, 0.5)
        batch = int(torch.randint(1, 4, (1,), generator=g))
        seq = int(torch.randint(2, 10, (1,), generator=g))
        x = torch.randn(batch, seq, config.hidden_size, generator=g)
        attention_mask = torch.ones(batch, seq, dtype=torch.long)
        attention_mask[0, seq - 1 :] = 0  # the first example ends with padding
        mask = padding_mask(attention_mask, dtype=x.dtype)  # (batch, 1, 1, seq), additive
        got, hint = call_safely(fn, x.clone(), mask.clone(), layer)
        if hint is not None:
            return report(name, hint, case)
        with torch.no_grad():
            expected, _ = layer(x, mask)
            got = got.detach() if isinstance(got, torch.Tensor) else got

            def ffn(
                h: torch.Tensor, act: Callable[..., Any] = F.gelu, layer: EncoderLayer = layer
            ) -> torch.Tensor:
                return layer.ffn_out(act(layer.ffn_in(h)))

            a = layer.attention(x, mask)[0]
            h = layer.attention_norm(x + a)
            pre = x + layer.attention(layer.attention_norm(x), mask)[0]
            no_residual = layer.attention_norm(a)
            unmasked = layer.attention_norm(x + layer.attention(x)[0])
            wrong = {
                "pre-LN (LayerNorm before each sublayer); BERT normalises after adding the "
                "residual, x = LN(x + sublayer(x))": pre + ffn(layer.ffn_norm(pre)),
                "ReLU in the feed-forward; BERT uses GELU (torch.nn.functional.gelu)": (
                    layer.ffn_norm(h + ffn(h, F.relu))
                ),
                "the tanh approximation of GELU (Google's modeling.py, Hugging Face's "
                "'gelu_new'); this layer's config says 'gelu', the exact x * Phi(x), "
                "F.gelu(x) without approximate='tanh'": (
                    layer.ffn_norm(h + ffn(h, lambda t: F.gelu(t, approximate="tanh")))
                ),
                "no residual around the feed-forward; add its input before ffn_norm": (
                    layer.ffn_norm(ffn(h))
                ),
                "no residual around attention; add x before attention_norm": (
                    layer.ffn_norm(no_residual + ffn(no_residual))
                ),
                "the padding mask was not passed to layer.attention": (
                    layer.ffn_norm(unmasked + ffn(unmasked))
                ),
            }
        problem = attention_problem(got, expected, "the layer's output")
        if problem is not None:
            if isinstance(got, torch.Tensor) and got.shape == expected.shape:
                for what, output in wrong.items():
                    if torch.allclose(got, output, atol=1e-5):
                        problem += f" It looks like {what}."
                        break
            return report(name, f"{problem} (case {case}: x {tuple(x.shape)})", case)
    return report(name, None, cases)


def check_parameter_count(fn: Callable[..., Any], cases: int = 10) -> Result:
    """Check ``fn(config) -> int``: the number of parameters of ``BertModel(config)``, by formula."""
    import itertools

    import numpy as np
    import torch

    from minibert.config import BertConfig
    from minibert.model import BertModel

    name = "parameter count"
    g = torch.Generator().manual_seed(32)
    configs = [BertConfig.preset(p) for p in ("tiny", "base")]
    configs += [_tiny_bert_config(g) for _ in range(max(cases - len(configs), 0))]
    for case, config in enumerate(configs):
        got, hint = call_safely(fn, config)
        if hint is not None:
            return report(name, hint, case)
        with torch.device("meta"):  # sizes without memory, even for base
            expected = sum(p.numel() for p in BertModel(config).parameters())
        if not isinstance(got, (int, np.integer)) or isinstance(got, bool):
            return report(name, f"return an int, got {type(got).__name__}.", case)
        if got != expected:
            h, i, n = config.hidden_size, config.intermediate_size, config.num_layers
            missing = {
                "the biases": n * (4 * h + i + h) + h,
                "the LayerNorms' weights and biases": 2 * h * (2 * n + 1),
                "the pooler (dense h x h + bias)": h * h + h,
                "the position embeddings": config.max_position_embeddings * h,
                "the segment (token type) embeddings": config.type_vocab_size * h,
            }
            problem = f"expected {expected:,} for {_describe(config)}, got {got:,}."
            for k in (1, 2):  # one part left out, or two (the pooler and the LayerNorms, say)
                for parts in itertools.combinations(missing, k):
                    if expected - got == sum(missing[p] for p in parts):
                        problem += f" The difference is exactly {' plus '.join(parts)}."
                        return report(name, problem, case)
            return report(name, problem, case)
    return report(name, None, len(configs))


def _describe(config: Any) -> str:
    return (
        f"BertConfig(vocab_size={config.vocab_size}, hidden_size={config.hidden_size}, "
        f"num_layers={config.num_layers}, num_heads={config.num_heads}, "
        f"intermediate_size={config.intermediate_size}, "
        f"max_position_embeddings={config.max_position_embeddings})"
    )


def check_previous_token_head(
    fn: Callable[..., Any], attentions: Any = None, attention_mask: Any = None, cases: int = 6
) -> Result:
    """Check ``fn(attentions, attention_mask) -> (layer, head)``: the strongest previous-token head.

    ``attentions`` is a tuple of (batch, heads, seq, seq), ``attention_mask`` (batch, seq) of 1/0.
    First on random attention with one planted previous-token head (and a next-token decoy),
    then, if you pass them, on real attentions: there your head must reach 90% of the best
    head's mean attention to the previous token.
    """
    import numpy as np
    import torch

    from minibert.viz import attention_summary

    name = "previous-token head"
    g = torch.Generator().manual_seed(33)

    def as_pair(got: Any) -> tuple[int, int] | None:
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            return None
        ints = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in got)
        return (int(got[0]), int(got[1])) if ints else None

    for case in range(cases):
        layers = int(torch.randint(2, 5, (1,), generator=g))
        heads = int(torch.randint(2, 7, (1,), generator=g))
        batch, seq = 2, int(torch.randint(6, 13, (1,), generator=g))
        mask = torch.ones(batch, seq, dtype=torch.long)
        mask[1, seq - 2 :] = 0
        scores = torch.randn(layers, batch, heads, seq, seq, generator=g)
        scores = scores.masked_fill(mask[None, :, None, None, :] == 0, -1e9)
        atts = list(scores.softmax(-1))
        flat = torch.randperm(layers * heads, generator=g)[:2]
        (pl, ph), (nl, nh) = ((int(i) // heads, int(i) % heads) for i in flat)
        shift = torch.zeros(seq, seq)
        shift[torch.arange(1, seq), torch.arange(seq - 1)] = 1.0  # query q -> key q - 1
        shift[0, 0] = 1.0
        ahead = torch.zeros(seq, seq)
        ahead[torch.arange(seq - 1), torch.arange(1, seq)] = 1.0  # query q -> key q + 1
        ahead[seq - 1, seq - 1] = 1.0
        atts[pl][:, ph] = 0.1 * atts[pl][:, ph] + 0.9 * shift
        atts[nl][:, nh] = 0.1 * atts[nl][:, nh] + 0.9 * ahead
        got, hint = call_safely(fn, tuple(atts), mask.clone())
        if hint is not None:
            return report(name, hint, case)
        pair = as_pair(got)
        if pair is None:
            return report(name, f"return (layer, head) as two ints, got {got!r:.60}.", case)
        if pair != (pl, ph):
            problem = f"the planted previous-token head is layer {pl}, head {ph}; you gave {pair}."
            if pair == (nl, nh):
                problem += (
                    " That is the NEXT-token head: query q attends to key q + 1. The previous "
                    "token is the diagonal just below the main one, a[..., q, q - 1]."
                )
            return report(name, f"{problem} (case {case}: {layers} layers x {heads} heads)", case)
    if attentions is None:
        return report(name, None, cases)
    got, hint = call_safely(fn, attentions, attention_mask)
    if hint is not None:
        return report(name, hint, cases)
    pair = as_pair(got)
    if pair is None:
        return report(name, f"return (layer, head) as two ints, got {got!r:.60}.", cases)
    batch, _, seq, _ = attentions[0].shape
    no_ids = torch.zeros(batch, seq, dtype=torch.long)  # token ids do not matter here
    prev = attention_summary(attentions, no_ids, {}, attention_mask)["to previous"]
    layer, head = pair
    if not (0 <= layer < prev.shape[0] and 0 <= head < prev.shape[1]):
        return report(name, f"there is no layer {layer}, head {head} in these attentions.", cases)
    best = float(prev.max())
    if prev[layer, head] < 0.9 * best:
        return report(
            name,
            f"layer {layer}, head {head} puts {prev[layer, head]:.0%} of its attention on the "
            f"previous token on average; the best head reaches {best:.0%}.",
            cases,
        )
    return report(name, None, cases, passed=(
        f"layer {layer}, head {head} puts {prev[layer, head]:.0%} of its attention on the "
        f"previous token (checked on {cases} planted cases and your attentions)."
    ))  # fmt: skip


# --- Lesson 4: masked language modelling -------------------------------------------------------


def check_masking(fn: Callable[..., Any], sequences: int = 1500) -> Result:
    """Check ``fn(input_ids, special_tokens_mask, mask_token_id, random_token_ids, rng)``.

    It returns (masked_ids, labels) like ``minibert.pretraining.mask_tokens``: 15% of the
    non-special positions chosen (round, at least 1; Hugging Face's variant, each position with
    probability 0.15, passes too and is named), 80% [MASK] / 10% random / 10% kept, labels
    the original id where chosen and -100 elsewhere. The checker tests the constraints on every
    sequence and the proportions over all of them, with 5-sigma binomial bounds.
    """
    import math

    import numpy as np

    name = "BERT masking"
    mask_id, random_ids = 4, list(range(5, 1000))
    g = np.random.default_rng(0)
    chosen = masked = kept = randomised = candidates = 0
    exact = True  # every sequence got exactly max(1, round(15%)) chosen positions
    for case in range(sequences):
        n = int(g.integers(4, 120))
        ids = [2, *(int(t) for t in g.integers(5, 1000, n)), 3]
        special = [1] + [0] * n + [1]
        result, hint = call_safely(
            fn, list(ids), list(special), mask_id, random_ids, np.random.default_rng(case)
        )
        if hint is not None:
            return report(name, hint, case)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            return report(name, "return a pair (masked_ids, labels).", case)
        out, labels = (list(map(int, x)) for x in result)
        if len(out) != len(ids) or len(labels) != len(ids):
            return report(name, f"both lists need {len(ids)} entries, like input_ids.", case)
        at = [i for i, lab in enumerate(labels) if lab != IGNORE_INDEX]
        if len(at) == len(ids) or labels == ids:
            return report(
                name,
                "every position has a label (labels = input_ids); only the chosen positions get "
                f"their original id, every other position gets {IGNORE_INDEX} so the loss skips it.",
                case,
            )
        if 0 in at or len(ids) - 1 in at:
            return report(name, "[CLS] and [SEP] were chosen; never choose special tokens.", case)
        want = max(1, round(0.15 * n))
        if len(at) != want:
            exact = False
        if len(at) > 0.6 * n + 3:  # far beyond what a 15% draw gives
            return report(
                name, f"{len(at)} positions chosen out of {n}; BERT chooses 15% of them.", case
            )
        if any(labels[i] != ids[i] for i in at):
            return report(name, "a label must be the ORIGINAL id at its position.", case)
        if any(out[i] != ids[i] for i in range(len(ids)) if i not in at):
            return report(name, "a position that was not chosen changed; leave it as it is.", case)
        chosen += len(at)
        candidates += n
        masked += sum(out[i] == mask_id for i in at)
        kept += sum(out[i] == ids[i] for i in at)
        randomised += sum(out[i] not in (mask_id, ids[i]) for i in at)
    if not exact:  # Hugging Face's variant: each token chosen with probability 0.15
        bound = 5 * math.sqrt(0.15 * 0.85 / candidates)
        if abs(chosen / candidates - 0.15) > bound:
            return report(
                name,
                f"{chosen / candidates:.1%} of the tokens were chosen; BERT chooses 15%: "
                "exactly max(1, round(0.15 * n)) per sequence (Google, minibert), or each token "
                f"with probability 0.15 (Hugging Face); allowed +-{bound:.1%}.",
                sequences,
            )
    for what, count, p in (
        ("[MASK]", masked, 0.8),
        ("random", randomised, 0.1),
        ("kept", kept, 0.1),
    ):
        bound = 5 * math.sqrt(p * (1 - p) / chosen)
        if abs(count / chosen - p) > bound:
            return report(
                name,
                f"{count / chosen:.1%} of the chosen tokens are {what}; BERT uses "
                f"{p:.0%} (allowed: +-{bound:.1%} over {chosen} tokens).",
                sequences,
            )
    if not exact:
        return report(name, None, sequences, passed=(
            f"right on {sequences} sequences. {chosen / candidates:.1%} of the tokens were chosen, "
            "but not exactly max(1, round(0.15 * n)) per sequence as in minibert: a legitimate "
            "variant (Hugging Face chooses each token with probability 0.15; Google counts [CLS] "
            "and [SEP] in n)."
        ))  # fmt: skip
    return report(name, None, sequences)


def check_mlm_loss(fn: Callable[..., Any], cases: int = 20) -> Result:
    """Check ``fn(logits, labels) -> loss``: mean cross-entropy over positions whose label is not -100.

    logits (batch, seq, vocab), labels (batch, seq). The loss must not change when padding (label
    -100) is added, and every labelled position must count once.
    """
    import torch
    import torch.nn.functional as F

    name = "masked LM loss"
    g = torch.Generator().manual_seed(0)
    for case in range(cases):
        batch, seq, vocab = 3, int(torch.randint(4, 12, (1,), generator=g)), 17
        logits = torch.randn(batch, seq, vocab, generator=g)
        labels = torch.randint(0, vocab, (batch, seq), generator=g)
        labels[torch.rand(batch, seq, generator=g) > 0.3] = IGNORE_INDEX
        labels[0, 0] = 3  # at least one labelled position
        expected = F.cross_entropy(logits.reshape(-1, vocab), labels.reshape(-1), ignore_index=-100)
        got, hint = call_safely(fn, logits, labels)
        if hint is not None:
            return report(name, hint, case)
        got = torch.as_tensor(got, dtype=torch.float32)
        if got.shape != ():
            return report(
                name, f"return one number (a 0-dim tensor), got shape {tuple(got.shape)}.", case
            )
        if not torch.allclose(got, expected, atol=1e-5):
            everywhere = F.cross_entropy(logits.reshape(-1, vocab), labels.clamp(min=0).reshape(-1))
            hint = f"got {float(got):.4f}, expected {float(expected):.4f}."
            if torch.allclose(got, everywhere, atol=1e-5):
                hint += " You counted every position; only positions with a label != -100 count."
            else:
                hint += " Average over the labelled positions only (d2l issue 2582 averaged first)."
            return report(name, hint, case)
        padded_logits = torch.cat([logits, torch.randn(batch, 5, vocab, generator=g)], dim=1)
        padded_labels = torch.cat([labels, torch.full((batch, 5), -100)], dim=1)
        padded, hint = call_safely(fn, padded_logits, padded_labels)
        if hint is not None or not torch.allclose(torch.as_tensor(padded), expected, atol=1e-5):
            return report(
                name, "adding padding (label -100) changed the loss; padding must not count.", case
            )
    return report(name, None, cases)


def check_mask_accuracy(fn: Callable[..., Any], cases: int = 20) -> Result:
    """Check ``fn(logits, labels, input_ids, mask_token_id) -> float``: top-1 accuracy at [MASK].

    logits (batch, seq, vocab), labels and input_ids (batch, seq). Only positions with a label
    (not -100) whose input is the [MASK] id count: the chosen positions kept as they are, which
    a model can copy, do not.
    """
    import torch

    name = "accuracy at the [MASK] positions"
    g = torch.Generator().manual_seed(4)
    mask_id, vocab = 4, 12
    for case in range(cases):
        batch, seq = 3, int(torch.randint(6, 14, (1,), generator=g))
        labels = torch.randint(5, vocab, (batch, seq), generator=g)
        chosen = torch.rand(batch, seq, generator=g) < 0.4
        chosen[0, 1] = True
        labels[~chosen] = IGNORE_INDEX
        input_ids = torch.randint(5, vocab, (batch, seq), generator=g)
        as_mask = chosen & (torch.rand(batch, seq, generator=g) < 0.7)
        as_mask[0, 1] = True
        input_ids[as_mask] = mask_id
        kept = chosen & ~as_mask
        input_ids[kept] = labels[kept]  # kept as they are: a copying model gets them right
        logits = torch.randn(batch, seq, vocab, generator=g)
        copy = torch.zeros_like(logits).scatter_(-1, input_ids.clamp(min=0).unsqueeze(-1), 5.0)
        logits = logits + copy  # (batch, seq, vocab): the model copies its input where it can
        got, hint = call_safely(fn, logits, labels, input_ids, mask_id)
        if hint is not None:
            return report(name, hint, case)
        try:
            got = float(got)
        except (TypeError, ValueError):
            return report(name, f"return a number, got {type(got).__name__}.", case)
        right = logits.argmax(-1) == labels  # (batch, seq)

        def share(where: torch.Tensor, right: torch.Tensor = right) -> float:
            return float(right[where].float().mean())

        expected = share(chosen & (input_ids == mask_id))
        if abs(got - expected) < 1e-6:
            continue
        wrong = {
            "every chosen position was counted, the kept ones too: a model scores there by "
            "copying its input; count only positions whose input is the [MASK] id": share(chosen),
            "every position was counted, unlabelled ones too; count only labelled [MASK] "
            "positions": share(torch.ones_like(chosen)),
        }
        hint = f"got {got:.4f}, expected {expected:.4f}."
        for what, value in wrong.items():
            if abs(got - value) < 1e-6:
                hint += f" It looks like {what}."
                break
        return report(name, hint, case)
    return report(name, None, cases)


# --- Lesson 5: next sentence prediction ---------------------------------------------------------


def _numbered_documents(g: Any, docs: int = 6) -> list[list[list[int]]]:
    """Documents whose every token says where it is: 1000 * (doc + 1) + sentence, repeated."""
    import torch

    out = []
    for d in range(docs):
        sentences = int(torch.randint(3, 9, (1,), generator=g))
        out.append(
            [
                [1000 * (d + 1) + i] * int(torch.randint(2, 40, (1,), generator=g))
                for i in range(sentences)
            ]
        )
    return out


def _where(tokens: Sequence[int], documents: list[list[list[int]]]) -> tuple[int, int] | None:
    """(document, sentence) a segment came from, found by its marker token, or None."""
    for token in tokens:
        if token >= 1000:
            d, i = divmod(token, 1000)
            if 1 <= d <= len(documents) and i < len(documents[d - 1]):
                return d - 1, i
    return None


def _parse_pairs(got: Any, documents: list[list[list[int]]]) -> tuple[list[tuple], str | None]:
    """A learner's pairs -> [(a, b, label, where_a, where_b)], or a hint on what is malformed."""
    expected = sum(len(d) - 1 for d in documents)
    if not isinstance(got, list | tuple) or len(got) != expected:
        size = len(got) if hasattr(got, "__len__") else got
        return (
            [],
            f"expected one pair per sentence but the last of each document ({expected}), got {size!r}.",
        )
    pairs = []
    for pair in got:
        if not isinstance(pair, list | tuple) or len(pair) != 3:
            return [], "each pair should be (tokens_a, tokens_b, label)."
        try:
            a, b, label = list(pair[0]), list(pair[1]), int(pair[2])
        except (TypeError, ValueError):
            return [], "each pair should be (list of ids, list of ids, int label)."
        pairs.append((a, b, label, _where(a, documents), _where(b, documents)))
    return pairs, None


def _imbalance(labels: Sequence[int], what: str, rule: str) -> str | None:
    """A hint when labels 0/1 drawn with p = 0.5 put the 1s beyond 4 standard deviations of half."""
    n = len(labels)
    if abs(sum(labels) - n / 2) <= 4 * (n / 4) ** 0.5:
        return None
    return f"{sum(labels)} of {n} pairs are {what}; {rule} with probability 0.5."


def check_nsp_pairs(fn: Callable[..., Any], cases: int = 5) -> Result:
    """Check ``fn(documents, max_len, rng) -> [(tokens_a, tokens_b, label), ...]``: BERT's NSP pairs.

    For every sentence but the last of each document: A is that sentence; B is the next sentence
    (label 0, IsNext) or, with probability 0.5, a random sentence of another document (label 1,
    NotNext). The pair is truncated (the longer segment first) so that [CLS] A [SEP] B [SEP] fits
    max_len.
    """
    import random

    import torch

    name = "NSP pairs"
    g = torch.Generator().manual_seed(2)
    labels: list[int] = []
    for case in range(cases):
        documents, max_len = _numbered_documents(g), int(torch.randint(24, 64, (1,), generator=g))
        got, hint = call_safely(
            fn, [[list(s) for s in d] for d in documents], max_len, random.Random(case)
        )
        if hint is not None:
            return report(name, hint, case)
        pairs, hint = _parse_pairs(got, documents)
        if hint is not None:
            return report(name, hint, case)
        for a, b, label, where_a, where_b in pairs:
            if len(a) + len(b) + 3 > max_len:
                return report(
                    name,
                    f"a pair of {len(a)} + {len(b)} tokens does not fit max_len {max_len} with [CLS] and two [SEP]; truncate the longer segment.",
                    case,
                )
            if where_a is None or where_b is None:
                return report(
                    name,
                    "a segment is empty or holds tokens of no sentence of the documents.",
                    case,
                )
            follows = where_b == (where_a[0], where_a[1] + 1)
            if label not in (0, 1):
                return report(name, f"labels are 0 (IsNext) and 1 (NotNext), got {label}.", case)
            if label == 1 and follows:
                return report(
                    name,
                    "a pair labelled 1 is the true continuation. Labels follow Google and Hugging Face: 0 = IsNext, 1 = NotNext (d2l uses the opposite).",
                    case,
                )
            if label == 0 and not follows:
                hint = "a pair labelled 0 (IsNext) is not the true continuation"
                if where_b[0] != where_a[0]:
                    hint += " (did you use 1 for IsNext, as d2l does? minibert follows Google: 0)"
                return report(name, hint + ".", case)
            if label == 1 and where_b[0] == where_a[0]:
                return report(
                    name,
                    "a random B came from the same document as A; draw it from another document (Google's rule; d2l's allows the same one).",
                    case,
                )
            labels.append(label)
    return report(
        name, _imbalance(labels, "NotNext", "each should be NotNext"), cases
    )  # None: a pass


def check_sop_pairs(fn: Callable[..., Any], cases: int = 5) -> Result:
    """Check ``fn(documents, rng) -> [(tokens_a, tokens_b, label), ...]``: ALBERT's sentence order.

    For every sentence but the last of each document: the sentence and the next one, in order
    (label 0) or, with probability 0.5, swapped (label 1).
    """
    import random

    import torch

    name = "SOP pairs"
    g = torch.Generator().manual_seed(3)
    labels: list[int] = []
    for case in range(cases):
        documents = _numbered_documents(g)
        got, hint = call_safely(fn, [[list(s) for s in d] for d in documents], random.Random(case))
        if hint is not None:
            return report(name, hint, case)
        pairs, hint = _parse_pairs(got, documents)
        if hint is not None:
            return report(name, hint, case)
        for _a, _b, label, where_a, where_b in pairs:
            if where_a is None or where_b is None or where_a[0] != where_b[0]:
                return report(
                    name,
                    "both segments of an SOP pair come from one document: a sentence and its neighbour.",
                    case,
                )
            if abs(where_a[1] - where_b[1]) != 1:
                return report(
                    name,
                    "the two segments must be consecutive sentences (only their order changes).",
                    case,
                )
            in_order = where_b[1] == where_a[1] + 1
            if label != (0 if in_order else 1):
                return report(
                    name,
                    "labels: 0 = in order, 1 = swapped (as Google's NSP: 0 = B follows A).",
                    case,
                )
            labels.append(label)
    return report(name, _imbalance(labels, "swapped", "swap each"), cases)  # None: a pass


def check_nsp_loss(fn: Callable[..., Any], cases: int = 20) -> Result:
    """Check ``fn(nsp_logits, labels) -> loss``: mean cross-entropy over every pair, both labels.

    nsp_logits (batch, 2), labels (batch,) with 0 = IsNext and 1 = NotNext.
    """
    import torch
    import torch.nn.functional as F

    name = "NSP loss"
    g = torch.Generator().manual_seed(4)
    for case in range(cases):
        logits = torch.randn(8, 2, generator=g)
        labels = torch.randint(0, 2, (8,), generator=g)
        labels[0], labels[1] = 0, 1  # both labels present
        expected = F.cross_entropy(logits, labels)
        got, hint = call_safely(fn, logits, labels)
        if hint is not None:
            return report(name, hint, case)
        got = torch.as_tensor(got, dtype=torch.float32)
        if got.shape != ():
            return report(
                name, f"return one number (a 0-dim tensor), got shape {tuple(got.shape)}.", case
            )
        if not torch.allclose(got, expected, atol=1e-5):
            wrong = {
                "IsNext pairs (label 0) were dropped: ignore_index=0 (padding's id, shared with "
                "the MLM loss) silently ignores one of the two classes": F.cross_entropy(
                    logits, labels, ignore_index=0
                ),
                "the labels are reversed: 0 = IsNext, 1 = NotNext (Google, Hugging Face; d2l uses the opposite)": F.cross_entropy(
                    logits, 1 - labels
                ),
                "cross_entropy takes the raw logits; you applied softmax first": F.cross_entropy(
                    logits.softmax(-1), labels
                ),
                "average over the batch (you summed)": F.cross_entropy(
                    logits, labels, reduction="sum"
                ),
            }
            hint = next((w for w, v in wrong.items() if torch.allclose(got, v, atol=1e-5)), None)
            return report(
                name, hint or f"got {float(got):.4f}, expected {float(expected):.4f}.", case
            )
    return report(name, None, cases)


# --- Lesson 6: fine-tuning ---------------------------------------------------------------------


def check_classification_head(fn: Callable[..., Any], cases: int = 20) -> Result:
    """Check ``fn(hidden, pooler_w, pooler_b, classifier_w, classifier_b, labels) -> (logits, loss)``.

    hidden (batch, seq, hidden); pooler_w (hidden, hidden); classifier_w (labels, hidden); labels
    (batch,). Reference: pooled = tanh(hidden[:, 0] @ pooler_w.T + pooler_b), logits = pooled @
    classifier_w.T + classifier_b (batch, labels), loss = mean cross-entropy (a 0-dim tensor).
    """
    import torch
    import torch.nn.functional as F

    name = "classification head"
    g = torch.Generator().manual_seed(0)
    for case in range(cases):
        batch, seq, hidden, labels_n = 4, int(torch.randint(3, 9, (1,), generator=g)), 6, 3
        h = torch.randn(batch, seq, hidden, generator=g)
        pw, pb = torch.randn(hidden, hidden, generator=g), torch.randn(hidden, generator=g)
        cw, cb = torch.randn(labels_n, hidden, generator=g), torch.randn(labels_n, generator=g)
        y = torch.randint(0, labels_n, (batch,), generator=g)

        def head(first, squash=torch.tanh, pooler=pw, pb=pb, cw=cw, cb=cb) -> torch.Tensor:
            return squash(first @ pooler.T + pb) @ cw.T + cb

        expected = head(h[:, 0])
        got, hint = call_safely(fn, h, pw, pb, cw, cb, y)
        if hint is not None:
            return report(name, hint, case)
        if not isinstance(got, tuple | list) or len(got) != 2:
            return report(name, "return a pair (logits, loss).", case)
        logits, loss = (torch.as_tensor(x, dtype=torch.float32) for x in got)
        if logits.shape != expected.shape:
            return report(
                name,
                f"logits should have shape (batch, labels) = {tuple(expected.shape)}, got "
                f"{tuple(logits.shape)}.",
                case,
            )
        if not torch.allclose(logits, expected, atol=1e-5):
            wrong = {
                "you pooled the mean of every position; BERT's pooler reads position 0, the [CLS] "
                "vector": head(h.mean(1)),
                "you read the last position; [CLS] is position 0": head(h[:, -1]),
                "the pooler applies tanh after its dense layer": head(h[:, 0], squash=lambda x: x),
                "a linear layer computes x @ W.T + b (W is (out, in)); you used W": head(
                    h[:, 0], pooler=pw.T
                ),
            }
            hint = next(
                (w for w, value in wrong.items() if torch.allclose(logits, value, atol=1e-5)), None
            )
            return report(
                name, hint or "the logits differ from tanh(h_cls W_p^T + b_p) W_c^T + b_c.", case
            )
        expected_loss = F.cross_entropy(expected, y)
        if loss.shape != () or not torch.allclose(loss, expected_loss, atol=1e-5):
            if loss.shape == () and torch.allclose(
                loss, F.cross_entropy(expected.softmax(-1), y), atol=1e-5
            ):
                hint = (
                    "cross_entropy takes the raw logits; you applied softmax first (twice in all)."
                )
            elif loss.shape == () and torch.allclose(
                loss, F.cross_entropy(expected, y, reduction="sum"), atol=1e-4
            ):
                hint = "average the loss over the batch (you summed it)."
            else:
                hint = f"the loss should be the mean cross-entropy, {float(expected_loss):.4f}."
            return report(name, hint, case)
    return report(name, None, cases)


def check_evaluation(fn: Callable[..., Any], cases: int = 30) -> Result:
    """Check ``fn(labels, predictions) -> (accuracy, f1, confusion)`` for two labels.

    accuracy in [0, 1]; f1 of label 1 (0.0 when nothing is predicted or labelled 1); confusion a
    2 x 2 nested list or tensor with confusion[true][predicted].
    """
    import torch

    from minibert.finetuning import f1_score, scores

    name = "evaluation"
    g = torch.Generator().manual_seed(1)
    for case in range(cases):
        n = int(torch.randint(5, 40, (1,), generator=g))
        labels = torch.randint(0, 2, (n,), generator=g).tolist()
        predictions = torch.randint(0, 2, (n,), generator=g).tolist()
        if case == 0:
            predictions = [0] * n  # nothing predicted positive: F1 must be 0, not an error
        reference = scores(labels, predictions)
        matrix = reference["confusion"]
        expected = (reference["accuracy"], reference["f1"], matrix)
        got, hint = call_safely(fn, labels, predictions)
        if hint is not None:
            if case == 0 and "ZeroDivision" in hint:
                hint += " (nothing was predicted positive: precision and F1 are 0 then)"
            return report(name, hint, case)
        if not isinstance(got, tuple | list) or len(got) != 3:
            return report(name, "return a triple (accuracy, f1, confusion).", case)
        accuracy, f1, confusion = got
        confusion = torch.as_tensor(confusion).tolist()
        if abs(float(accuracy) - expected[0]) > 1e-6:
            if abs(float(accuracy) - expected[0] * n) < 1e-6:
                hint = "accuracy is a fraction of the examples, not a count."
            elif abs(float(accuracy) - 100 * expected[0]) < 1e-4:
                hint = "give accuracy as a fraction in [0, 1], not a percentage."
            else:
                hint = f"accuracy should be {expected[0]:.4f}, got {float(accuracy):.4f}."
            return report(name, hint, case)
        if confusion != matrix:
            if confusion == [list(r) for r in zip(*matrix)]:
                hint = "the confusion matrix is transposed: rows are the true labels, columns the predictions."
            else:
                hint = (
                    f"confusion should be {matrix} (rows true, columns predicted), got {confusion}."
                )
            return report(name, hint, case)
        f1 = float(f1)
        if f1 != f1:  # NaN
            return report(
                name, "F1 is NaN when nothing is predicted positive; it should be 0.", case
            )
        if abs(f1 - expected[1]) > 1e-6:
            tn, fn0, fp0 = matrix[0][0], matrix[0][1], matrix[1][0]
            p0 = tn / (tn + fp0) if tn + fp0 else 0.0
            r0 = tn / (tn + fn0) if tn + fn0 else 0.0
            if abs(f1 - f1_score(p0, r0)) < 1e-6:
                hint = "that is the F1 of label 0; report the F1 of label 1 (fresh)."
            else:
                hint = f"F1 of label 1 should be {expected[1]:.4f}, got {f1:.4f}."
            return report(name, hint, case)
    return report(name, None, cases)


# --- lesson 7 ------------------------------------------------------------------------------------


def check_opinion_scores(fn: Callable[..., Any], cases: int = 20) -> Result:
    """Check ``fn(texts, labels, min_count) -> {word: log-count ratio}`` (baselines.opinion_scores)."""
    import math
    import random
    from collections import Counter

    from minibert.teaching.baselines import WORD, opinion_scores

    def variant(texts, labels, min_count, once=True, plus_vocab=True):
        # the reference with one thing changed, to name the mistake a wrong answer matches
        counts = (Counter(), Counter())
        for text, label in zip(texts, labels):
            words = WORD.findall(text.lower())
            counts[label].update(set(words) if once else words)
        vocab = counts[0].keys() | counts[1].keys()
        totals = [sum(c.values()) + (len(vocab) if plus_vocab else 0) for c in counts]
        return {
            w: math.log((counts[1][w] + 1) / totals[1]) - math.log((counts[0][w] + 1) / totals[0])
            for w in vocab
            if counts[0][w] + counts[1][w] >= min_count
        }

    def close(got: dict, want: dict) -> bool:
        return got.keys() == want.keys() and all(abs(got[w] - want[w]) < 1e-9 for w in want)

    name = "opinion scores"
    rng = random.Random(1)
    words = "good bad dull fun great boring film plot the a not".split()
    for case in range(cases):
        texts = [
            " ".join(rng.choices(words, k=rng.randint(2, 8))) for _ in range(rng.randint(6, 20))
        ]
        labels = [rng.randint(0, 1) for _ in texts]
        if case == 0:  # a word only in fresh texts, repeated, and Capitalised
            texts += ["Wonderful wonderful wonderful film"] * 3
            labels += [1, 1, 1]
        min_count = rng.choice([1, 2, 3])
        want = opinion_scores(texts, labels, min_count)
        got, hint = call_safely(fn, texts, labels, min_count)
        if hint is not None:
            if "ZeroDivision" in hint or "math domain" in hint:
                hint += " (a word never seen with one label: add one to every count)"
            return report(name, hint, case)
        if not isinstance(got, dict):
            return report(name, f"return a dict word -> score, got {type(got).__name__}.", case)
        got = {str(w): float(v) for w, v in got.items()}
        if close(got, want):
            continue
        if any(math.isinf(v) or math.isnan(v) for v in got.values()):
            hint = "a score is infinite: add one to every count (add-one smoothing)."
        elif close({w: -v for w, v in got.items()}, want):
            hint = "the signs are reversed: log P(word | fresh) - log P(word | rotten), fresh is 1."
        elif close(got, variant(texts, labels, min_count, once=False)):
            hint = "count a word once per text it is in, not every time it occurs."
        elif close(got, variant(texts, labels, min_count, plus_vocab=False)):
            hint = (
                "with add-one smoothing each label's total is its word count plus the vocabulary "
                "size, so that the probabilities sum to one."
            )
        elif got.keys() != want.keys():
            extra, missing = sorted(got.keys() - want.keys()), sorted(want.keys() - got.keys())
            hint = (
                f"score exactly the words in at least min_count={min_count} texts (lower-cased); "
                f"extra {extra[:3]}, missing {missing[:3]}."
            )
        else:
            w = next(w for w in sorted(want) if abs(got[w] - want[w]) >= 1e-9)
            hint = f"the score of {w!r} should be {want[w]:.4f}, got {got[w]:.4f}."
        return report(name, hint, case)
    return report(name, None, cases)
