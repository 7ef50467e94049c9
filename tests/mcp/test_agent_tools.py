"""``aiagent`` tools from MCP servers: the names the model sees, the way back, tool errors as tool
messages, one recorded listing per visit."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

pytest.importorskip("mcp")
from hypothesis import given, settings, strategies as st  # noqa: E402

from tests.agent.support import Records, client  # noqa: E402
from tests.mcp.servers import build_server, long_named_tool  # noqa: E402
from tests.mcp.support import STDIO_COMMAND, workflow  # noqa: E402
from xflow_runtime.engine.inprocess import run_workflow  # noqa: E402
from xflow_runtime.errors import DefinitionError  # noqa: E402
from xflow_runtime.mcp.names import assign, model_name  # noqa: E402


VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
LONG = "reports." + "quarterly-" * 10 + "summary"  # 106 characters with a dot

AGENT = """
start: ask
mcpServers:
  - {name: calc, transport: {stdio: {command: unused}}}
  - {name: other.server, transport: {stdio: {command: unused}}, protocol: legacy}
states:
  - name: ask
    type: aiagent
    agentName: helper
    userMessage: '${ .question }'
    tools:
      - mcp: {server: calc, exclude: [environment, favourite, wait_for]}
      - mcp: {server: other.server, include: [add]}
    agentOutcomes:
      - finish: true
        dataFilter: {data: '${ . }', toStateData: '${ .agent }'}
    end: true
"""


def tool_messages(request: Any) -> list[tuple[str, Any]]:
    return [(m["tool_call_id"], json.loads(m["content"])) for m in request.messages if m["role"] == "tool"]


def calc_server() -> Any:
    server = build_server("calc")
    long_named_tool(server, LONG)
    long_named_tool(server, "files/read")
    return server


async def test_the_model_sees_valid_names_and_calls_map_back_exactly(scripted_model) -> None:
    long_name = model_name("calc", LONG)
    scripted_model.set_script([
        {"tool_calls": [{"name": model_name("calc", "math.multiply"),
                         "arguments": {"a": 6, "b": 7}},
                        {"name": long_name, "arguments": {"x": 5}},
                        {"name": "other_server_add", "arguments": {"a": 1, "b": 1}},
                        {"name": "calc_broken", "arguments": {"reason": "the disk is full"}}]},
        {"text": "done"},
    ])
    records = Records()
    plan = workflow(AGENT)
    result = await run_workflow(plan, {"question": "go"}, observer=records, virtual_time=False,
                                services={"llm": client(scripted_model),
                                          "mcp_servers": {"calc": calc_server(), "other.server": build_server()}})
    assert result.status == "completed", result.error
    first, second = scripted_model.chat_requests
    names = first.tool_names
    assert all(VALID.match(name) for name in names), names
    assert "calc_add" in names and "other_server_add" in names and "calc_files_read" not in names
    assert model_name("calc", "files/read") in names and long_name in names and len(long_name) == 64
    assert "calc_environment" not in names and "other_server_echo" not in names
    assert tool_messages(second) == [
        ("call_1_0", {"total": 42}),
        ("call_1_1", {"total": 5}),
        ("call_1_2", {"total": 2}),
        ("call_1_3", {"error": {"code": "MCPToolError", "message": "MCP tool 'broken' of server 'calc' failed: "
                                                                    "Error executing tool broken: the disk is full"}}),
    ]
    assert model_name("calc", "math.multiply").startswith("calc_math_multiply_")
    assert [c["name"] for c in result.output["agent"]["toolCalls"]] == [
        model_name("calc", "math.multiply"), long_name, "other_server_add", "calc_broken"]


async def test_the_listing_is_one_step_per_visit_each_call_one_step_and_connections_close(scripted_model) -> None:
    """The replay of these steps after a crash is tests/mcp/test_crash.py (a real process killed)."""
    from xflow_runtime.engine.inprocess import InProcessEngine

    server = calc_server()
    scripted_model.set_script([{"tool_calls": [{"name": "calc_add", "arguments": {"a": 1, "b": 2}}]},
                               {"text": "three"}])
    engine = InProcessEngine()
    steps: list[str] = []
    real_run_step = engine.run_step

    async def run_step(name: str, fn: Any) -> Any:
        steps.append(name)
        return await real_run_step(name, fn)

    engine.run_step = run_step  # observe the step names only; every step still runs for real
    from xflow_runtime.interpreter.context import ExecutionContext
    from xflow_runtime.interpreter.execute import execute
    from xflow_runtime.interpreter.services import InstanceServices

    plan = workflow(AGENT.replace("      - mcp: {server: other.server, include: [add]}\n", ""))
    context = ExecutionContext(services=InstanceServices.of({"llm": client(scripted_model),
                                                             "mcp_servers": {"calc": server}}))
    try:
        result = await execute(plan, {"question": "1+2?"}, port=engine, context=context)
    finally:
        from xflow_runtime.mcp.connections import close_instance_connections

        await close_instance_connections(context.services)
    assert result.status == "completed", result.error
    listing = [s for s in steps if "/mcp-tools:" in s]
    calls = [s for s in steps if "/tool:" in s]
    assert len(listing) == 1 and listing[0].endswith("/mcp-tools:calc")
    assert calls == [calls[0]] and calls[0].endswith(":calc_add")
    assert context.services.mcp.value is None  # closed with the instance


def test_colliding_prefixes_are_rejected_at_load_time() -> None:
    with pytest.raises(DefinitionError, match="prefix 'a_b'"):
        workflow(AGENT.replace("other.server", "calc2"), mcpServers=[
            {"name": "a.b", "transport": {"stdio": {"command": "x"}}},
            {"name": "a_b", "transport": {"stdio": {"command": "x"}}}])


def test_an_included_tool_that_collides_with_a_named_tool_is_rejected_at_load_time() -> None:
    text = AGENT.replace("      - mcp: {server: other.server, include: [add]}\n",
                         "      - mcp: {server: other.server, include: [add]}\n"
                         "      - {name: other_server_add, execution: {mcp: {server: calc, tool: add}}}\n")
    # the named tool wins the plain name; the included one is mapped to a hashed name instead
    plan = workflow(text)
    assert [t.name for t in plan.states["ask"].tools] == ["other_server_add"]


def test_an_unknown_server_or_a_bad_prefix_is_a_clear_load_error() -> None:
    with pytest.raises(DefinitionError, match="MCP server 'nowhere' is not defined in mcpServers"):
        workflow(AGENT.replace("server: calc,", "server: nowhere,"))
    with pytest.raises(DefinitionError, match="toolPrefix"):
        workflow(AGENT, mcpServers=[{"name": "calc", "toolPrefix": "has.dot", "transport": {"stdio": {"command": "x"}}}])
    with pytest.raises(DefinitionError, match="'<mcpServer>#<tool>'"):
        workflow(AGENT, functions=[{"name": "f", "type": "mcp", "operation": "calc"}])
    with pytest.raises(DefinitionError, match="MCP server 'ghost' is not defined"):
        workflow(AGENT, functions=[{"name": "f", "type": "mcp", "operation": "ghost#add"}])
    with pytest.raises(DefinitionError, match="exactly one of 'stdio' or 'http'"):
        workflow(AGENT, mcpServers=[{"name": "calc", "transport": {"stdio": {"command": "x"},
                                                                   "http": {"endpoint": "http://h"}}}])


names_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=140)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["one", "two", "a.b"]), names_text), min_size=1, max_size=12, unique=True),
       st.lists(st.from_regex(VALID, fullmatch=True), max_size=3))
def test_names_are_valid_distinct_and_map_back(tools: list[tuple[str, str]], taken: list[str]) -> None:
    prefixes = {"one": "one", "two": "", "a.b": "a_b"}
    mapping = assign([(server, prefixes[server], tool) for server, tool in tools], taken=taken)
    assert sorted(mapping.values()) == sorted(tools)  # every tool, exactly once, maps back
    assert all(VALID.match(name) for name in mapping)
    assert not set(mapping) & set(taken)


def test_a_stdio_server_sees_only_the_allowed_environment(monkeypatch) -> None:
    import asyncio

    monkeypatch.setenv("XFLOW_SECRET_FOR_NOBODY", "do-not-leak")
    monkeypatch.setenv("XFLOW_ALLOWED_NAME", "inherited")
    plan = workflow("""
start: S
mcpServers:
  - name: env
    transport:
      stdio:
        command: python3
        arguments: [-m, tests.mcp.servers]
        cwd: CWD
        environment: {GIVEN: '${ $SECRETS.given }', PYTHONPATH: PYPATH}
        inheritEnvironment: [XFLOW_ALLOWED_NAME, NOT_SET_ANYWHERE]
functions:
  - {name: environment, type: mcp, operation: 'env#environment'}
states:
  - {name: S, type: operation, actions: [{functionRef: environment}], end: true}
""".replace("CWD", STDIO_COMMAND["cwd"]).replace("PYPATH", STDIO_COMMAND["cwd"]), secrets=["given"])
    result = asyncio.run(run_workflow(plan, {}, secrets={"given": "from-secrets"}, virtual_time=False))
    assert result.status == "completed", result.error
    names = set(result.output["names"])
    assert {"GIVEN", "PYTHONPATH", "XFLOW_ALLOWED_NAME"} <= names
    # not even the SDK's base set (HOME, PATH, USER …): only what the definition allows
    assert names - {"GIVEN", "PYTHONPATH", "XFLOW_ALLOWED_NAME"} <= {"LC_CTYPE"}  # set by Python itself
    assert "XFLOW_SECRET_FOR_NOBODY" not in names
