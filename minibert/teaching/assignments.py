"""Graded assignments that reuse minibert: hand out a skeleton, grade it part by part, offline.

minibert assignment list                          # the assignments, their parts and points
minibert assignment new attention hw1             # the skeleton and its README in hw1/
minibert assignment grade hw1                     # a score per part, a hint per failed part
minibert assignment grade subs/* --csv grades.csv # a whole class: one row per folder

Each assignment is package data (``minibert/assignment_files/NAME``): a README with the task, the
learning goals and the rules, and the student's file, whose bodies raise NotImplementedError.
Grading imports the student's file and runs minibert's reference checks on it: the
``minibert.teaching.exercises`` checkers, minibert's own modules, ``torch.nn.MultiheadAttention`` and, for
the encoder, the real MiniLM against ``transformers``. Nothing needs the network.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import importlib.util
import io
import itertools
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from minibert.options import POSITIVE_INT, argparse_type
from minibert.teaching import exercises
from minibert.utils import atomic_write

FILES = Path(__file__).parent / "assignment_files"
MARKER = ".minibert-assignment.json"  # written by `new`: which assignment a folder holds
PART_SECONDS = 300  # a part that runs longer (an endless loop) scores 0
MEMORY_MB = 4096  # a submission's grading process may use this much memory (POSIX)
STARTUP_SECONDS = 120  # the grading process's own start (Python, torch, minibert), before the file
KEPT_OUTPUT = 10_000  # characters of a submission's printing kept while grading (the rest dropped)


@dataclass(frozen=True)
class Part:
    """One graded piece of an assignment: its points and a check of the student's module."""

    title: str
    points: int
    check: Callable[[ModuleType], tuple[bool, str]]  # module -> (passed, one-line verdict)


@dataclass(frozen=True)
class Assignment:
    """An assignment: the student's file, what it teaches, and its parts."""

    name: str
    title: str
    file: str
    lesson: str
    parts: tuple[Part, ...]

    @property
    def points(self) -> int:
        """The total points."""
        return sum(p.points for p in self.parts)


@dataclass
class PartResult:
    """How one part went: points earned and the verdict (a pass, or a hint)."""

    title: str
    points: int
    max_points: int
    message: str


@dataclass
class Grade:
    """The grade of one folder."""

    assignment: str
    folder: Path
    parts: list[PartResult] = field(default_factory=list)
    error: str | None = None  # the file could not be found or imported

    @property
    def points(self) -> int:
        return sum(p.points for p in self.parts)

    @property
    def max_points(self) -> int:
        return sum(p.max_points for p in self.parts)

    @property
    def passed(self) -> bool:
        return self.error is None and self.points == self.max_points


# --- checking helpers --------------------------------------------------------------------------


def _run_checker(checker: Callable[..., exercises.Result], *args: Any) -> tuple[bool, str]:
    """Run an exercises.check_* function quietly; its (passed, message)."""
    with contextlib.redirect_stdout(io.StringIO()):  # the notebooks' printed line is not needed
        result = checker(*args)
    return result.passed, result.message


def _attr(module: ModuleType, name: str) -> tuple[Any, str | None]:
    """module.name, or (None, a hint saying it is missing)."""
    if not hasattr(module, name):
        return None, f"{module.__name__.split('.')[-1]} has no {name}; keep the skeleton's names."
    return getattr(module, name), None


def _checked(name: str, checker: Callable[..., bool]) -> Callable[[ModuleType], tuple[bool, str]]:
    """A part that runs one ``exercises`` checker on the student's function called name."""

    def part(module: ModuleType) -> tuple[bool, str]:
        fn, hint = _attr(module, name)
        return (False, hint) if hint else _run_checker(checker, fn)

    return part


def _close(got: Any, expected: Any, what: str, atol: float = 1e-5) -> str | None:
    """None when got equals expected within atol, else a hint (shape, NaN or largest difference)."""
    return exercises.attention_problem(got, expected, what, atol)


def _multi_head_mistake(got: Any, module: Any, x: Any, keep: Any) -> str:
    """A hint naming the classic multi-head mistake that gives ``got`` (batch, seq, hidden).

    module has query, key, value, output (nn.Linear) and num_heads; keep is a boolean
    (batch, seq) mask of real tokens, or None.
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


def _attention_heads(module: ModuleType) -> tuple[bool, str]:
    split, hint = _attr(module, "split_heads")
    merge, hint2 = _attr(module, "merge_heads")
    if hint or hint2:
        return False, hint or hint2
    ok, message = _run_checker(exercises.check_split_heads, split)
    if not ok:
        return ok, message
    ok, message2 = _run_checker(exercises.check_merge_heads, merge)
    return ok, message2 if not ok else "split_heads and merge_heads match the reference."


def _attention_multi_head(module: ModuleType, cases: int = 12) -> tuple[bool, str]:
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
        student.eval()
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
            return False, f"{problem}{_multi_head_mistake(got, student, x, keep)} {where}"
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


def _encoder_embeddings(module: ModuleType) -> tuple[bool, str]:
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


def _encoder_attention(module: ModuleType, cases: int = 12) -> tuple[bool, str]:
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
            return False, f"{problem}{_multi_head_mistake(got, student, x, keep)} {where}"
    return True, f"matches minibert's self-attention on {cases} cases (half of them padded)."


def _encoder_layer(module: ModuleType) -> tuple[bool, str]:
    """The student's EncoderLayer, with minibert's attention inside, via check_encoder_layer."""
    import torch

    cls, hint = _attr(module, "EncoderLayer")
    if hint:
        return False, hint

    class ReferenceAttention(torch.nn.Module):
        """minibert's attention with the skeleton's interface: (x, mask) -> output only."""

        def __init__(self, attention: torch.nn.Module):
            super().__init__()
            self.inner = attention

        def forward(self, x: Any, mask: Any = None) -> Any:
            return self.inner(x, mask)[0]

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
        student.attention = ReferenceAttention(reference.attention)
        with torch.no_grad():
            return student(x, mask)

    return _run_checker(exercises.check_encoder_layer, fn)


_MINILM_TEXTS = (
    ("the bank raised its interest rates", None),
    ("she sat on the bank of the river and watched the water", "it was cold"),
    ("a gem of a film", None),
    ("bert reads the whole sentence at once , left and right", "then it predicts the masks"),
)


def _encoder_model(module: ModuleType) -> tuple[bool, str]:
    """MiniLM's weights in the student's BertModel against transformers (or minibert) to 1e-5."""
    import torch

    from minibert import assets
    from minibert.model import BertModel
    from minibert.tokenization import BertTokenizer

    cls, hint = _attr(module, "BertModel")
    if hint:
        return False, hint
    try:
        folder = assets.path("minilm")
    except FileNotFoundError as exc:
        return False, f"this part needs the MiniLM asset: {exc}"
    reference = BertModel.from_pretrained(folder).eval()
    student, hint = _loaded(cls, reference.config, reference.state_dict())
    if hint:
        return False, hint
    tok = BertTokenizer.from_pretrained(folder)
    singles = tok.encode_batch([a for a, _ in _MINILM_TEXTS])  # (batch, seq) tensors, padded
    pairs = tok.encode_batch([(a, b) for a, b in _MINILM_TEXTS if b])
    try:
        import transformers

        hf = transformers.BertModel.from_pretrained(folder, attn_implementation="eager").eval()
        against = f"transformers {transformers.__version__}"
    except ImportError:  # minibert's own BertModel equals transformers' to 1e-5 (tests)
        hf, against = None, "minibert's BertModel (transformers is not installed)"
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


# --- the assignments (assignment 3, pretraining data, is three checkers) ------------------------

ASSIGNMENTS: dict[str, Assignment] = {
    a.name: a
    for a in (
        Assignment(
            "attention",
            "Attention: scaled dot-product, masks, heads, multi-head self-attention",
            "attention.py",
            "02_attention_math",
            (
                Part(
                    "scaled dot-product attention",
                    3,
                    _checked("scaled_dot_product_attention", exercises.check_attention),
                ),
                Part("padding mask", 1, _checked("padding_mask", exercises.check_padding_mask)),
                Part("split and merge heads", 2, _attention_heads),
                Part("multi-head self-attention", 4, _attention_multi_head),
            ),
        ),
        Assignment(
            "encoder",
            "The encoder: embeddings, self-attention, the post-LN layer, BertModel on MiniLM",
            "encoder.py",
            "03_encoder",
            (
                Part("embeddings", 2, _encoder_embeddings),
                Part("self-attention", 2, _encoder_attention),
                Part("encoder layer", 3, _encoder_layer),
                Part("BertModel with MiniLM's weights", 3, _encoder_model),
            ),
        ),
        Assignment(
            "masking",
            "Pretraining data: BERT's masking, the MLM loss, accuracy at [MASK]",
            "masking.py",
            "04_masked_language_model",
            (
                Part("masking procedure", 4, _checked("mask_tokens", exercises.check_masking)),
                Part("MLM loss", 3, _checked("mlm_loss", exercises.check_mlm_loss)),
                Part(
                    "accuracy at the [MASK] positions",
                    3,
                    _checked("mask_accuracy", exercises.check_mask_accuracy),
                ),
            ),
        ),
    )
}


# --- list, new, grade --------------------------------------------------------------------------


def get(name: str) -> Assignment:
    """The assignment called name, or a ValueError listing the known ones."""
    if name not in ASSIGNMENTS:
        raise ValueError(
            f"unknown assignment {name!r}; the assignments are: {', '.join(ASSIGNMENTS)}"
        )
    return ASSIGNMENTS[name]


def new(name: str, folder: str | Path, overwrite: bool = False) -> Path:
    """Copy assignment name's skeleton and README into folder (created); return the folder."""
    assignment = get(name)
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise FileExistsError(f"{folder} is a file; give a folder for the assignment")
    others = [
        a.file for a in ASSIGNMENTS.values() if a.name != name and (folder / a.file).is_file()
    ]
    with contextlib.suppress(ValueError):
        held = which(folder) if (folder / MARKER).is_file() else None
        others += [f"the marker of {held!r}"] if held not in (None, name) else []
    if others:
        raise FileExistsError(
            f"{folder} already holds another assignment's work ({', '.join(others)}); "
            "choose another folder"
        )
    source = FILES / name
    targets = [folder / f.name for f in sorted(source.iterdir()) if f.is_file()]
    existing = [t for t in targets if t.exists()]
    if existing and not overwrite:
        raise FileExistsError(
            f"{', '.join(str(t) for t in existing)} already exist; choose another folder or "
            "pass overwrite=True (--overwrite), which replaces them"
        )
    folder.mkdir(parents=True, exist_ok=True)
    for target in targets:
        shutil.copyfile(source / target.name, target)
    (folder / MARKER).write_text(
        json.dumps({"assignment": assignment.name, "file": assignment.file}) + "\n",
        encoding="utf-8",
    )
    return folder


def which(folder: str | Path) -> str:
    """The assignment a folder holds: from the marker `new` wrote, else from the file it holds."""
    folder = Path(folder)
    marker = folder / MARKER
    if marker.is_file():
        try:
            return str(json.loads(marker.read_text(encoding="utf-8"))["assignment"])
        except (ValueError, KeyError, TypeError) as exc:  # bad JSON, bad UTF-8, no such key
            raise ValueError(
                f"{marker} is damaged ({type(exc).__name__}: {exc}); pass --name, or delete it"
            ) from None
    found = [a.name for a in ASSIGNMENTS.values() if (folder / a.file).is_file()]
    if len(found) == 1:
        return found[0]
    raise ValueError(
        f"cannot tell which assignment {folder} holds (no {MARKER}, and "
        f"{'several' if found else 'none'} of {', '.join(a.file for a in ASSIGNMENTS.values())}); "
        "pass --name"
    )


_counter = itertools.count()


def load_submission(path: Path) -> ModuleType:
    """Import a student's file as a fresh module (a unique name: many folders can be graded)."""
    name = f"minibert_submission_{next(_counter)}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _PartTimeout(BaseException):  # not Exception: the checkers' call_safely must not catch it
    pass


@contextlib.contextmanager
def _time_limit(seconds: int):
    """Raise _PartTimeout after seconds (POSIX main thread only; elsewhere no limit)."""
    usable = hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()
    if not usable or not seconds:
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise _PartTimeout

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


class _Capped(io.TextIOBase):
    """A text sink that keeps the first KEPT_OUTPUT characters written to it and drops the rest."""

    def __init__(self, limit: int = KEPT_OUTPUT):
        self.kept, self.limit = [], limit

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        room = self.limit - sum(map(len, self.kept))
        if room > 0:
            self.kept.append(text[:room])
        return len(text)


def _stopped(exc: BaseException) -> str:
    """A submission's way of ending the grader, in words (sys.exit, an interrupt, ...)."""
    if isinstance(exc, SystemExit):
        return f"stopped: it called sys.exit({exc.code!r})"
    return f"stopped: it raised {type(exc).__name__}"


def grade(
    folder: str | Path,
    name: str | None = None,
    seconds: int = PART_SECONDS,
    progress: Callable[[dict], None] | None = None,
) -> Grade:
    """Grade the submission in folder, in this process: every part, with points and a verdict.

    progress, if given, hears each step ({"phase": ...} before it, {"part": ...} after a part):
    grade_isolated runs this in a child process and follows it.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no folder {folder}")
    assignment = get(name or which(folder))
    note = progress or (lambda event: None)
    result = Grade(assignment.name, folder)
    path = folder / assignment.file
    module = None
    if not path.is_file():
        result.error = (
            f"{path} is missing; `minibert assignment new {assignment.name} DIR` writes it"
        )
    else:
        note({"phase": "import"})
        try:
            with contextlib.redirect_stdout(_Capped()), contextlib.redirect_stderr(_Capped()):
                module = load_submission(path)
        except Exception as exc:  # a student's file can fail in any way; say how, score 0
            where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) else ""
            result.error = f"{assignment.file} does not import: {type(exc).__name__}{where}: {exc}"
        except (SystemExit, KeyboardInterrupt) as exc:
            result.error = f"{assignment.file} does not import: {_stopped(exc)}"
    for index, part in enumerate(assignment.parts):
        if module is None:
            result.parts.append(PartResult(part.title, 0, part.points, result.error or ""))
            continue
        note({"phase": "part", "index": index})
        try:
            quiet = _Capped()  # the student's prints and progress bars stay out of the report
            with (
                _time_limit(seconds),
                contextlib.redirect_stdout(quiet),
                contextlib.redirect_stderr(quiet),
            ):
                passed, message = part.check(module)
        except _PartTimeout:
            passed, message = False, f"stopped after {seconds} s: is there an endless loop?"
        except MemoryError:
            passed, message = False, "it used more memory than the grader allows (MemoryError)"
        except Exception as exc:  # the student's code raised inside the grader's own steps
            passed, message = False, f"it raised {type(exc).__name__}: {exc}"
        except (SystemExit, KeyboardInterrupt) as exc:
            passed, message = False, _stopped(exc)
        result.parts.append(
            PartResult(part.title, part.points if passed else 0, part.points, message)
        )
        note({"part": vars(result.parts[-1])})
    return result


def grade_isolated(
    folder: str | Path,
    name: str | None = None,
    seconds: int = PART_SECONDS,
    memory_mb: int = MEMORY_MB,
) -> Grade:
    """Grade a submission in a process of its own, with a time limit per step and a memory limit.

    Nothing a submission does reaches the next one (exit, os._exit, patched modules, a changed
    default dtype); an exit, a crash, a hang (importing the file included) or too much memory ends
    only that submission's grading, and the parts not reached score 0 with the reason. A process
    is not a sandbox: the file still runs as the teacher's user.
    """
    if seconds <= 0 or memory_mb <= 0:
        raise ValueError(f"seconds and memory_mb must be positive, got {seconds} and {memory_mb}")
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no folder {folder}")
    assignment = get(name or which(folder))
    with tempfile.TemporaryDirectory() as tmp:
        events = Path(tmp) / "events.jsonl"
        command = [sys.executable, "-m", "minibert.teaching.assignments", "--worker", str(folder.resolve()),
                   assignment.name, str(seconds), str(events), str(memory_mb)]  # fmt: skip
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        stop = _follow(child, events, seconds)
        lines = _events(events)
    return _grade_from_events(assignment, folder, lines, stop)


def _events(path: Path) -> list[dict]:
    """The complete lines a grading process has written so far, each a JSON event."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return [json.loads(line) for line in text.split("\n")[:-1]]  # the last may be half-written


def _follow(child: subprocess.Popen, events: Path, seconds: int) -> str | None:
    """Wait for a grading process; kill it when a step overruns. Why it stopped early, or None."""
    step, started, seen = {"phase": "start"}, time.monotonic(), 0
    while child.poll() is None:
        time.sleep(0.05)
        new = _events(events)
        for event in new[seen:]:
            if "phase" in event or "done" in event:
                step, started = event, time.monotonic()
        seen = len(new)
        limit = STARTUP_SECONDS if step.get("phase") == "start" else seconds + 5
        if time.monotonic() - started > (5 if "done" in step else limit):
            if hasattr(os, "killpg"):  # the whole process group: threads and children too
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
            else:
                child.kill()
            child.wait()
            if "done" in step:
                return None  # graded; it only would not exit (a thread, an atexit hook)
            return f"stopped after {seconds} s: is there an endless loop?"
    if child.returncode < 0:
        return (
            f"stopped: the grading process was killed by {signal.Signals(-child.returncode).name}"
        )
    if child.returncode:
        return f"stopped: the grading process exited with code {child.returncode}"
    return None


def _grade_from_events(
    assignment: Assignment, folder: Path, lines: list[str], stop: str | None
) -> Grade:
    """A Grade from what the grading process reported; the parts it never reached score 0."""
    result = Grade(assignment.name, folder)
    done = False
    for event in lines:
        if "part" in event:
            result.parts.append(PartResult(**event["part"]))
        elif "error" in event:
            result.error = event["error"]
        done = done or "done" in event
    if not done:
        result.error = result.error or stop or "stopped: the submission ended the grading process"
    for part in assignment.parts[len(result.parts) :]:
        result.parts.append(PartResult(part.title, 0, part.points, result.error or ""))
    return result


def _worker(folder: str, name: str, seconds: str, events: str, memory_mb: str) -> None:
    """The grading process of grade_isolated: grade one folder, reporting each step to events."""
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        limit = int(memory_mb) * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.path.insert(0, folder)  # the submission may import its own helpers
    with open(events, "a", encoding="utf-8") as out:

        def note(event: dict) -> None:
            out.write(json.dumps(event) + "\n")
            out.flush()

        result = grade(folder, name, int(seconds), progress=note)
        if result.error:
            note({"error": result.error})
        note({"done": True})


def report(result: Grade, stream: Any = None) -> None:
    """Print a grade: one line per part ([points/max] title: PASS or NOT YET and the hint)."""
    stream = stream or sys.stdout
    print(f"{result.assignment}: {result.folder}", file=stream)
    if result.error:
        print(f"  error: {result.error}", file=stream)
    untouched = all("NotImplementedError" in p.message for p in result.parts)
    for p in result.parts:
        verdict = "PASS" if p.points == p.max_points else "NOT YET"
        message = "" if untouched else f" {p.message}"
        print(f"  [{p.points}/{p.max_points}] {p.title}: {verdict}{message}", file=stream)
    if untouched and not result.error:
        print(
            f"  every part still raises NotImplementedError: nothing is written yet. Start with "
            f"part 1, {result.parts[0].title}, in {get(result.assignment).file}.",
            file=stream,
        )
    print(f"  total: {result.points}/{result.max_points}", file=stream)


def write_csv(results: Sequence[Grade], path: str | Path) -> None:
    """One row per folder: folder, assignment, points per part, total, max, error (atomically)."""
    titles = list(dict.fromkeys(p.title for r in results for p in r.parts))
    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow(["folder", "assignment", *titles, "total", "max", "error"])
    for r in results:
        points = {p.title: p.points for p in r.parts}
        writer.writerow([str(r.folder), r.assignment, *(points.get(t, "") for t in titles),
                         r.points, r.max_points, r.error or ""])  # fmt: skip
    atomic_write(path, table.getvalue())  # a failed write leaves the old file whole


# --- the command -------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `minibert assignment` sub-commands: list, new, grade."""
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("list", help="the assignments, their parts and points")
    make = sub.add_parser("new", help="copy an assignment's skeleton and README into a folder")
    make.add_argument("name", help=f"one of: {', '.join(ASSIGNMENTS)}")
    make.add_argument("folder", help="where to write it (created)")
    make.add_argument("--overwrite", action="store_true", help="replace files already there")
    check = sub.add_parser(
        "grade", help="grade one or more folders: a score per part with hints, the total"
    )
    check.add_argument("folders", nargs="+", help="submission folders (e.g. submissions/*)")
    check.add_argument("--name", default=None, help="the assignment, when a folder has no marker")
    check.add_argument("--csv", default=None, help="also write one row per folder to this CSV")
    positive = argparse_type(int, POSITIVE_INT)
    check.add_argument(
        "--seconds", type=positive, default=PART_SECONDS,
        help=f"time limit for importing the file and for each part (default {PART_SECONDS})",
    )  # fmt: skip
    check.add_argument(
        "--memory-mb", type=positive, default=MEMORY_MB,
        help=f"memory limit of each submission's grading process, POSIX (default {MEMORY_MB})",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Run `minibert assignment ...`; exit code 0 when every graded part of every folder passes."""
    if args.action == "list":
        for a in ASSIGNMENTS.values():
            print(f"{a.name}: {a.title} ({a.points} points; lesson {a.lesson}; file {a.file})")
            for p in a.parts:
                print(f"    {p.points} {p.title}")
        return 0
    if args.action == "new":
        try:
            folder = new(args.name, args.folder, args.overwrite)
        except (ValueError, FileExistsError) as exc:
            print(f"minibert assignment new: error: {exc}", file=sys.stderr)
            return 2
        print(f"wrote {get(args.name).file} and README.md to {folder}; grade it with")
        print(f"  minibert assignment grade {shlex.quote(str(folder))}")
        return 0
    if args.csv:  # find out now, not after grading a whole class, that the CSV cannot be written
        where = Path(args.csv).resolve().parent
        if not where.is_dir() or not os.access(where, os.W_OK):
            print(f"minibert assignment grade: error: cannot write {args.csv}: {where} is not "
                  "a writable folder", file=sys.stderr)  # fmt: skip
            return 2
    results = []
    for folder in args.folders:
        try:
            result = grade_isolated(folder, args.name, args.seconds, args.memory_mb)
        except (ValueError, OSError) as exc:  # not a folder, no assignment in it: a row says why
            result = Grade("?", Path(folder), error=str(exc))
        report(result)
        results.append(result)
    if args.csv:
        write_csv(results, args.csv)
        print(f"wrote {len(results)} rows to {args.csv}")
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:  # grade_isolated's child process
    _worker(*sys.argv[2:])
