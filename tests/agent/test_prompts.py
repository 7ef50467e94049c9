"""systemMessage / userMessage: jq, Jinja2 (sandboxed), embedded ${ }, literal — and what the LLM got."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from xflow_runtime.agent.prompts import compile_prompt
from xflow_runtime.errors import DefinitionError, WorkflowError
from tests.agent.support import Records, run

WORKFLOW = """
start: ask
states:
  - name: ask
    type: aiagent
    agentName: greeter
    systemMessage: "{system}"
    userMessage: '{user}'
    agentOutcomes: [{{finish: true}}]
    end: true
"""


async def test_jq_user_message_and_jinja_system_message_reach_the_model(scripted_model):
    scripted_model.set_script(["hi"])
    workflow = WORKFLOW.format(system="You help {{ customer.name }} ({{ data.tier }}) with {{ topics | join(', ') }}.",
                               user='${ "User: " + .request.question }')
    result = await run(workflow, scripted_model, {"customer": {"name": "Ann"}, "tier": "gold",
                                                  "topics": ["billing", "refunds"], "request": {"question": "Why?"}})
    assert result.status == "completed", result.error
    assert scripted_model.chat_requests[0].messages == [
        {"role": "system", "content": "You help Ann (gold) with billing, refunds."},
        {"role": "user", "content": "User: Why?"},
    ]


async def test_defaults_system_message_and_output_is_response_text(scripted_model):
    scripted_model.set_script(["plain answer"])
    result = await run("""
start: ask
states:
  - name: ask
    type: aiagent
    agentName: a
    userMessage: 'Question: ${ .q } (${ .n })'
    agentOutcomes: [{finish: true}]
    end: true
""", scripted_model, {"q": "why", "n": 3})
    assert scripted_model.chat_requests[0].messages == [
        {"role": "system", "content": "You are a helpful AI Assistant."},
        {"role": "user", "content": "Question: why (3)"},
    ]
    assert result.output["response"] == "plain answer"


@pytest.mark.parametrize("template", [
    "{{ ''.__class__.__mro__ }}",
    "{{ self._TemplateReference__context }}",
    "{{ cycler.__init__.__globals__ }}",
    "{{ data.__class__.__base__.__subclasses__() }}",
    "{{ range.__globals__ }}",
    "{{ namespace.__init__.__globals__['os'] }}",
    "{% for c in [].__class__.__base__.__subclasses__() %}{{ c }}{% endfor %}",
])
def test_sandbox_refuses_attribute_escapes(template):
    with pytest.raises(WorkflowError) as raised:
        compile_prompt(template, "/systemMessage").render({"x": 1}, {})
    assert raised.value.code in ("TemplateSecurityError", "TemplateError")
    assert "object at" not in str(raised.value) and "<class" not in str(raised.value)


@pytest.mark.parametrize("template", ["{{ lipsum() }}", "{{ joiner() }}", "{% include 'x.txt' %}",
                                      "{% import 'os' as os %}", "{{ config }}", "{{ environ }}"])
def test_no_globals_loaders_or_environment(template):
    with pytest.raises(WorkflowError) as raised:
        compile_prompt(template, "/userMessage").render({}, {"SECRETS": {"KEY": "sk-secret"}})
    assert "sk-secret" not in str(raised.value)


def test_secrets_are_not_visible_to_templates_but_are_to_jq():
    variables = {"SECRETS": {"KEY": "sk-secret"}, "CONST": {}, "WORKFLOW": {}}
    with pytest.raises(WorkflowError):
        compile_prompt("{{ SECRETS.KEY }}", "/m").render({}, variables)
    assert compile_prompt("${ $SECRETS.KEY }", "/m").render({}, variables) == "sk-secret"


def test_objects_render_as_json_and_undefined_names_fail_clearly():
    assert compile_prompt("{{ order }} {{ flag }} {{ none }}", "/m").render(
        {"order": {"id": 1, "items": ["a"]}, "flag": True, "none": None}, {}) == '{"id": 1, "items": ["a"]} true null'
    with pytest.raises(WorkflowError, match="'missing' is undefined") as raised:
        compile_prompt("{{ missing }}", "/m").render({}, {})
    assert raised.value.code == "TemplateError"


def test_syntax_errors_are_definition_errors_with_the_location():
    with pytest.raises(DefinitionError, match="/states/0/userMessage: Jinja2 template line 1"):
        compile_prompt("{{ unclosed", "/states/0/userMessage")
    with pytest.raises(DefinitionError, match="/states/0/systemMessage"):
        compile_prompt("${ .a | }", "/states/0/systemMessage")


def test_prompt_kinds():
    assert compile_prompt("plain text", "/m").kind == "literal"
    assert compile_prompt("${ .a }", "/m").kind == "jq"
    assert compile_prompt("a ${ .a } b", "/m").kind == "interpolated"
    assert compile_prompt("{% if a %}x{% endif %}", "/m").kind == "jinja"
    assert compile_prompt("${ {a: 1} }", "/m").render({}, {}) == '{"a": 1}'


async def test_a_template_failure_is_caught_by_on_errors(scripted_model):
    records = Records()
    result = await run("""
start: ask
errors: [{name: bad-template, code: TemplateSecurityError}]
states:
  - name: ask
    type: aiagent
    agentName: a
    userMessage: "{{ ''.__class__ }}"
    agentOutcomes: [{finish: true}]
    onErrors: [{errorRef: bad-template, transition: fallback}]
    end: true
  - name: fallback
    type: inject
    data: {handled: true}
    end: true
""", scripted_model, records=records)
    assert result.output == {"handled": True}
    assert scripted_model.chat_requests == []




@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40))
def test_data_is_inserted_verbatim_never_evaluated(value):
    """Template injection through the data is impossible: a value holding `{{ … }}` or `${ … }`
    is printed as it is, in Jinja2 and in jq messages alike."""
    assert compile_prompt("<{{ v }}>", "/m").render({"v": value}, {}) == f"<{value}>"
    assert compile_prompt("${ \"<\" + .v + \">\" }", "/m").render({"v": value}, {}) == f"<{value}>"
