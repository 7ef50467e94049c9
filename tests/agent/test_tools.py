"""The tool loop: schemas sent, parallel calls run concurrently, problems fed back, the budget."""

from __future__ import annotations

import asyncio
import json
import time

from tests.agent.support import Records, plan, run

AGENT = """
start: ask
functions:
  - {{name: search, type: custom, operation: "python:tests.agent.nothing:search"}}
  - {{name: lookup, type: custom, operation: "python:tests.agent.nothing:lookup"}}
states:
  - name: ask
    type: aiagent
    agentName: researcher
    userMessage: '${{ .question }}'
    maxToolExecutions: {budget}
    output: {{schema: {{type: object, properties: {{response: {{type: string}}}}, required: [response]}}}}
    tools:
      - name: SEARCH_DOCUMENTS
        description: Search the documentation.
        parameters: {{schema: {{type: object, properties: {{query: {{type: string}}}}, required: [query]}}}}
        output: {{schema: {{type: object, properties: {{hits: {{type: array}}}}, required: [hits]}}}}
        execution: {{functionRef: search}}
      - name: lookup
        description: Look an order up.
        parameters: {{type: object, properties: {{id: {{type: integer}}}}, required: [id]}}
    agentOutcomes:
      - finish: true
        dataFilter: {{data: '${{ . }}', toStateData: '${{ .agent }}'}}
    end: true
"""

FINAL = {"json": {"response": "done"}}


def tool_messages(request) -> list[tuple[str, object]]:
    return [(m["tool_call_id"], json.loads(m["content"])) for m in request.messages if m["role"] == "tool"]


async def test_tool_schemas_are_sent_and_parallel_calls_run_concurrently(scripted_model):
    spans: list[tuple[float, float]] = []

    async def search(arguments):
        start = time.perf_counter()
        await asyncio.sleep(0.3)
        spans.append((start, time.perf_counter()))
        return {"hits": [f"doc about {arguments['query']}"]}

    scripted_model.set_script([
        {"tool_calls": [{"name": "SEARCH_DOCUMENTS", "arguments": {"query": q}} for q in ("a", "b", "c")]},
        FINAL,
    ])
    result = await run(AGENT.format(budget=10), scripted_model, {"question": "q?"}, functions={"search": search})
    assert result.status == "completed", result.error
    first, second = scripted_model.chat_requests
    assert first.body["tool_choice"] == "auto"
    assert first.tools == [
        {"type": "function", "function": {
            "name": "SEARCH_DOCUMENTS",
            "description": 'Search the documentation.\nReturns JSON matching: '
                           '{"type":"object","properties":{"hits":{"type":"array"}},"required":["hits"]}',
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}},
        {"type": "function", "function": {
            "name": "lookup", "description": "Look an order up.",
            "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}},
    ]
    assert tool_messages(second) == [(f"call_1_{i}", {"hits": [f"doc about {q}"]}) for i, q in enumerate("abc")]
    assert max(start for start, _ in spans) < min(end for _, end in spans), "the three calls overlapped"
    outcome = result.output["agent"]
    assert [call["arguments"] for call in outcome["toolCalls"]] == [{"query": "a"}, {"query": "b"}, {"query": "c"}]
    assert outcome["returnValues"] == {"response": "done"} and outcome["usage"]["calls"] == 2


async def test_invalid_arguments_unknown_tools_failures_and_bad_results_go_back_to_the_model(scripted_model):
    calls: list[object] = []

    def lookup(arguments):
        calls.append(arguments)
        if arguments["id"] == 13:
            raise ValueError("order 13 is cursed")
        return {"hits": "not a list"} if arguments["id"] == 7 else {"order": arguments["id"]}

    def search(arguments):
        calls.append(arguments)
        return {"wrong": True}

    scripted_model.set_script([
        {"tool_calls": [
            {"name": "lookup", "arguments": {"id": "forty-two"}},
            {"name": "lookup", "arguments": "{not json"},
            {"name": "DELETE_EVERYTHING", "arguments": {}},
            {"name": "lookup", "arguments": {"id": 13}},
            {"name": "SEARCH_DOCUMENTS", "arguments": {"query": "x"}},
            {"name": "lookup", "arguments": {"id": 1}},
        ]},
        FINAL,
    ])
    result = await run(AGENT.format(budget=10), scripted_model, {"question": "q"},
                       functions={"search": search, "lookup": lookup})
    assert result.status == "completed", result.error
    assert tool_messages(scripted_model.chat_requests[1]) == [
        ("call_1_0", {"error": "invalid arguments: /id: 'forty-two' is not of type 'integer'"}),
        ("call_1_1", {"error": "arguments are not valid JSON"}),
        ("call_1_2", {"error": "unknown tool 'DELETE_EVERYTHING'; available: SEARCH_DOCUMENTS, lookup"}),
        ("call_1_3", {"error": {"code": "ValueError", "message": "order 13 is cursed"}}),
        ("call_1_4", {"error": "the tool's result does not match its output schema: /: 'hits' is a required property"}),
        ("call_1_5", {"order": 1}),
    ]
    # the three invalid calls never reached a function
    assert sorted(calls, key=str) == sorted([{"id": 13}, {"query": "x"}, {"id": 1}], key=str)


async def test_max_tool_executions_cuts_off_then_asks_for_a_final_answer_without_tools(scripted_model):
    executed: list[str] = []
    scripted_model.set_script([
        {"tool_calls": [{"name": "SEARCH_DOCUMENTS", "arguments": {"query": "one"}}]},
        {"tool_calls": [{"name": "SEARCH_DOCUMENTS", "arguments": {"query": "two"}},
                        {"name": "SEARCH_DOCUMENTS", "arguments": {"query": "three"}}]},
        FINAL,
    ])
    result = await run(AGENT.format(budget=2), scripted_model, {"question": "q"},
                       functions={"search": lambda a: executed.append(a["query"]) or {"hits": []}})
    assert result.status == "completed", result.error
    assert executed == ["one", "two"]
    requests = scripted_model.chat_requests
    assert [r.body.get("tool_choice") for r in requests] == ["auto", "auto", "none"]
    assert requests[2].tool_names == ["SEARCH_DOCUMENTS", "lookup"]  # still described: history has tool calls
    assert tool_messages(requests[2])[-1] == ("call_2_1", {
        "error": "not executed: the agent may run at most 2 tool calls per turn (maxToolExecutions)"})
    assert [c.get("error") is None for c in result.output["agent"]["toolCalls"]] == [True, True, False]


async def test_a_tool_bound_to_a_subflow_gets_the_arguments_as_input(scripted_model):
    child = plan("""
id: pricing
start: price
states:
  - name: price
    type: inject
    data: {price: 9.5}
    end: true
""")
    scripted_model.set_script([{"tool_calls": [{"name": "PRICE", "arguments": {"sku": "A-1"}}]}, "It costs 9.5."])
    result = await run("""
start: ask
states:
  - name: ask
    type: aiagent
    agentName: seller
    userMessage: price of A-1?
    tools:
      - name: PRICE
        parameters: {schema: {type: object, properties: {sku: {type: string}}}}
        execution: {subFlowRef: pricing}
    agentOutcomes: [{finish: true}]
    end: true
""", scripted_model, workflows=[child])
    assert result.status == "completed", result.error
    assert tool_messages(scripted_model.chat_requests[1]) == [("call_1_0", {"sku": "A-1", "price": 9.5})]
    assert result.output == {"response": "It costs 9.5."}


async def test_without_tools_no_tool_fields_are_sent_and_usage_is_recorded(scripted_model):
    records = Records()
    scripted_model.set_script(["hello"])
    await run("""
start: ask
states:
  - {name: ask, type: aiagent, agentName: a, userMessage: hi, agentOutcomes: [{finish: true}], end: true}
""", scripted_model, records=records)
    body = scripted_model.chat_requests[0].body
    assert "tools" not in body and "tool_choice" not in body and "response_format" not in body
    (call,) = records.of("llm_call")
    assert call["state"] == "ask" and call["model"] == "openai/gpt-4o"
    assert call["usage"]["total_tokens"] == call["usage"]["prompt_tokens"] + call["usage"]["completion_tokens"] > 0
    assert call["usage"]["cost"] > 0  # gpt-4o is in litellm's price list


async def test_binding_arguments_are_evaluated_over_the_models_arguments(scripted_model):
    received: list[object] = []
    scripted_model.set_script([{"tool_calls": [{"name": "FIND", "arguments": {"query": "tea"}}]}, "ok"])
    result = await run("""
start: ask
functions: [{name: search, type: custom, operation: "python:x:y"}]
states:
  - name: ask
    type: aiagent
    agentName: a
    userMessage: find tea
    tools:
      - name: FIND
        parameters: {schema: {type: object, properties: {query: {type: string}}, required: [query]}}
        execution: {functionRef: {refName: search, arguments: {q: '${ .query }', limit: 3}}}
    agentOutcomes: [{finish: true}]
    end: true
""", scripted_model, functions={"search": lambda arguments: received.append(arguments) or {"n": 1}})
    assert result.status == "completed", result.error
    assert received == [{"q": "tea", "limit": 3}]


async def test_each_tool_call_and_the_memory_window_are_in_the_history(scripted_model):
    # What the console's timeline shows: every call with its arguments and result or error (long
    # values cut), and how many messages the turn read from and wrote to chat memory.
    records = Records()

    def lookup(arguments):
        if arguments["id"] == 13:
            raise ValueError("order 13 is cursed")
        return {"order": arguments["id"], "notes": "x" * 5000}

    scripted_model.set_script([
        {"tool_calls": [{"name": "lookup", "arguments": {"id": 1}}, {"name": "lookup", "arguments": {"id": 13}}]},
        FINAL,
    ])
    result = await run(AGENT.format(budget=10), scripted_model, {"question": "q"}, functions={"lookup": lookup},
                       records=records)
    assert result.status == "completed", result.error
    first, cursed = records.of("tool_call")
    assert (first["state"], first["tool"], first["arguments"]) == ("ask", "lookup", {"id": 1})
    assert first["step"].endswith("lookup") and set(first["result"]) == {"truncated"}
    assert len(first["result"]["truncated"]) == 2000 and first["result"]["truncated"].startswith('{"order": 1')
    assert cursed["error"] == {"code": "ValueError", "message": "order 13 is cursed"} and "result" not in cursed
    (read,) = records.of("memory_read")
    (write,) = records.of("memory_write")
    assert (read["turn"], read["messages"]) == (1, 0)
    assert write["turn"] == 1 and write["messages"] >= 4  # the user message, the calls, their results, the answer
