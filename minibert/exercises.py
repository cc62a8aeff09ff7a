"""Checkers for the notebooks' exercises, usable in assignments too.

Each ``check_*`` function calls the learner's function on random inputs, compares the result with
minibert's reference implementation, prints one line (a pass, or a hint saying what differs) and
returns True or False, so a teacher can also ``assert check_attention(student_fn)`` in a grader.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def report(name: str, problem: str | None, cases: int) -> bool:
    """Print the verdict of one checker and return whether it passed."""
    if problem is None:
        print(f"PASS {name}: matches the reference on {cases} cases.")
        return True
    print(f"NOT YET {name}: {problem}")
    return False


def call_safely(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, str | None]:
    """Call a learner's function; return (result, None) or (None, a hint naming the exception)."""
    try:
        return fn(*args, **kwargs), None
    except NotImplementedError:
        return None, "the function still raises NotImplementedError; fill in its body."
    except Exception as exc:  # the learner's code may raise anything; report it as a hint
        return None, f"it raised {type(exc).__name__}: {exc}"


# --- Lesson 1: tokens and segments -------------------------------------------------------------


# --- Lesson 2: attention math ------------------------------------------------------------------


# --- Lesson 3: the encoder ---------------------------------------------------------------------


# --- Lesson 4: masked language modelling -------------------------------------------------------
