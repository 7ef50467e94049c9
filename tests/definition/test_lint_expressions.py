"""Lint rules on expressions: every ${ } compiles with the right variables, paths are paths."""

from __future__ import annotations

import pytest

from tests.definition.helpers import BASE, codes, lines
from tests.definition.test_lint_refs import AGENT


def test_xf121_bad_expression_in_an_always_expression_field() -> None:
    assert lines(BASE.replace("condition: .greeting != null", "condition: .greeting !=")) == [
        "wf.yaml:42:20 /states/1/dataConditions/0/condition: jq expression does not compile: syntax error: the "
        "expression ends too early (an operator, bracket or if/then is left open) (in expression: .greeting !=) "
        "[XF121 invalid-expression]"]
    assert "unexpected '}' (line 1, column 5 of the expression)" in lines(
        BASE.replace("condition: .greeting != null", "condition: '{a: }'"))[0]


def test_xf121_wrapped_argument_is_compiled_but_plain_text_is_literal() -> None:
    assert codes(BASE.replace('who: "${ .name }"', 'who: "${ .name | }"')) == ["XF121"]
    assert codes(BASE.replace('who: "${ .name }"', 'who: "not | jq ]"')) == []


def test_xf121_agent_outcome_variable_only_inside_agent_outcomes() -> None:
    agent = BASE.replace("      end: true\n", "      transition: Agent\n") + AGENT.replace("{tool_ref}", "greet")
    assert codes(agent) == []
    misplaced = agent.replace('userMessage: "${ .question }"', 'userMessage: "${ $agentOutcome.log }"')
    assert lines(misplaced) == [
        "wf.yaml:58:18 /states/3/userMessage: jq expression does not compile: $agentOutcome is not defined "
        "(line 1, column 1 of the expression) (in expression: $agentOutcome.log) [XF121 invalid-expression]"]


def test_xf121_const_secrets_and_workflow_are_bound() -> None:
    text = BASE.replace("condition: .greeting != null",
                        "condition: .greeting == $CONST.x and $WORKFLOW.id != null")
    assert codes(text) == []
    assert codes(BASE.replace("condition: .greeting != null", "condition: $UNKNOWN")) == ["XF121"]


@pytest.mark.parametrize("field,replacement", [
    ("stateDataFilter", "    stateDataFilter:\n      input: '{a: }'\n"),
    ("expression function", None),
    ("version", None),
    ("produceEvents data", None),
])
def test_xf121_in_other_fields(field: str, replacement: str | None) -> None:
    if field == "stateDataFilter":
        text = BASE.replace("    type: operation\n", "    type: operation\n" + replacement)
    elif field == "expression function":
        text = BASE.replace("operation: .count + 1", "operation: .count +")
    elif field == "version":
        text = BASE.replace("id: base\n", "id: base\nversion: '${ .v | }'\n")
    else:
        text = BASE.replace("data: .greeting\n", "data: '.greeting |'\n")
    assert codes(text) == ["XF121"]


def test_xf122_to_state_data_must_be_a_path() -> None:
    assert lines(BASE.replace("toStateData: .greeting", "toStateData: '.greeting | length'")) == [
        "wf.yaml:34:24 /states/0/actions/0/actionDataFilter/toStateData: '.greeting | length' does not name a "
        "location in the data (it computes a value); expected a path such as .result or .items[0] "
        "[XF122 not-a-path-expression]"]
    assert codes(BASE.replace("toStateData: .greeting", "toStateData: '${ .a.b[0] }'")) == []


def test_xf125_expression_function_reference() -> None:
    assert codes(BASE.replace("condition: .greeting != null", "condition: '${ fn:inc }'")) == []
    assert lines(BASE.replace("condition: .greeting != null", "condition: '${ fn:greet }'")) == [
        "wf.yaml:42:20 /states/1/dataConditions/0/condition: ${ fn:greet } names function 'greet', which is not "
        "of type 'expression' [XF125 unknown-expression-function]"]
    assert codes(BASE.replace("condition: .greeting != null", "condition: '${ fn:nope }'")) == ["XF125"]


def test_xf126_undeclared_secret_is_a_warning() -> None:
    text = BASE.replace('who: "${ .name }"', 'who: "${ $SECRETS.TOKEN }"')
    assert lines(text) == ["wf.yaml:31:18 /states/0/actions/0/functionRef/arguments/who: warning: $SECRETS.TOKEN "
                           "is used but 'TOKEN' is not listed in secrets [XF126 undeclared-secret]"]
    assert codes(text.replace("start: Greet\n", "start: Greet\nsecrets: [TOKEN]\n")) == []


def test_object_payloads_are_literal_with_expression_leaves() -> None:
    literal = BASE.replace("data: .greeting\n", "data: {text: 'not | jq', who: '${ .name }'}\n")
    assert codes(literal) == []
    broken_leaf = BASE.replace("data: .greeting\n", "data: {who: '${ .name | }'}\n")
    assert lines(broken_leaf)[0].startswith("wf.yaml:53:23 /states/2/end/produceEvents/0/data/who: jq expression "
                                            "does not compile")


def test_xf129_embedded_expression_in_a_literal_field_is_a_warning() -> None:
    text = BASE.replace('who: "${ .name }"', 'who: "Hi ${ .name }"')
    assert lines(text) == [
        "wf.yaml:31:18 /states/0/actions/0/functionRef/arguments/who: warning: 'Hi ${ .name }' is used as literal "
        "text: here only a string that is entirely ${ … } is an expression (build text inside jq: "
        "'${ \"Hi \" + .name }') [XF129 literal-with-expression]"]
    unclosed = BASE.replace('who: "${ .name }"', 'who: "${ .name "')
    assert codes(unclosed) == ["XF129"]
    assert codes(BASE.replace('who: "${ .name }"', 'who: "plain text"')) == []
