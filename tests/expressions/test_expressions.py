"""jq expressions: recognition, the result rule, variables, sandbox, paths."""

import pytest

from xflow_runtime.errors import ExpressionError, ExpressionSyntaxError
from xflow_runtime.expressions import compile_expression, interpolate, is_expression, strip_expression


@pytest.mark.parametrize("text,expected", [
    ("${ .a }", True), ("  ${.a}  ", True), ("${ .a } ", True), (".a", False), ("Book ${ .t } x", False), (3, False),
])
def test_recognition_of_wrapped_expressions(text, expected):
    assert is_expression(text) is expected


@pytest.mark.parametrize("text", ["${ .greetings } ", " ${ .delivery }", ".delivery", "${.delivery}"])
def test_always_expression_fields_accept_bare_or_wrapped_jq(text):
    assert compile_expression(text).evaluate({"delivery": 1, "greetings": 1}) == 1
    assert strip_expression(text) in (".greetings", ".delivery")


def test_zero_outputs_give_null_and_several_outputs_are_an_error():
    assert compile_expression(".a[]").evaluate({"a": []}) is None
    assert compile_expression(".a[]").evaluate({"a": [7]}) == 7
    with pytest.raises(ExpressionError, match="2 results"):
        compile_expression(".a[]").evaluate({"a": [1, 2]})


def test_const_and_secrets_are_always_bound_even_when_empty():
    assert compile_expression("$CONST.x").evaluate({}) is None
    assert compile_expression("$SECRETS.KEY").evaluate({}, {"SECRETS": {"KEY": "s3"}}) == "s3"


def test_one_compiled_program_serves_different_variable_values():
    expr = compile_expression("${ $SECRETS.K }")
    assert expr.evaluate({}, {"SECRETS": {"K": 1}}) == 1
    assert expr.evaluate({}, {"SECRETS": {"K": 2}}) == 2
    assert compile_expression("${ $SECRETS.K }") is expr


@pytest.mark.parametrize("escape", ["env", "$ENV", "env.HOME", "$ENV.PATH", "input_filename", "get_search_list"])
def test_expressions_cannot_read_the_process_environment(escape, monkeypatch):
    monkeypatch.setenv("XFLOW_TEST_SECRET", "do-not-leak")
    value = compile_expression(escape).evaluate({})
    assert "do-not-leak" not in repr(value)
    assert value in ({}, None, [])


def test_module_imports_are_refused():
    with pytest.raises(ExpressionSyntaxError):
        compile_expression('import "x" as x; 1')


def test_syntax_errors_name_the_users_text_not_the_wrapper():
    with pytest.raises(ExpressionSyntaxError) as info:
        compile_expression(".a +* 2")
    assert "column 5 of the expression" in str(info.value)
    assert "$ENV" not in str(info.value)


def test_conditions_only_accept_json_true():
    for data, expected in [({"x": True}, True), ({"x": 1}, False), ({"x": "true"}, False), ({"x": None}, False)]:
        assert compile_expression(".x").evaluate_condition(data) is expected


def test_null_sorts_before_numbers_as_in_jq():
    assert compile_expression(".age < 18").evaluate({}) is True


def test_paths_name_locations_and_reject_values():
    assert compile_expression("${ .counts.current }", as_path=True).path({}) == ["counts", "current"]
    with pytest.raises(ExpressionError):
        compile_expression("1 + 1", as_path=True).path({})


def test_a_trailing_comment_does_not_swallow_the_wrapper():
    assert compile_expression(".a # the a field").evaluate({"a": 3}) == 3


def test_interpolation_renders_embedded_expressions():
    assert interpolate("{ age(useDogYears: ${ .isDog }) { x } }", {"isDog": True}) == "{ age(useDogYears: true) { x } }"
    assert interpolate("Book ${ .t } is out", {"t": "Dune"}) == "Book Dune is out"
