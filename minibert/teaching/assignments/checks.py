"""The checks of every part: the grader makes the inputs and compares the outputs, here.

Each check takes the student's module as a RemoteModule (remote.py): its functions and classes
run in the worker, in the sandbox, and only what they return comes back. So every check is
(a) inputs drawn here from seeded generators, (b) calls into the student's code there, and
(c) the comparison with the reference and the hint, here: minibert's ``exercises`` checkers (the
notebooks' own), minibert's modules, ``torch.nn.MultiheadAttention`` and, for the encoder, the
real MiniLM against ``transformers``. A check returns (passed, the one-line verdict).
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
from collections.abc import Callable
from typing import Any

from minibert.teaching import exercises

Check = Callable[[Any], tuple[bool, str]]  # the student's module -> (passed, verdict)


# --- checking helpers --------------------------------------------------------------------------


def _run_checker(checker: Callable[..., exercises.Result], *args: Any) -> tuple[bool, str]:
    """Run an exercises.check_* function quietly; its (passed, message)."""
    with exercises.quietly():  # the notebooks' printed line is not needed here
        result = checker(*args)
    return result.passed, result.message


def _attr(module: Any, name: str) -> tuple[Any, str | None]:
    """module.name, or (None, a hint saying it is missing)."""
    if not hasattr(module, name):
        return None, f"{module.__name__.split('.')[-1]} has no {name}; keep the skeleton's names."
    return getattr(module, name), None


def checked(name: str, checker: Callable[..., bool]) -> Check:
    """A part that runs one ``exercises`` checker on the student's function called name."""

    def part(module: Any) -> tuple[bool, str]:
        fn, hint = _attr(module, name)
        return (False, hint) if hint else _run_checker(checker, fn)

    return part


def _close(got: Any, expected: Any, what: str, atol: float = 1e-5) -> str | None:
    """None when got equals expected within atol, else a hint (shape, NaN or largest difference)."""
    return exercises.attention_problem(got, expected, what, atol)


def _multi_head_mistake(got: Any, module: Any, x: Any, keep: Any) -> str:
    """A hint naming the classic multi-head mistake that gives ``got`` (batch, seq, hidden).

    module is the reference (its query, key, value, output and num_heads: the weights the
    student's module was given); keep is a boolean (batch, seq) mask of real tokens, or None.
    """
    import torch

    batch, seq, hidden = x.shape
    heads = module.num_heads
    head_dim = hidden // heads

    def run(
        scale: float = math.sqrt(head_dim),
        split: str = "transpose",
        mask_rule: str = "before",
        axis: int = -1,
        project: bool = True,
    ) -> torch.Tensor:
        def split_heads(t: torch.Tensor) -> torch.Tensor:
            if split == "view":  # the classic reshape bug: heads read across positions
                return t.reshape(batch, heads, seq, head_dim)
            return t.view(batch, seq, heads, head_dim).transpose(1, 2)

        q, k, v = (split_heads(lin(x)) for lin in (module.query, module.key, module.value))
        scores = q @ k.transpose(-2, -1) / scale  # (batch, heads, seq, seq)
        allowed = None if keep is None else keep[:, None, None, :]
        if allowed is not None and mask_rule == "before":
            scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        weights = scores.softmax(axis)
        if allowed is not None and mask_rule == "after":
            weights = weights * allowed
        y = weights @ v  # (batch, heads, seq, head_dim)
        if split == "view":
            y = y.reshape(batch, seq, hidden)
        else:
            y = y.transpose(1, 2).reshape(batch, seq, hidden)
        return module.output(y) if project else y

    candidates = {
        "the scores were not divided by sqrt(head_dim)": lambda: run(scale=1.0),
        "the scores were divided by sqrt(hidden_size); each head's d_k is head_dim = hidden_size "
        "/ num_heads": lambda: run(scale=math.sqrt(hidden)),
        "the heads were split with a reshape to (batch, heads, seq, head_dim) directly, which "
        "mixes positions; view as (batch, seq, heads, head_dim), then transpose(1, 2)": lambda: run(
            split="view"
        ),
        "the softmax ran over the queries (dim=-2) instead of the keys (the last dim)": lambda: run(
            axis=-2
        ),
        "the mask was applied after the softmax; mask the scores before it": lambda: run(
            mask_rule="after"
        ),
        "the padding mask was ignored": lambda: run(mask_rule="none"),
        "the output projection (self.output) is missing": lambda: run(project=False),
    }
    with torch.no_grad():
        for what, candidate in candidates.items():
            try:
                value = candidate()
            except RuntimeError:
                continue
            same_shape = isinstance(got, torch.Tensor) and got.shape == value.shape
            if same_shape and torch.allclose(got, value, atol=1e-5):
                return f" It looks like {what}."
    return ""


def _random_attention_inputs(g: Any, hidden: int, padded: bool) -> tuple[Any, Any]:
    """x (batch, seq, hidden) and a 1/0 attention_mask (batch, seq), the first example padded."""
    import torch

    batch, seq = 3, int(torch.randint(3, 9, (1,), generator=g))
    x = torch.randn(batch, seq, hidden, generator=g)
    mask = torch.ones(batch, seq, dtype=torch.long)
    if padded:
        mask[0, seq // 2 :] = 0
    return x, mask


# --- assignment 1: attention -------------------------------------------------------------------


def attention_heads(module: Any) -> tuple[bool, str]:
    split, hint = _attr(module, "split_heads")
    merge, hint2 = _attr(module, "merge_heads")
    if hint or hint2:
        return False, hint or hint2
    ok, message = _run_checker(exercises.check_split_heads, split)
    if not ok:
        return ok, message
    ok, message2 = _run_checker(exercises.check_merge_heads, merge)
    return ok, message2 if not ok else "split_heads and merge_heads match the reference."


def attention_multi_head(module: Any, cases: int = 12) -> tuple[bool, str]:
    """The student's MultiHeadSelfAttention against minibert's and torch.nn.MultiheadAttention."""
    import torch

    from minibert.attention import MultiHeadSelfAttention, padding_mask

    cls, hint = _attr(module, "MultiHeadSelfAttention")
    if hint:
        return False, hint
    g = torch.Generator().manual_seed(12)
    for case in range(cases):
        heads = int(torch.randint(1, 5, (1,), generator=g))
        hidden = heads * int(torch.randint(2, 7, (1,), generator=g))
        torch.manual_seed(case)
        reference = MultiHeadSelfAttention(hidden, heads).eval()
        student, hint = exercises.call_safely(cls, hidden, heads)
        if hint:
            return False, f"MultiHeadSelfAttention({hidden}, {heads}): {hint}"
        try:
            student.load_state_dict(reference.state_dict())
        except (RuntimeError, AttributeError) as exc:
            return False, f"its weights do not load ({exc}); keep the skeleton's __init__."
        student.eval()  # it runs in the worker, as every call on student does
        padded = case % 2 == 1
        x, attention_mask = _random_attention_inputs(g, hidden, padded)
        args = (x, attention_mask) if padded else (x,)
        with torch.no_grad():
            result, hint = exercises.call_safely(student, *args)
            if hint:
                return False, hint
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                return False, "forward should return a pair (output, weights)."
            got, weights = result
            mask = padding_mask(attention_mask, dtype=x.dtype) if padded else None
            expected, expected_w = reference(x, mask, output_attentions=True)
            # torch's own module, given the same weights
            torch_mha = torch.nn.MultiheadAttention(hidden, heads, batch_first=True).eval()
            torch_mha.in_proj_weight.copy_(
                torch.cat([reference.query.weight, reference.key.weight, reference.value.weight])
            )
            torch_mha.in_proj_bias.copy_(
                torch.cat([reference.query.bias, reference.key.bias, reference.value.bias])
            )
            torch_mha.out_proj.load_state_dict(reference.output.state_dict())
            from_torch, torch_w = torch_mha(
                x,
                x,
                x,
                key_padding_mask=(attention_mask == 0) if padded else None,
                need_weights=True,
                average_attn_weights=False,
            )
        where = f"(case {case}: hidden {hidden}, {heads} heads{', with padding' if padded else ''})"
        problem = _close(got, expected, "the output")
        if problem:
            keep = attention_mask.bool() if padded else None
            return False, f"{problem}{_multi_head_mistake(got, reference, x, keep)} {where}"
        problem = _close(weights, expected_w, "the weights")
        if problem:
            return False, f"{problem} Return the weights as (batch, heads, seq, seq). {where}"
        problem = _close(got, from_torch, "the output against torch.nn.MultiheadAttention", 1e-5)
        problem = problem or _close(weights, torch_w, "the weights against torch's", 1e-5)
        if problem:
            return False, f"{problem} {where}"
    return True, (
        f"matches minibert's module and torch.nn.MultiheadAttention on {cases} cases "
        "(half of them padded)."
    )


# --- assignment 2: the encoder -----------------------------------------------------------------


def _loaded(cls: Any, config: Any, state: dict) -> tuple[Any, str | None]:
    """cls(config) with ``state`` loaded (strict), in eval mode; or (None, a hint)."""
    module, hint = exercises.call_safely(cls, config)
    if hint:
        return None, f"{cls.__name__}(config): {hint}"
    try:
        module.load_state_dict(state)
    except (RuntimeError, AttributeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return (
            None,
            f"the reference weights do not load into {cls.__name__} ({first}); keep the skeleton's __init__.",
        )
    return module.eval(), None


def encoder_embeddings(module: Any) -> tuple[bool, str]:
    """The student's Embeddings, given the reference's weights, via check_embeddings."""
    import torch

    from minibert.config import BertConfig

    cls, hint = _attr(module, "Embeddings")
    if hint:
        return False, hint

    def fn(ids: Any, types: Any, reference: Any) -> Any:
        config = BertConfig(
            vocab_size=reference.word_embeddings.num_embeddings,
            hidden_size=reference.word_embeddings.embedding_dim,
            num_layers=1,
            num_heads=1,
            intermediate_size=4,
            max_position_embeddings=reference.position_embeddings.num_embeddings,
            type_vocab_size=reference.token_type_embeddings.num_embeddings,
            layer_norm_eps=reference.layer_norm.eps,
        )
        student, hint = _loaded(cls, config, reference.state_dict())
        if hint:
            raise ValueError(hint)
        with torch.no_grad():
            return student(ids, types)

    return _run_checker(exercises.check_embeddings, fn)


def encoder_attention(module: Any, cases: int = 12) -> tuple[bool, str]:
    """The student's SelfAttention (additive mask) against minibert's."""
    import torch

    from minibert.attention import MultiHeadSelfAttention, padding_mask
    from minibert.config import BertConfig

    cls, hint = _attr(module, "SelfAttention")
    if hint:
        return False, hint
    g = torch.Generator().manual_seed(21)
    for case in range(cases):
        heads = int(torch.randint(1, 5, (1,), generator=g))
        hidden = heads * int(torch.randint(2, 7, (1,), generator=g))
        config = BertConfig(
            vocab_size=10, hidden_size=hidden, num_layers=1, num_heads=heads, intermediate_size=4
        )
        torch.manual_seed(case)
        reference = MultiHeadSelfAttention(hidden, heads).eval()
        student, hint = _loaded(cls, config, reference.state_dict())
        if hint:
            return False, hint
        padded = case % 2 == 1
        x, attention_mask = _random_attention_inputs(g, hidden, padded)
        mask = padding_mask(attention_mask, dtype=x.dtype) if padded else None
        with torch.no_grad():
            got, hint = exercises.call_safely(student, x, mask)
            if hint:
                return False, hint
            expected, _ = reference(x, mask)
        problem = _close(got, expected, "the output")
        if problem:
            keep = attention_mask.bool() if padded else None
            where = f"(case {case}: hidden {hidden}, {heads} heads{', padded' if padded else ''})"
            return False, f"{problem}{_multi_head_mistake(got, reference, x, keep)} {where}"
    return True, f"matches minibert's self-attention on {cases} cases (half of them padded)."


LENT_NUMBERS = 2**16  # the largest input a lent helper takes (the checks use a few hundred)


def _reference_attention(attention: Any) -> Callable[..., Any]:
    """minibert's attention with the skeleton's interface, (x, mask) -> output only: lent to the
    student's layer, it runs here in the grader (the sandbox never holds the reference)."""
    import torch

    def forward(x: Any, mask: Any = None) -> Any:
        if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.numel() > LENT_NUMBERS:
            got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(
                f"the grader's attention takes x (batch, seq, hidden) of at most {LENT_NUMBERS:,} "
                f"numbers, got {got}"
            )
        with torch.no_grad():
            return attention(x, mask)[0]

    return forward


def encoder_layer(module: Any) -> tuple[bool, str]:
    """The student's EncoderLayer, with minibert's attention lent to it, via check_encoder_layer."""
    import torch

    cls, hint = _attr(module, "EncoderLayer")
    if hint:
        return False, hint

    def fn(x: Any, mask: Any, reference: Any) -> Any:
        from minibert.config import BertConfig

        config = BertConfig(
            vocab_size=10,
            hidden_size=reference.ffn_in.in_features,
            num_layers=1,
            num_heads=reference.attention.num_heads,
            intermediate_size=reference.ffn_in.out_features,
            layer_norm_eps=reference.attention_norm.eps,
        )
        student, hint = _loaded(cls, config, reference.state_dict())
        if hint:
            raise ValueError(hint)
        student.lend("attention", _reference_attention(reference.attention))
        with torch.no_grad():
            return student(x, mask)

    return _run_checker(exercises.check_encoder_layer, fn)


_MINILM_TEXTS = (
    ("the bank raised its interest rates", None),
    ("she sat on the bank of the river and watched the water", "it was cold"),
    ("a gem of a film", None),
    ("bert reads the whole sentence at once , left and right", "then it predicts the masks"),
)


@functools.lru_cache(maxsize=1)
def _minilm() -> tuple[Any, Any, Any, str]:
    """MiniLM in minibert, its tokenizer, in transformers (or None) and what it is compared with.

    Loaded once for a whole class; raises FileNotFoundError without the asset.
    """
    from minibert import assets
    from minibert.model import BertModel
    from minibert.tokenization import BertTokenizer

    folder = assets.path("minilm")
    reference = BertModel.from_pretrained(folder).eval()
    tok = BertTokenizer.from_pretrained(folder)
    try:
        import transformers

        with contextlib.redirect_stderr(io.StringIO()):  # its progress bar is not the report's
            hf = transformers.BertModel.from_pretrained(folder, attn_implementation="eager").eval()
        against = f"transformers {transformers.__version__}"
    except ImportError:  # minibert's own BertModel equals transformers' to 1e-5 (tests)
        hf, against = None, "minibert's BertModel (transformers is not installed)"
    return reference, tok, hf, against


def encoder_model(module: Any) -> tuple[bool, str]:
    """MiniLM's weights in the student's BertModel against transformers (or minibert) to 1e-5."""
    import torch

    cls, hint = _attr(module, "BertModel")
    if hint:
        return False, hint
    try:
        reference, tok, hf, against = _minilm()
    except FileNotFoundError as exc:
        return False, f"this part needs the MiniLM asset: {exc}"
    student, hint = _loaded(cls, reference.config, reference.state_dict())
    if hint:
        return False, hint
    singles = tok.encode_batch([a for a, _ in _MINILM_TEXTS])  # (batch, seq) tensors, padded
    pairs = tok.encode_batch([(a, b) for a, b in _MINILM_TEXTS if b])
    for what, batch in (("single sentences, padded", singles), ("sentence pairs", pairs)):
        ids, types, attention = batch["input_ids"], batch["token_type_ids"], batch["attention_mask"]
        with torch.no_grad():
            result, hint = exercises.call_safely(student, ids, types, attention)
            if hint:
                return False, hint
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                return False, "BertModel.forward should return a pair (last_hidden, pooled)."
            got, pooled = result
            if hf is not None:
                out = hf(input_ids=ids, token_type_ids=types, attention_mask=attention)
                expected, expected_pool = out.last_hidden_state, out.pooler_output
            else:
                out = reference(ids, types, attention)
                expected, expected_pool = out.last_hidden_state, out.pooler_output
            real = attention.bool()  # (batch, seq): compare where there are tokens
        if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
            return False, _close(got, expected, "last_hidden") or "wrong output"
        problem = _close(got[real], expected[real], f"last_hidden ({what})")
        if problem:
            unpadded = [i for i in range(len(ids)) if bool(attention[i].all())]
            clean = unpadded and all(
                torch.allclose(got[i], expected[i], atol=1e-5) for i in unpadded
            )
            if clean:
                problem += (
                    " The unpadded sentences match and the padded ones do not: the attention "
                    "mask is not reaching the layers (1 = token, 0 = padding; padding gets a very "
                    "negative score)."
                )
            return False, f"{problem} Parts 1-3 must pass first."
        problem = _close(pooled, expected_pool, f"pooled ({what})")
        if problem:
            return (
                False,
                f"{problem} The pooler is tanh(dense(last_hidden[:, 0])): the [CLS] vector.",
            )
        one = ids[:1, : int(attention[0].sum())]  # an unpadded input, no other argument
        with torch.no_grad():
            alone, hint = exercises.call_safely(student, one)
            if hint:
                return False, f"called with input_ids only: {hint}"
            expected_alone = reference(one).last_hidden_state
        if not isinstance(alone, (tuple, list)) or _close(alone[0], expected_alone, "x"):
            return False, (
                "called with input_ids only, the output differs: token_type_ids default to "
                "zeros and attention_mask to ones."
            )
    return True, (
        f"MiniLM's weights in your BertModel match {against} to 1e-5 on "
        f"{len(singles['input_ids']) + len(pairs['input_ids'])} padded inputs (single "
        "sentences and pairs)."
    )


def finetuning_loop(module: Any) -> tuple[bool, str]:
    """The student's fine_tune, given a model and a measure the worker builds (worker.MADE), via
    check_fine_tuning_loop: the weights it returns are compared here with the reference loop's."""
    fn, hint = _attr(module, "fine_tune")
    if hint:
        return False, hint
    return _run_checker(exercises.check_fine_tuning_loop, fn, 6, module.make)
