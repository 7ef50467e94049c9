"""``xflow serve --mcp``: the official ``mcp`` client (both protocol eras) against a real server
process: exposed workflows as tools, structured output, a run handle and the status tool, the
service's authentication."""

from __future__ import annotations

import asyncio
from typing import Any, Iterator

import httpx
import pytest

from tests.service.support import ServiceProcess, assert_problem, jwt_token

pytest.importorskip("mcp")

DOUBLE = """
id: double
version: '1.0'
specVersion: '0.8'
description: Doubles a number.
metadata: {xflow.mcp.expose: 'true'}
dataInputSchema:
  failOnValidationErrors: true
  schema: {type: object, required: [n], properties: {n: {type: integer}}}
start: S
states:
  - {name: S, type: inject, data: {}, stateDataFilter: {output: '${ {doubled: (.n * 2), by: "double"} }'}, end: true}
"""
SLOW = """
id: slow
version: '1.0'
specVersion: '0.8'
description: Takes a few seconds.
metadata: {xflow.mcp.expose: 'true'}
start: Wait
states:
  - {name: Wait, type: sleep, duration: PT4S, transition: Done}
  - {name: Done, type: inject, data: {slept: true}, end: true}
"""
HIDDEN = """
id: hidden
version: '1.0'
specVersion: '0.8'
start: S
states:
  - {name: S, type: inject, data: {secret: true}, end: true}
"""


ASK = """
id: ask
version: '1.0'
specVersion: '0.8'
start: ask
mcpServers:
  - {name: prefs, transport: {http: {endpoint: 'ENDPOINT'}}, protocol: '2026-07-28'}
states:
  - name: ask
    type: aiagent
    agentName: helper
    userMessage: '${ .message }'
    tools:
      - mcp: {server: prefs, include: [favourite]}
    agentOutcomes:
      - finish: true
        dataFilter: {data: '${ {colour: .toolCalls[0].result.colour} }', toStateData: '${ .answer }'}
    end: true
"""


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[Any]:
    from tests.mcp.support import HttpMcpServer

    with HttpMcpServer() as server:  # an MCP server the service's agents use (elicitation)
        yield server


@pytest.fixture(scope="module")
def model() -> Iterator[Any]:
    from xflow_runtime.testing import ScriptedModelServer

    with ScriptedModelServer([{"tool_calls": [{"name": "prefs_favourite", "arguments": {}}]},
                              {"text": "noted"}]) as server:
        yield server


@pytest.fixture(scope="module")
def mcp_service(tmp_path_factory: pytest.TempPathFactory, mcp_server: Any, model: Any) -> Iterator[ServiceProcess]:
    root = tmp_path_factory.mktemp("mcp-serve")
    workflows = root / "workflows"
    workflows.mkdir()
    for name, text in (("double", DOUBLE), ("slow", SLOW), ("hidden", HIDDEN),
                       ("ask", ASK.replace("ENDPOINT", mcp_server.url))):
        (workflows / f"{name}.yaml").write_text(text)
    process = ServiceProcess(workflows, f"sqlite:///{root / 'store' / 'xflow.sqlite'}", auth="jwt",
                             llm_api_base=model.api_base, extra=["--mcp", "--mcp-wait", "1"]).start()
    yield process
    process.stop()


def connect(service: ServiceProcess, era: str, token: str) -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    return Client(streamable_http_client(f"{service.url}/mcp", http_client=http), mode=era)


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_the_official_client_lists_and_calls_exposed_workflows(mcp_service: ServiceProcess, era: str) -> None:
    async def scenario() -> None:
        async with connect(mcp_service, era, jwt_token("a", "ann")) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == {"double", "slow", "get_workflow_run"}  # hidden is not exposed
            assert tools["double"].description == "Doubles a number."
            assert tools["double"].input_schema["required"] == ["n"]

            result = await client.call_tool("double", {"n": 21})
            assert not result.is_error
            assert result.structured_content == {"doubled": 42, "by": "double"}

            bad = await client.call_tool("double", {"n": "x"})
            assert bad.is_error and "input schema" in bad.content[0].text

            handle = await client.call_tool("slow", {})
            assert not handle.is_error
            run_id = handle.structured_content["runId"]
            assert handle.structured_content["status"] == "running"
            for _ in range(120):
                status = await client.call_tool("get_workflow_run", {"runId": run_id})
                if status.structured_content["status"] == "completed":
                    break
                await asyncio.sleep(0.25)
            assert status.structured_content == {"runId": run_id, "status": "completed", "output": {"slept": True}}

        # another tenant cannot read the run
        async with connect(mcp_service, era, jwt_token("b", "bob")) as other:
            refused = await other.call_tool("get_workflow_run", {"runId": run_id})
            assert refused.is_error and f"no run {run_id}" in refused.content[0].text

    asyncio.run(scenario())


def test_mcp_requests_need_a_credential(mcp_service: ServiceProcess) -> None:
    response = httpx.post(f"{mcp_service.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={"Accept": "application/json, text/event-stream"}, timeout=30)
    assert_problem(response, 401)


def test_an_elicitation_is_answered_through_the_chat_endpoint(mcp_service: ServiceProcess) -> None:
    headers = {"Authorization": f"Bearer {jwt_token('a', 'ann')}"}
    with httpx.Client(base_url=mcp_service.url, timeout=90, headers=headers) as http:
        started = http.post("/v1/workflows/ask/instances", json={"message": "pick a colour"},
                            headers={"Prefer": "wait=30"})
        assert started.status_code == 201, started.text
        body = started.json()
        assert body["status"] == "waiting" and body["waiting_for"] == "message", body
        answered = http.post(f"/v1/instances/{body['id']}/messages", json={"text": "teal"})
        assert answered.status_code == 200, answered.text
        assert answered.json()["status"] == "completed"
        assert answered.json()["output"]["answer"] == {"colour": "teal"}
