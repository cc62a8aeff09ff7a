"""What every checker shares: the ``Result`` it returns, how it reports, how it calls a learner.

A checker prints one line (``str(result)``: PASS, or NOT YET and a hint; nothing inside
``quietly()``) and returns the ``Result``, whose ``bool`` is whether it passed: a teacher can
``assert check_attention(fn)``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch


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
    result = Result(
        name, problem is None, problem or passed or f"matches the reference on {cases} cases."
    )
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


def attention_problem(got: Any, expected: Any, what: str, atol: float = 1e-5) -> str | None:
    """None if ``got`` is a tensor equal to ``expected`` within atol, else a hint saying how not."""
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
