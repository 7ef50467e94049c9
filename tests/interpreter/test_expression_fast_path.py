"""The expression engine binds only the variables a text mentions and adds the sandbox prelude only
when the text names something the prelude redefines; results and the sandbox must not change."""

import os

import pytest
from hypothesis import given, settings, strategies as st

from xflow_runtime.expressions import compile_expression

VARIABLES = {"CONST": {"k": 1}, "SECRETS": {"s": "x"}, "WORKFLOW": {"id": "w"}}


@pytest.mark.parametrize("text", ["env", "$ENV", "env.HOME", "[env, $ENV]", '"\\(env)"', "env | keys",
                                  ". as $x | env"])
def test_environment_stays_hidden(text):
    os.environ.setdefault("HOME", "/root")
    result = compile_expression(text).evaluate({}, VARIABLES)
    assert result in ({}, None, [{}, {}], "{}", [])


@pytest.mark.parametrize("text", ["input_filename", "$__loc__.file"])
def test_file_names_stay_hidden(text):
    assert compile_expression(text).evaluate({}, VARIABLES) in (None, "<stdin>", "<top-level>")


def test_variables_are_bound_only_when_mentioned():
    assert compile_expression(".a + $CONST.k").evaluate({"a": 1}, VARIABLES) == 2
    assert compile_expression("[.a, $SECRETS.s, $WORKFLOW.id]").evaluate({"a": 1}, VARIABLES) == [1, "x", "w"]
    assert compile_expression(".a").evaluate({"a": 1}, VARIABLES) == 1
    assert compile_expression("$CONST").evaluate({}, None) == {}


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from("abc"), st.integers() | st.text(max_size=3), max_size=3))
def test_same_result_with_and_without_unused_variables(data):
    plain = compile_expression("[.a, .b, (.c // 0)]")
    with_variable = compile_expression("[.a, .b, (.c // 0)] | . + [$CONST.k] | .[:3]")
    assert plain.evaluate(data, VARIABLES) == with_variable.evaluate(data, VARIABLES)


_DATA = st.recursive(st.none() | st.integers() | st.text(max_size=2),
                     lambda inner: st.dictionaries(st.sampled_from("abc"), inner, max_size=3) | st.lists(inner, max_size=2),
                     max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([".", ".a", ".a.b", ".b.c.a", "${ .a.c }", " .c "]), _DATA)
def test_plain_paths_agree_with_jq_including_its_errors(text, data):
    from xflow_runtime.errors import ExpressionError
    from xflow_runtime.expressions.jq_expressions import _compile, _wrap, strip_expression

    body = strip_expression(text)
    program = _compile(_wrap(body, (), path=True), body)
    try:
        expected = program.input_value(data).all()[0]
    except ValueError:
        with pytest.raises(ExpressionError):
            compile_expression(text, as_path=True).path(data, VARIABLES)
        return
    assert compile_expression(text, as_path=True).path(data, VARIABLES) == expected


@pytest.mark.parametrize("text", [".a[0]", '.["a b"]', ".a | .b", ".a.b?", "$CONST.x"])
def test_other_paths_still_go_through_jq(text):
    expression = compile_expression(text, as_path=True)
    assert expression._static_path is None


# --- the pure-Python subset evaluator agrees with libjq -----------------------------------------

import json as _json  # noqa: E402 - the imports of this section of the file

import jq as _jq  # noqa: E402

_leaves = st.sampled_from([".", ".a", ".b", ".a.b", ".c.a", "0", "1", "2", "7", "0.5", "2.5", '"x"', '""',
                           '"é"', "true", "false", "null"])


def _combine(children):
    binary = st.tuples(children, st.sampled_from(["+", "-", "*", "/", "==", "!=", "<", "<=", ">", ">=", "and",
                                                  "or", "|"]), children)
    return (binary.map(lambda t: f"({t[0]} {t[1]} {t[2]})")
            | children.map(lambda e: f"({e} | not)")
            | st.tuples(children, st.sampled_from(["floor", "ceil", "round"])).map(lambda t: f"({t[0]} | {t[1]})")
            | st.tuples(children, children).map(lambda t: f"{{a: ({t[0]}), \"b c\": ({t[1]})}}")
            | children.map(lambda e: f"({e}).a")
            | st.just("{a, b}"))


_expressions = st.recursive(_leaves, _combine, max_leaves=6)
_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([2**60, -(2**53) - 1, 2.0, 0.1, 1e300, 2.5, -2.5, -0.4, 0.49999999999999994,
                                                     4503599627370495.5, -1e300])
    | st.sampled_from(["x", "", "é", "ab"]),
    lambda inner: st.dictionaries(st.sampled_from("abc"), inner, max_size=3) | st.lists(inner, max_size=2),
    max_leaves=6)
_inputs = st.dictionaries(st.sampled_from("abc"), _values, max_size=3) | _values


def _canonical(value):
    return _json.dumps(value, sort_keys=True)


@settings(max_examples=600, deadline=None)
@given(_expressions, _inputs)
def test_fast_path_agrees_with_libjq(text, data):
    from xflow_runtime.errors import ExpressionError

    try:
        expected = _jq.compile(text).input_value(data).all()
    except ValueError:
        with pytest.raises(ExpressionError):
            compile_expression(text).evaluate(data, VARIABLES)
        return
    assert len(expected) == 1
    assert _canonical(compile_expression(text).evaluate(data, VARIABLES)) == _canonical(expected[0])


_variable_expressions = st.recursive(
    _leaves | st.sampled_from(["$CONST", "$CONST.a", "$CONST.a.b", "$WORKFLOW.id"]), _combine, max_leaves=5)


@settings(max_examples=300, deadline=None)
@given(_variable_expressions, _inputs, _values)
def test_fast_path_with_variables_agrees_with_libjq(text, data, constant):
    """``$CONST``, ``$SECRETS``, ``$WORKFLOW`` and declared extras are read in-process too."""
    from xflow_runtime.errors import ExpressionError

    variables = {"CONST": constant, "WORKFLOW": {"id": "w"}}
    program = _jq.compile(f".[1] as $CONST | .[2] as $WORKFLOW | .[0] | ({text})")
    try:
        expected = program.input_value([data, constant, variables["WORKFLOW"]]).all()
    except ValueError:
        with pytest.raises(ExpressionError):
            compile_expression(text).evaluate(data, variables)
        return
    assert len(expected) == 1
    assert _canonical(compile_expression(text).evaluate(data, variables)) == _canonical(expected[0])


@pytest.mark.parametrize("text", [".i < .n", "{i: (.i + 1), n: .n}", ".a.b", '.x == "y" and .ok', ".a | not",
                                  "(.a + 1) * 2", "$CONST.a", "$SECRETS.key", ".n < $CONST.limit",
                                  ".order.total * 1.21 | . * 100 | round / 100", ".x | floor", ".x | ceil"])
def test_common_expressions_take_the_fast_path(text):
    assert compile_expression(text)._fast is not None


@pytest.mark.parametrize("text", [".a[0]", "$ENV", "$__loc__", "env", ".a?", "[.a]", "if .a then 1 else 2 end", ".a // 1",
                                  '"\\(.a)"', "-1", "1e3", ".. | numbers", ".a | length", "{(.k): 1}"])
def test_everything_else_goes_to_libjq(text):
    assert compile_expression(text)._fast is None


def test_fast_results_are_private_copies():
    data = {"a": {"list": [1]}}
    result = compile_expression(".a").evaluate(data)
    result["list"].append(2)
    built = compile_expression("{x: .a}").evaluate(data)
    built["x"]["list"].append(3)
    assert data == {"a": {"list": [1]}}
