"""Structured output (response format, validation, one repair, AgentOutputInvalid) and outcomes."""

from __future__ import annotations

import json

import pytest

from xflow_runtime.errors import DefinitionError
from tests.agent.support import plan, run

SCHEMA = {"type": "object", "properties": {"response": {"type": "string"}, "escalate": {"type": "boolean"}},
          "required": ["response"]}


def agent(*, model: str = "gpt-4o", outcomes: str = "[{finish: true}]", extra: str = "") -> str:
    return f"""
start: ask
errors: [{{name: bad-output, code: AgentOutputInvalid}}]
states:
  - name: ask
    type: aiagent
    agentName: support
    aiModel: {model}
    userMessage: '${{ .question }}'
    output: {{schema: {json.dumps(SCHEMA)}}}
    agentOutcomes: {outcomes}
    onErrors: [{{errorRef: bad-output, transition: human}}]
    {extra}
    transition: done
  - {{name: done, type: inject, data: {{route: done}}, end: true}}
  - {{name: human, type: inject, data: {{route: human}}, end: true}}
"""


async def test_json_schema_response_format_for_models_that_support_it(scripted_model):
    scripted_model.set_script([{"json": {"response": "ok"}}])
    result = await run(agent(), scripted_model, {"question": "q"})
    assert result.output == {"question": "q", "response": "ok", "route": "done"}
    assert scripted_model.chat_requests[0].body["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "support", "schema": SCHEMA, "strict": False}}


async def test_json_mode_with_the_schema_in_the_system_message_for_other_models(scripted_model):
    scripted_model.set_script([{"text": '```json\n{"response": "fenced"}\n```'}])
    result = await run(agent(model="acme/tiny-model"), scripted_model, {"question": "q"})
    assert result.output["response"] == "fenced"
    body = scripted_model.chat_requests[0].body
    assert body["model"] == "tiny-model" and body["response_format"] == {"type": "json_object"}
    assert body["messages"][0] == {"role": "system", "content": "You are a helpful AI Assistant.\n\nRespond only "
                                   "with a JSON object that conforms to this JSON Schema:\n" + json.dumps(SCHEMA, separators=(",", ":"))}


async def test_invalid_output_is_repaired_once_with_the_validation_error(scripted_model):
    scripted_model.set_script([{"json": {"answer": "wrong key"}}, {"json": {"response": "fixed"}}])
    result = await run(agent(), scripted_model, {"question": "q"})
    assert result.output["response"] == "fixed" and result.output["route"] == "done"
    repair = scripted_model.chat_requests[1].messages
    assert repair[-2:] == [
        {"role": "assistant", "content": '{"answer": "wrong key"}'},
        {"role": "user", "content": "Your previous answer is not valid: /: 'response' is a required property\n"
                                    "Answer again with only a JSON object that matches the required JSON Schema."},
    ]


async def test_invalid_twice_raises_agent_output_invalid_which_on_errors_catches(scripted_model):
    scripted_model.set_script(["not json at all", {"json": {"response": 42}}])
    result = await run(agent(), scripted_model, {"question": "q"})
    assert result.status == "completed", result.error
    assert result.output == {"question": "q", "route": "human"}
    assert "the answer is not JSON" in scripted_model.chat_requests[1].messages[-1]["content"]
    assert len(scripted_model.chat_requests) == 2


async def test_unhandled_agent_output_invalid_fails_the_instance_with_its_code(scripted_model):
    scripted_model.set_script(["nope", "still nope"])
    result = await run("""
start: ask
states:
  - name: ask
    type: aiagent
    agentName: a
    userMessage: hi
    output: {type: object, required: [x]}
    agentOutcomes: [{finish: true}]
    end: true
""", scripted_model)
    assert result.status == "failed"
    assert result.error["code"] == "AgentOutputInvalid" and result.error["name"] == "AgentOutputInvalid"


OUTCOMES = """
      - condition: '${ $agentOutcome.returnValues.escalate == true }'
        finish: true
        dataFilter: {data: '${ {reason: .returnValues.response, tools: (.toolCalls | length)} }', toStateData: '${ .escalation }'}
        transition: human
      - condition: '${ $agentOutcome.returnValues.response != null }'
        finish: true
        dataFilter: {useData: false}
      - finish: true
"""


@pytest.mark.parametrize("reply, expected", [
    ({"response": "call a human", "escalate": True},
     {"question": "q", "escalation": {"reason": "call a human", "tools": 0}, "route": "human"}),
    ({"response": "all good"}, {"question": "q", "route": "done"}),
])
async def test_first_true_outcome_wins_and_its_data_filter_merges(scripted_model, reply, expected):
    scripted_model.set_script([{"json": reply}])
    result = await run(agent(outcomes=OUTCOMES.replace("\n", "\n  ")), scripted_model, {"question": "q"})
    assert result.output == expected


async def test_no_matching_outcome_merges_return_values_and_takes_the_default_transition(scripted_model):
    scripted_model.set_script([{"json": {"response": "x"}}])
    outcomes = "[{condition: '${ $agentOutcome.returnValues.escalate == true }', finish: true, transition: human}]"
    result = await run(agent(outcomes=outcomes), scripted_model, {"question": "q"})
    assert result.output == {"question": "q", "response": "x", "route": "done"}


async def test_outcome_sees_log_and_state_data_filter_applies_last(scripted_model):
    scripted_model.set_script([{"json": {"response": "x"}}])
    outcomes = "[{condition: '${ $agentOutcome.log == \"{\\\"response\\\": \\\"x\\\"}\" and .question == \"q\" }', finish: true, dataFilter: {data: '${ {log: .log} }'}}]"
    result = await run(agent(outcomes=outcomes, extra="dataFilter: '${ {kept: .log} }'"), scripted_model, {"question": "q"})
    assert result.output == {"kept": '{"response": "x"}', "route": "done"}


def test_definition_errors_are_clear():
    with pytest.raises(DefinitionError, match="finish: false keeps the conversation"):
        plan("""
start: a
states:
  - {name: a, type: aiagent, agentName: x, userMessage: hi, agentOutcomes: [{finish: false, transition: b}], end: true}
  - {name: b, type: inject, data: {}, end: true}
""")
    with pytest.raises(DefinitionError, match="'userMessage' is required"):
        plan("start: a\nstates: [{name: a, type: aiagent, agentName: x, agentOutcomes: [], end: true}]")
    with pytest.raises(DefinitionError, match="an agent without outcomes.*needs the state's own"):
        plan("start: a\nstates: [{name: a, type: aiagent, agentName: x, userMessage: hi}]")
    with pytest.raises(DefinitionError, match="tools/0/name: 'bad name!' must be"):
        plan("start: a\nstates: [{name: a, type: aiagent, agentName: x, userMessage: h, end: true, "
             "tools: [{name: 'bad name!', execution: {functionRef: f}}]}]")
    with pytest.raises(DefinitionError, match="needs 'execution"):
        plan("start: a\nstates: [{name: a, type: aiagent, agentName: x, userMessage: h, end: true, tools: [{name: t}]}]")
    with pytest.raises(DefinitionError, match="not a valid JSON Schema"):
        plan("start: a\nstates: [{name: a, type: aiagent, agentName: x, userMessage: h, end: true, output: {type: 12}}]")
    with pytest.raises(DefinitionError, match="is remote"):
        plan("start: a\nstates: [{name: a, type: aiagent, agentName: x, userMessage: h, end: true, "
             "output: {schema: 'https://example.com/s.json'}}]")


def test_output_schema_from_a_file_next_to_the_workflow(tmp_path):
    (tmp_path / "answer.yaml").write_text("type: object\nrequired: [response]\n")
    from xflow_runtime.plan import compile_plan

    compiled = compile_plan({"id": "f", "specVersion": "0.8", "start": "a", "states": [
        {"name": "a", "type": "aiagent", "agentName": "x", "userMessage": "h", "end": True,
         "output": {"schema": "answer.yaml"}}]}, base_dir=str(tmp_path))
    assert compiled.states["a"].output.schema == {"type": "object", "required": ["response"]}


async def test_an_outcome_with_a_transition_leaves_the_state_without_writing_finish(scripted_model):
    """xFlow's documentation writes outcomes as condition + transition, with no ``finish``
    (whose default is false): the transition is taken, the conversation does not wait."""
    scripted_model.set_script([{"json": {"response": "x"}}])
    outcomes = "[{condition: '${ $agentOutcome.returnValues.escalate == true }', transition: human}, {transition: done}]"
    result = await run(agent(outcomes=outcomes), scripted_model, {"question": "q"})
    assert result.output == {"question": "q", "response": "x", "route": "done"}
    assert len(scripted_model.chat_requests) == 1
