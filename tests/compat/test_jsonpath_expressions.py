"""The JSONPath engine (expressionLang: jsonpath): Jayway's behaviours SonataFlow relies on,
compiled once, same interface as jq (specs/compat-sonataflow.md §4)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xflow_runtime.definition import check_workflow
from xflow_runtime.errors import ExpressionError
from xflow_runtime.expressions.jsonpath_expressions import compile_jsonpath, is_jsonpath_expression

PERSON = {"language": "English", "name": "Ada", "response": [{"population": 10}],
          "numbers": [{"x": 2, "y": 1}, {"x": 4, "y": 3}]}


@pytest.mark.parametrize("text, result, condition", [
    ("${$.[?(@.language  == 'English')]}", [PERSON], True),        # a filter on an object tests it
    ("{{ $.[?(@.language == 'Spanish')] }}", [], False),
    ("${ $.response[0].[?(@.population < 20000000)] }", [{"population": 10}], True),
    ("$.numbers[?(@.x > 3)].y", [3], True),
    ("$.numbers[*].x", [2, 4], True),
    ("$.name", "Ada", False),                                       # definite: the value
    ("$.missing", None, False),
    ("$.numbers[1].x", 4, False),
])
def test_results_and_conditions(text: str, result: Any, condition: bool) -> None:
    expression = compile_jsonpath(text)
    assert expression.evaluate(PERSON) == result
    assert expression.evaluate_condition(PERSON) is condition


def test_true_is_a_condition_and_variables_are_roots() -> None:
    assert compile_jsonpath("$.ok").evaluate_condition({"ok": True})
    assert not compile_jsonpath("$.ok").evaluate_condition({"ok": "yes"})
    variables = {"WORKFLOW": {"instanceId": "i-1"}, "CONST": {"limit": 3}}
    assert compile_jsonpath("$WORKFLOW.instanceId").evaluate({}, variables) == "i-1"
    assert compile_jsonpath("$CONST.limit").evaluate({}, variables) == 3
    assert compile_jsonpath("$item.id", extra_variables=("item",)).evaluate({}, {"item": {"id": 7}}) == 7


def test_compiled_once() -> None:
    assert compile_jsonpath("${ $.a.b }") is compile_jsonpath("{{ $.a.b }}") is compile_jsonpath("$.a.b")


@pytest.mark.parametrize("text", ["$.[", "name", "$nope.x", "$.a[?(@.x >)]"])
def test_bad_text_does_not_compile(text: str) -> None:
    with pytest.raises(ExpressionError):
        compile_jsonpath(text)


def test_paths_name_definite_locations_only() -> None:
    assert compile_jsonpath("$.result.items[0]", as_path=True).path({}) == ["result", "items", 0]
    with pytest.raises(ExpressionError, match="does not name a location"):
        compile_jsonpath("$.items[*]", as_path=True)


def test_literal_fields_recognise_marked_and_bare_paths() -> None:
    assert is_jsonpath_expression("$.number") and is_jsonpath_expression("{{ $.a }}")
    assert is_jsonpath_expression("${ $.a }")
    for text in ("errormessage", "$.greeting $.name", "Hello $", 5):
        assert not is_jsonpath_expression(text)


def test_a_bad_jsonpath_is_reported_at_load_time() -> None:
    text = """
id: jp
specVersion: "0.8"
expressionLang: jsonpath
states:
  - name: s
    type: switch
    dataConditions:
      - {condition: "{{ $.[?(@.a ==)] }}", end: true}
    defaultCondition: {end: true}
"""
    found = check_workflow(text).diagnostics
    assert [(d.code, d.pointer) for d in found] == [("XF121", "/states/0/dataConditions/0/condition")]
    assert "JSONPath expression does not compile" in found[0].message


names = st.text(alphabet="abcdefgh_", min_size=1, max_size=6)
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=5))


@settings(max_examples=100, deadline=None)
@given(data=st.recursive(json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                              st.dictionaries(names, inner, max_size=3)),
                         max_leaves=12),
       steps=st.lists(st.one_of(names, st.integers(0, 3)), max_size=4))
def test_a_definite_path_reads_what_a_direct_lookup_reads(data: Any, steps: list[Any]) -> None:
    text = "$" + "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in steps)
    expected: Any = data
    for step in steps:
        if isinstance(step, int) and isinstance(expected, list) and step < len(expected):
            expected = expected[step]
        elif isinstance(step, str) and isinstance(expected, dict) and step in expected:
            expected = expected[step]
        else:
            expected = None
            break
    compiled = compile_jsonpath(text, as_path=True)
    assert compiled.evaluate(data) == expected
    assert compiled.path(data) == steps
