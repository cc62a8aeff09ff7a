"""Tests for minibert.teaching.exercises.common: the Result every checker returns; helpers."""

from __future__ import annotations

import torch

from minibert.teaching import exercises
from minibert.teaching.exercises.common import Result, attention_problem, call_safely, report


def test_a_result_is_true_when_passed_and_prints_its_verdict():
    passed, failed = Result("masking", True, "ok."), Result("masking", False, "no [MASK].")
    assert bool(passed) and not bool(failed)
    assert str(passed) == "PASS masking: ok." and str(failed) == "NOT YET masking: no [MASK]."


def test_report_prints_the_result_it_returns(capsys):
    result = report("attention", None, 20)
    assert result == Result("attention", True, "matches the reference on 20 cases.")
    assert capsys.readouterr().out == str(result) + "\n"
    hint = report("attention", "the weights do not sum to 1.", 3)
    assert not hint and hint.message == "the weights do not sum to 1."
    assert report("x", None, 1, passed="right.").message == "right."


def test_call_safely_turns_a_learners_exception_into_a_hint():
    assert call_safely(lambda a, b=0: a + b, 1, b=2) == (3, None)

    def unfinished():
        raise NotImplementedError

    assert call_safely(unfinished) == (None, "the function still raises NotImplementedError; "
                                             "fill in its body.")  # fmt: skip
    assert call_safely(lambda: 1 / 0) == (None, "it raised ZeroDivisionError: division by zero")


def test_attention_problem_names_type_shape_nan_and_distance():
    expected = torch.zeros(2, 3)
    assert attention_problem(expected.clone(), expected, "weights") is None
    assert "should be a torch.Tensor" in attention_problem([[0.0] * 3] * 2, expected, "weights")
    assert "expected shape (2, 3), got (3, 2)" in attention_problem(
        torch.zeros(3, 2), expected, "w"
    )
    assert "NaN" in attention_problem(torch.full((2, 3), float("nan")), expected, "w")
    assert "up to 0.5" in attention_problem(expected + 0.5, expected, "w")


def test_the_package_lists_every_checker_and_each_returns_a_result():
    import importlib
    import inspect
    import pkgutil

    checkers = [n for n in exercises.__all__ if n.startswith("check_")]
    defined = set()  # every checker some lesson's module defines
    for info in pkgutil.iter_modules(exercises.__path__):
        module = importlib.import_module(f"{exercises.__name__}.{info.name}")
        defined |= {
            n
            for n, f in vars(module).items()
            if n.startswith("check_") and getattr(f, "__module__", "") == module.__name__
        }
    assert sorted(checkers) == sorted(set(checkers)) == sorted(defined)
    for name in checkers:
        function = getattr(exercises, name)
        assert inspect.signature(function).return_annotation in (Result, "Result"), name
        assert function.__module__.startswith("minibert.teaching.exercises."), name
    assert "True or False" not in exercises.__doc__


def test_quietly_silences_the_checkers_in_its_block(capsys):
    with exercises.quietly():
        result = report("masking", None, 3)
        assert exercises.check_equal_keys([[1 / 4] * 4] * 3) is not None
    assert result.passed and capsys.readouterr().out == ""
    report("masking", None, 3)
    assert capsys.readouterr().out == "PASS masking: matches the reference on 3 cases.\n"
