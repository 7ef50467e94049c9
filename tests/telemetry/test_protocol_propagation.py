"""Trace context reaches MCP servers (``params._meta``) and A2A agents (HTTP headers), and their
calls are spans of the instance's trace (specs/observability.md §6): an ``aiagent``'s MCP tool
call annotates its ``execute_tool`` span, a ``type: mcp`` function gets a CLIENT span
``tools/call {tool}``, an ``aiagentproxy`` to an A2A agent a CLIENT span ``invoke_agent {agent}``.
Real servers: the MCP test server in-process and over Streamable HTTP on 127.0.0.1, the
``a2a-sdk`` test agent as a process. Calls answered from a durable recording emit no such span."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
pytest.importorskip("a2a.client")

from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

from tests.a2a.support import AgentProcess  # noqa: E402
from tests.mcp.support import REPO, HttpMcpServer  # noqa: E402
from tests.telemetry.mcp_trace_server import traced_server  # noqa: E402
from tests.telemetry.support import Collected, waiting_for_its_event  # noqa: E402
from xflow_runtime import Runtime  # noqa: E402
from xflow_runtime.llm import LLMSettings  # noqa: E402

TRANSPORTS = ("in-process", "http")


class Seen(list):
    """The ``_meta`` of every ``traced`` call the server answered."""

    def traceparents(self) -> list[str | None]:
        return [meta.get("traceparent") for meta in self]


@pytest.fixture
def seen() -> Seen:
    return Seen()


@pytest.fixture
def http_calc(seen: Seen) -> Iterator[HttpMcpServer]:
    with HttpMcpServer(server=traced_server(seen)) as server:
        yield server


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentProcess]:
    process = AgentProcess(tmp_path_factory.mktemp("a2a") / "calls.jsonl").start()
    yield process
    process.stop()


def names_trace_and_parent(traceparent: str | None, span: Any) -> bool:
    return traceparent is not None and traceparent.startswith(
        f"00-{span.context.trace_id:032x}-{span.context.span_id:016x}-")


def mcp_server(transport: str, http_calc: HttpMcpServer | None) -> dict[str, Any]:
    if transport == "http":
        return {"name": "calc", "transport": {"http": {"endpoint": http_calc.url}}, "timeout": "PT20S"}
    return {"name": "calc", "transport": {"stdio": {"command": "unused"}}, "timeout": "PT20S"}


async def run_traced(document: dict[str, Any], transport: str, seen: Seen, collected: Collected | None,
                     tmp_path: Path, scripted_model: Any = None, input: Any = None) -> Any:
    """One instance: through ``Runtime`` (HTTP), or, for the in-process server (a Python object
    that only the interpreter's services can carry), through the interpreter with the same
    telemetry object a Runtime gives it."""
    settings = LLMSettings(api_base=scripted_model.api_base) if scripted_model is not None else None
    if transport != "in-process":
        path = tmp_path / f"{document['id']}.json"
        path.write_text(json.dumps(document))
        options = {} if collected is None else collected.providers()
        async with Runtime(llm=settings, **options) as runtime:
            return await (await runtime.start(runtime.load(path), input or {})).result(timeout=60)
    from xflow_runtime.engine.inprocess import InProcessEngine
    from xflow_runtime.interpreter.context import ExecutionContext
    from xflow_runtime.interpreter.execute import execute
    from xflow_runtime.interpreter.services import InstanceServices
    from xflow_runtime.mcp.connections import close_instance_connections
    from xflow_runtime.plan import compile_plan
    from xflow_runtime.telemetry.spans import Telemetry

    assert collected is not None
    plan = compile_plan(document)
    telemetry = Telemetry(collected.tracer_provider, collected.meter_provider)
    services = {"mcp_servers": {"calc": traced_server(seen)}}
    if settings is not None:
        from xflow_runtime.llm import LLMClient

        services["llm"] = LLMClient(settings)
    context = ExecutionContext(services=InstanceServices.of(services), telemetry=telemetry, instance_id="traced-1")
    try:
        with telemetry.workflow(plan.workflow_id, None, "traced-1"):
            result = await execute(plan, input or {}, port=InProcessEngine(), context=context)
    finally:
        await close_instance_connections(context.services)
    assert result.status == "completed", result.error
    return result.output


AGENT = {
    "id": "mcp-agent", "specVersion": "0.8", "start": "Ask",
    "states": [{"name": "Ask", "type": "aiagent", "agentName": "helper", "userMessage": "go",
                "tools": [{"mcp": {"server": "calc", "include": ["traced"]}}],
                "agentOutcomes": [{"finish": True}], "end": True}],
}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_agents_mcp_tool_call_carries_and_annotates_its_execute_tool_span(
        transport, seen, http_calc, scripted_model, tmp_path) -> None:
    scripted_model.set_script([{"tool_calls": [{"name": "calc_traced", "arguments": {}}]}, {"text": "done"}])
    collected = Collected()
    document = {**AGENT, "mcpServers": [mcp_server(transport, http_calc)]}
    output = await run_traced(document, transport, seen, collected, tmp_path, scripted_model)
    assert output["response"] == "done"

    root, tool = collected.one("invoke_workflow mcp-agent"), collected.one("execute_tool calc_traced")
    (traceparent,) = seen.traceparents()
    assert names_trace_and_parent(traceparent, tool)
    assert tool.context.trace_id == root.context.trace_id
    # the conventions: the MCP attributes on the execute_tool span that covers the call, no second span
    assert collected.named("tools/call") == []
    attributes = tool.attributes
    assert attributes["gen_ai.tool.name"] == "calc_traced"  # the name the model called
    assert attributes["mcp.method.name"] == "tools/call" and attributes["xflow.mcp.tool"] == "traced"
    assert attributes["xflow.mcp.server"] == "calc" and attributes["mcp.protocol.version"]
    if transport == "http":
        assert attributes["network.transport"] == "tcp"
        assert attributes["server.address"] == "127.0.0.1" and attributes["server.port"] == http_calc.port
    else:
        assert "network.transport" not in attributes and "server.address" not in attributes
    # the visit's tools/list: a CLIENT span of its own, under the visit
    listing = collected.one("tools/list")
    assert listing.kind is SpanKind.CLIENT and listing.attributes["mcp.method.name"] == "tools/list"
    assert collected.parent_of(listing) is collected.one("xflow.state Ask")


FUNCTIONS = {
    "id": "mcp-functions", "specVersion": "0.8", "start": "S",
    "functions": [{"name": "traced", "type": "mcp", "operation": "calc#traced"},
                  {"name": "broken", "type": "mcp", "operation": "calc#broken"}],
    "states": [{"name": "S", "type": "operation",
                "actions": [{"functionRef": {"refName": "traced"}, "actionDataFilter": {"toStateData": "${ .traced }"}},
                            {"functionRef": {"refName": "broken"}}],
                "onErrors": [{"errorRef": "toolFailed", "transition": "Handled"}], "end": True},
               {"name": "Handled", "type": "inject", "data": {"handled": True}, "end": True}],
    "errors": [{"name": "toolFailed", "code": "MCPToolError"}],
}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_mcp_function_is_a_client_span_under_its_state_and_names_it_to_the_server(
        transport, seen, http_calc, tmp_path) -> None:
    collected = Collected()
    document = {**FUNCTIONS, "mcpServers": [mcp_server(transport, http_calc)]}
    output = await run_traced(document, transport, seen, collected, tmp_path)
    (traceparent,) = seen.traceparents()
    assert output == {"traced": {"result": traceparent}, "handled": True}

    state = collected.one("xflow.state S")
    call = collected.one("tools/call traced")
    assert call.kind is SpanKind.CLIENT and collected.parent_of(call) is state
    assert names_trace_and_parent(traceparent, call)
    assert call.attributes["mcp.method.name"] == "tools/call"
    assert call.attributes["gen_ai.operation.name"] == "execute_tool" and call.attributes["gen_ai.tool.name"] == "traced"
    assert call.attributes["mcp.protocol.version"]
    assert (call.attributes.get("network.transport") == "tcp") == (transport == "http")
    failed = collected.one("tools/call broken")
    assert failed.status.status_code is StatusCode.ERROR and failed.attributes["error.type"] == "tool_error"
    assert call.status.status_code is not StatusCode.ERROR


async def test_a_stdio_servers_client_span_is_a_pipe_and_reaches_the_subprocess(tmp_path) -> None:
    collected = Collected()
    stdio = {"command": sys.executable, "arguments": ["-m", "tests.telemetry.mcp_trace_server"], "cwd": str(REPO)}
    document = {**FUNCTIONS, "mcpServers": [{"name": "calc", "transport": {"stdio": stdio}, "timeout": "PT30S"}]}
    output = await run_traced(document, "runtime", Seen(), collected, tmp_path)
    call = collected.one("tools/call traced")
    assert names_trace_and_parent(output["traced"]["result"], call)  # what the subprocess received
    assert call.attributes["network.transport"] == "pipe" and "server.address" not in call.attributes
    assert collected.parent_of(call) is collected.one("xflow.state S")


async def test_without_a_tracer_provider_no_traceparent_is_sent(seen, http_calc, agent, tmp_path) -> None:
    document = {**FUNCTIONS, "mcpServers": [mcp_server("http", http_calc)]}
    output = await run_traced(document, "http", seen, None, tmp_path)
    assert output == {"traced": {"result": "none"}, "handled": True}
    (meta,) = seen
    assert "traceparent" not in meta and "tracestate" not in meta
    assert meta["dev.xflow-runtime/instanceId"]  # the request did carry our _meta

    await run_traced(proxy_document(agent, "untraced"), "http", seen, None, tmp_path, input={"request": "echo plain"})
    calls = [call for call in agent.calls() if call["text"] == "echo plain"]
    assert calls and all(call["traceparent"] is None for call in calls)


def proxy_document(agent: AgentProcess, workflow_id: str, *, then: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    states = [{"name": "Ask", "type": "aiagentproxy", "agentName": "ledger", "userMessage": "${ .request }",
               "execution": {"functionRef": "ledger", "mode": "blocking"},
               "agentOutcomes": [{"dataFilter": {"data": "${ {answer: .returnValues, status: .status} }"},
                                  "transition": then[0]["name"] if then else "Done"}]}]
    return {"id": workflow_id, "specVersion": "0.8", "start": "Ask",
            "functions": [{"name": "ledger", "type": "a2a", "operation": f"{agent.url}/.well-known/agent-card.json"}],
            "states": states + (then or [{"name": "Done", "type": "inject", "data": {}, "end": True}])}


async def test_an_aiagentproxy_to_an_a2a_agent_is_an_invoke_agent_client_span(agent, seen, tmp_path) -> None:
    collected = Collected()
    output = await run_traced(proxy_document(agent, "a2a-traced"), "http", seen, collected, tmp_path,
                              input={"request": "echo traced"})
    assert output["status"] == "completed" and output["answer"]["answer"] == "traced"

    state, remote = collected.one("xflow.state Ask"), collected.one("invoke_agent ledger")
    assert remote.kind is SpanKind.CLIENT and collected.parent_of(remote) is state
    assert remote.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert remote.attributes["gen_ai.agent.name"] == "ledger"
    assert remote.attributes["server.address"] == "127.0.0.1" and remote.attributes["server.port"] == agent.port
    assert remote.attributes["a2a.task.state"] == "completed" and remote.attributes["a2a.task.id"]
    calls = [call for call in agent.calls() if call["text"] == "echo traced"]
    assert calls and all(names_trace_and_parent(call["traceparent"], remote) for call in calls)
    assert {span.context.trace_id for span in collected.spans} == {remote.context.trace_id}


async def test_calls_answered_from_the_recording_emit_no_protocol_spans(agent, seen, http_calc, tmp_path) -> None:
    """A durable instance calls the MCP server and the A2A agent, then waits for an event; the
    runtime closes, the next one resumes it. Its replay answers both calls from history: no
    ``tools/call`` or ``invoke_agent`` span, no new request, and what it does live is traced."""
    wait = [{"name": "Wait", "type": "event", "onEvents": [{"eventRefs": ["Approved"]}], "transition": "Done"},
            {"name": "Done", "type": "inject", "data": {"done": True}, "end": True}]
    document = proxy_document(agent, "replayed", then=wait)
    document["start"] = "Call"
    document["functions"].append({"name": "traced", "type": "mcp", "operation": "calc#traced"})
    document["mcpServers"] = [mcp_server("http", http_calc)]
    document["events"] = [{"name": "Approved", "type": "approved", "source": "/t"}]
    document["states"].insert(0, {"name": "Call", "type": "operation", "transition": "Ask", "actions": [
        {"functionRef": {"refName": "traced"}, "actionDataFilter": {"toStateData": "${ .traced }"}}]})
    path = tmp_path / "replayed.json"
    path.write_text(json.dumps(document))
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    before, after = Collected(), Collected()

    first = Runtime("durable", database_url=url, **before.providers())
    await first.start(first.load(path), {"request": "echo once"}, instance_id="replay-1")
    await waiting_for_its_event("replay-1")
    await first.close()
    live_call, live_agent = before.one("tools/call traced"), before.one("invoke_agent ledger")
    assert names_trace_and_parent(seen.traceparents()[0], live_call)

    async with Runtime("durable", database_url=url, **after.providers()) as second:
        await second.send_event({"type": "approved", "source": "/t", "data": {}}, instance_id="replay-1")
        output = await second.instance("replay-1").result(timeout=60)
    assert output["done"] is True and output["traced"] == {"result": seen.traceparents()[0]} and output["answer"]["answer"] == "once"
    assert len(seen) == 1 and len([c for c in agent.calls() if c["text"] == "echo once" and
                                   c["event"] == "completed"]) == 1
    assert after.named("tools/") == [] and after.named("invoke_agent") == []
    assert after.named("xflow.state Call") == [] and after.named("xflow.state Ask") == []
    assert after.one("invoke_workflow replayed").context.trace_id == live_agent.context.trace_id


def test_with_a_global_sdk_provider_the_mcp_sdks_own_client_span_nests_under_ours() -> None:
    """The ``mcp`` SDK records a CLIENT span ``MCP send …`` per request (with a global provider)
    and puts itself in ``_meta.traceparent``: it is a child of our span, the server's a child of
    it — one tree (its own process: a global provider is set once per process)."""
    import os
    import subprocess

    done = subprocess.run([sys.executable, "-m", "tests.telemetry.global_sdk_process"], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    *spans, received = lines
    by_id = {span["id"]: span for span in spans}
    ours = next(s for s in spans if s["name"] == "tools/call traced" and s["kind"] == "CLIENT")
    sent = next(s for s in spans if s["name"] == "MCP send tools/call traced")
    assert sent["kind"] == "CLIENT" and by_id[sent["parent"]] is ours
    assert by_id[ours["parent"]]["name"] == "xflow.state S"
    (traceparent,) = received["received"]
    assert traceparent.split("-")[2] == sent["id"]
