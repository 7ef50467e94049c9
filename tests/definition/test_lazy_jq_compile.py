"""Texts the pure-Python evaluator covers are compiled by libjq only when an evaluation needs it.

That skips ~5 ms of libjq start-up per expression on a cold load, and it is only sound because
compiling is also the loader's syntax check: every text ``fast_path`` accepts must be valid jq.
"""

from __future__ import annotations

import jq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xflow_runtime.errors import ExpressionError
from xflow_runtime.expressions.fast_path import compile_fast
from xflow_runtime.expressions.jq_expressions import _NOT_COMPILED, ExpressionCache

TOKENS = [".", ".a", ".b", "1", "2.5", '"s"', "true", "false", "null", "not", "and", "or", "+", "-", "*",
          "/", "==", "!=", "<", ">=", "|", "(", ")", "{", "}", ":", ",", "a", "b"]


@settings(max_examples=3000, derandomize=True, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=8))
def test_every_text_the_fast_subset_accepts_compiles_in_libjq(tokens: list[str]) -> None:
    text = " ".join(tokens)
    if compile_fast(text) is not None:
        jq.compile(text)  # raises ValueError on a syntax error


def test_a_fast_text_compiles_libjq_only_when_an_evaluation_falls_back() -> None:
    expression = ExpressionCache().compile(".a.b", as_path=True)
    assert expression._program is _NOT_COMPILED and expression._path_program is _NOT_COMPILED
    assert expression.evaluate({"a": {"b": 1}}) == 1
    assert expression.path({"a": {"b": 1}}) == ["a", "b"]  # a walkable static path: no libjq either
    assert expression._program is _NOT_COMPILED and expression._path_program is _NOT_COMPILED
    assert expression.evaluate_all({"a": {"b": 2}}) == [2]  # libjq, compiled now
    assert expression._program is not _NOT_COMPILED
    with pytest.raises(ExpressionError, match="Cannot index number"):
        expression.path({"a": 5})  # not walkable: libjq gives the error
    assert expression._path_program is not _NOT_COMPILED


def test_a_text_outside_the_subset_is_compiled_at_once() -> None:
    expression = ExpressionCache().compile(".items | map(.x)")
    assert expression._program is not _NOT_COMPILED
