"""Traces of an in-process instance, read from in-memory exporters: the span tree, GenAI attributes
and metrics, traceparent on outgoing requests, content only when asked for (specs/observability.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from tests.functions.server import RecordingServer, Reply
from tests.telemetry.support import CONTENT_ATTRIBUTES, Collected
from xflow_runtime import Runtime
from xflow_runtime.llm import LLMSettings
from xflow_runtime.telemetry import inject_trace_context

SECRET_QUESTION = "my card number is 4111-1111"


def workflow(path: Path, base_url: str) -> Path:
    document = {
        "id": "traced", "version": "1.2", "specVersion": "0.8", "start": "Fetch",
        "functions": [
            {"name": "getOrder", "type": "rest", "metadata": {"baseUrl": base_url},
             "operation": {"/orders": {"get": {}}}},
            {"name": "lookup", "type": "custom", "operation": "lookup"},
        ],
        "states": [
            {"name": "Fetch", "type": "operation",
             "actions": [{"functionRef": {"refName": "getOrder"}, "actionDataFilter": {"toStateData": "${ .order }"}}],
             "transition": "Ask"},
            {"name": "Ask", "type": "aiagent", "agentName": "helper", "userMessage": "${ .question }",
             "systemMessage": "You are terse.",
             "tools": [{"name": "lookup", "description": "Look an order up.",
                        "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
                        "execution": {"functionRef": {"refName": "lookup"}}}],
             "agentOutcomes": [{"finish": True}],
             "end": True},
        ],
    }
    target = path / "traced.json"
    target.write_text(json.dumps(document))
    return target


@pytest.fixture
def orders():
    server = RecordingServer().start()
    server.route("GET", "/orders", Reply(200, {"id": 7}))
    yield server
    server.stop()


async def run_traced(tmp_path, orders, scripted_model, collected, headers=None, **options):
    headers = [] if headers is None else headers
    scripted_model.set_script([{"tool_calls": [{"name": "lookup", "arguments": {"id": 7}}]},
                               {"text": "Order 7 shipped."}])

    def lookup(arguments: dict) -> dict:  # sync: runs on a worker thread, in the caller's context
        headers.append(inject_trace_context({"accept": "application/json"}))
        return {"status": "shipped", "id": arguments["id"]}

    async with Runtime(llm=LLMSettings(api_base=scripted_model.api_base), functions={"lookup": lookup},
                       **collected.providers(), **options) as runtime:
        handle = await runtime.start(runtime.load(workflow(tmp_path, orders.url)), {"question": SECRET_QUESTION})
        return await handle.result()


async def test_one_trace_per_instance_with_the_genai_tree(tmp_path, orders, scripted_model):
    collected = Collected()
    output = await run_traced(tmp_path, orders, scripted_model, collected)
    assert output["response"] == "Order 7 shipped."

    root = collected.one("invoke_workflow traced")
    assert root.parent is None and root.kind is SpanKind.INTERNAL
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert root.attributes["gen_ai.workflow.name"] == "traced"
    assert root.attributes["xflow.workflow.version"] == "1.2"
    assert {span.context.trace_id for span in collected.spans} == {root.context.trace_id}

    fetch, ask = collected.one("xflow.state Fetch"), collected.one("xflow.state Ask")
    assert collected.parent_of(fetch) is root and collected.parent_of(ask) is root
    assert ask.attributes["xflow.state.type"] == "aiagent" and fetch.attributes["xflow.state.visit"] == "1:Fetch"

    agent = collected.one("invoke_agent helper")
    assert collected.parent_of(agent) is ask
    assert agent.attributes["gen_ai.agent.name"] == "helper"
    assert agent.attributes["gen_ai.conversation.id"] == root.attributes["xflow.instance.id"]

    chats = collected.named("chat ")
    assert [span.name for span in chats] == ["chat gpt-4o", "chat gpt-4o"]
    for chat in chats:
        assert chat.kind is SpanKind.CLIENT and collected.parent_of(chat) is agent
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.provider.name"] == "openai"
        assert chat.attributes["gen_ai.request.model"] == "gpt-4o"
        assert chat.attributes["gen_ai.response.model"]
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0
        assert chat.attributes["gen_ai.usage.output_tokens"] > 0
        assert chat.attributes["server.address"] == "127.0.0.1"
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert chats[1].attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert agent.attributes["gen_ai.usage.input_tokens"] == sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats)

    tool = collected.one("execute_tool lookup")
    assert collected.parent_of(tool) is agent
    assert tool.attributes["gen_ai.tool.call.id"] and tool.attributes["gen_ai.tool.type"] == "function"
    assert tool.attributes["gen_ai.tool.description"] == "Look an order up."
    assert chats[0].end_time <= tool.start_time <= tool.end_time <= chats[1].start_time


async def test_rest_calls_carry_the_traceparent_of_their_state(tmp_path, orders, scripted_model):
    collected = Collected()
    await run_traced(tmp_path, orders, scripted_model, collected)
    (request,) = orders.only("GET", "/orders")
    version, trace_id, span_id, flags = request.headers["traceparent"].split("-")
    fetch = collected.one("xflow.state Fetch")
    assert version == "00" and int(flags, 16) & 1  # sampled
    assert int(trace_id, 16) == fetch.context.trace_id and int(span_id, 16) == fetch.context.span_id


async def test_metrics_count_tokens_by_type_and_time_each_call(tmp_path, orders, scripted_model):
    collected = Collected()
    await run_traced(tmp_path, orders, scripted_model, collected)
    chats = collected.named("chat ")
    tokens = collected.points("gen_ai.client.token.usage")
    by_type = {point.attributes["gen_ai.token.type"]: point for point in tokens}
    assert set(by_type) == {"input", "output"}
    assert by_type["input"].count == 2
    assert by_type["input"].sum == sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats)
    assert by_type["output"].sum == sum(c.attributes["gen_ai.usage.output_tokens"] for c in chats)
    for point in tokens:
        assert point.attributes["gen_ai.provider.name"] == "openai"
        assert point.attributes["gen_ai.request.model"] == "gpt-4o"
    (duration,) = collected.points("gen_ai.client.operation.duration")
    assert duration.count == 2 and duration.sum > 0


async def test_nothing_sensitive_is_recorded_by_default(tmp_path, orders, scripted_model, monkeypatch):
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    collected = Collected()
    await run_traced(tmp_path, orders, scripted_model, collected)
    for span in collected.spans:
        assert not set(CONTENT_ATTRIBUTES) & set(span.attributes), span.name
        for value in span.attributes.values():
            assert "4111" not in str(value) and "shipped" not in str(value), (span.name, value)


async def test_content_is_recorded_when_enabled_by_the_standard_variable(tmp_path, orders, scripted_model, monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    collected = Collected()
    await run_traced(tmp_path, orders, scripted_model, collected)
    first, second = collected.named("chat ")
    messages = json.loads(first.attributes["gen_ai.input.messages"])
    assert messages == [{"role": "user", "parts": [{"type": "text", "content": SECRET_QUESTION}]}]
    assert json.loads(first.attributes["gen_ai.system_instructions"])[0]["content"].startswith("You are terse.")
    assert json.loads(first.attributes["gen_ai.tool.definitions"])[0]["function"]["name"] == "lookup"
    (call,) = json.loads(first.attributes["gen_ai.output.messages"])[0]["parts"]
    assert call["type"] == "tool_call" and call["name"] == "lookup"
    answer = json.loads(second.attributes["gen_ai.output.messages"])[0]
    assert answer["parts"] == [{"type": "text", "content": "Order 7 shipped."}] and answer["finish_reason"] == "stop"
    tool = collected.one("execute_tool lookup")
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"id": 7}
    assert json.loads(tool.attributes["gen_ai.tool.call.result"]) == {"status": "shipped", "id": 7}


async def test_a_failed_llm_call_and_a_failed_state_are_errors_with_their_code(tmp_path, orders, scripted_model):
    collected = Collected()
    scripted_model.set_script([{"error": {"status": 401, "message": "bad key"}}])
    async with Runtime(llm=LLMSettings(api_base=scripted_model.api_base), functions={"lookup": lambda id: {}},
                       **collected.providers()) as runtime:
        handle = await runtime.start(runtime.load(workflow(tmp_path, orders.url)), {"question": "q"})
        with pytest.raises(Exception):
            await handle.result()
    (chat,) = collected.named("chat ")
    assert chat.status.status_code is StatusCode.ERROR and chat.attributes["error.type"] == "401"
    ask, root = collected.one("xflow.state Ask"), collected.one("invoke_workflow traced")
    assert ask.status.status_code is StatusCode.ERROR and root.status.status_code is StatusCode.ERROR
    assert root.attributes["error.type"] == ask.attributes["error.type"] == "401"
    assert "bad key" not in (chat.status.description or "") + (ask.status.description or "")
    (duration,) = collected.points("gen_ai.client.operation.duration")
    assert duration.attributes["error.type"] == "401"
    assert collected.points("gen_ai.client.token.usage") == []


async def test_protocol_clients_in_a_tool_propagate_its_execute_tool_span(tmp_path, orders, scripted_model):
    """What an MCP or A2A client calls for its headers: inside a tool call, the tool's span."""
    collected, headers = Collected(), []
    await run_traced(tmp_path, orders, scripted_model, collected, headers)
    tool = collected.one("execute_tool lookup")
    (sent,) = headers
    assert sent["accept"] == "application/json"
    assert sent["traceparent"].startswith(f"00-{tool.context.trace_id:032x}-{tool.context.span_id:016x}-")


async def test_graphql_calls_carry_the_traceparent_and_a_workflows_own_is_kept(tmp_path, orders):
    orders.route("POST", "/graphql", Reply(200, {"data": {"pet": {"name": "Rex"}}}))
    document = {
        "id": "pets", "specVersion": "0.8", "start": "Pet",
        "functions": [{"name": "pet", "type": "graphql", "operation": f"{orders.url}/graphql#query#pet"},
                      {"name": "own", "type": "rest", "metadata": {"baseUrl": orders.url},
                       "operation": {"/orders": {"get": {"parameters": [
                           {"name": "traceparent", "in": "header", "required": True}]}}}}],
        "states": [{"name": "Pet", "type": "operation", "actions": [
            {"functionRef": {"refName": "pet", "arguments": {"id": 1}, "selectionSet": "{ name }"}},
            {"functionRef": {"refName": "own", "arguments": {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}}}],
            "end": True}],
    }
    (tmp_path / "pets.json").write_text(json.dumps(document))
    collected = Collected()
    async with Runtime(**collected.providers()) as runtime:
        await (await runtime.start(runtime.load(tmp_path / "pets.json"), {})).result()
    state = collected.one("xflow.state Pet")
    (graphql,) = orders.only("POST", "/graphql")
    assert graphql.headers["traceparent"].startswith(f"00-{state.context.trace_id:032x}-{state.context.span_id:016x}-")
    (own,) = orders.only("GET", "/orders")
    assert own.headers["traceparent"] == "00-" + "1" * 32 + "-" + "2" * 16 + "-01"
