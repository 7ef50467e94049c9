"""``type: mcp`` functions against the real test server in-process, as a stdio subprocess and over
Streamable HTTP on 127.0.0.1, in both protocol eras; results, tool errors, retries, onErrors."""

from __future__ import annotations

import os
from typing import Any

import pytest

pytest.importorskip("mcp")

from tests.mcp.servers import build_server  # noqa: E402
from tests.mcp.support import ERAS, STDIO_COMMAND, HttpMcpServer, workflow  # noqa: E402
from xflow_runtime.engine.inprocess import run_workflow  # noqa: E402


CALLS = """
start: S
functions:
  - {name: add, type: mcp, operation: 'calc#add'}
  - {name: mul, type: mcp, operation: 'calc#math.multiply'}
  - {name: echo, type: mcp, operation: 'calc#echo'}
states:
  - name: S
    type: operation
    actions:
      - functionRef: {refName: add, arguments: {a: '${ .a }', b: 3}}
        actionDataFilter: {toStateData: '${ .sum }'}
      - functionRef: {refName: mul, arguments: {a: '${ .a }', b: 3}}
        actionDataFilter: {toStateData: '${ .product }'}
      - functionRef: {refName: echo, arguments: {text: '{"not": "parsed twice"}'}}
        actionDataFilter: {toStateData: '${ .echoed }'}
    end: true
"""

EXPECTED = {"a": 2, "sum": {"total": 5}, "product": {"total": 6}, "echoed": {"result": '{"not": "parsed twice"}'}}


def servers(transport: dict[str, Any], era: str) -> list[dict[str, Any]]:
    return [{"name": "calc", "transport": transport, "protocol": era, "timeout": "PT20S"}]


@pytest.mark.parametrize("era", ERAS)
async def test_in_process_server_in_both_eras(era: str) -> None:
    plan = workflow(CALLS, mcpServers=servers({"stdio": {"command": "unused"}}, era))
    result = await run_workflow(plan, {"a": 2}, services={"mcp_servers": {"calc": build_server()}},
                                virtual_time=False)
    assert result.status == "completed", result.error
    assert result.output == EXPECTED


@pytest.mark.parametrize("era", ERAS)
async def test_stdio_server_in_both_eras(era: str) -> None:
    plan = workflow(CALLS, mcpServers=servers({"stdio": STDIO_COMMAND}, era))
    result = await run_workflow(plan, {"a": 2}, virtual_time=False)
    assert result.status == "completed", result.error
    assert result.output == EXPECTED


@pytest.mark.parametrize("era", ERAS)
async def test_http_server_in_both_eras_with_a_bearer_secret(era: str) -> None:
    with HttpMcpServer(token="s3cret-token") as server:
        plan = workflow(CALLS, mcpServers=[{**servers({"http": {"endpoint": server.url}}, era)[0],
                                            "authRef": "mcp-token"}],
                        auth=[{"name": "mcp-token", "scheme": "bearer",
                               "properties": {"token": "${ $SECRETS.mcpToken }"}}],
                        secrets=["mcpToken"])
        result = await run_workflow(plan, {"a": 2}, secrets={"mcpToken": "s3cret-token"}, virtual_time=False)
        assert result.status == "completed", result.error
        assert result.output == EXPECTED
        assert server.guard.seen and set(server.guard.seen) == {"Bearer s3cret-token"}

        refused = await run_workflow(plan, {"a": 2}, secrets={"mcpToken": "wrong-token"}, virtual_time=False)
        assert refused.status == "failed"
        assert refused.error["code"] == "MCPUnauthorized"
        assert "wrong-token" not in str(refused.error)


async def test_http_headers_come_from_expressions_over_secrets() -> None:
    with HttpMcpServer(token="from-a-header") as server:
        plan = workflow(CALLS, mcpServers=[{"name": "calc", "transport": {"http": {
            "endpoint": server.url, "headers": {"Authorization": "${ \"Bearer \" + $SECRETS.raw }"}}}}],
            secrets=["raw"])
        result = await run_workflow(plan, {"a": 2}, secrets={"raw": "from-a-header"}, virtual_time=False)
        assert result.status == "completed", result.error


ERRORS = """
start: S
errors:
  - {name: toolFailed, code: MCPToolError}
  - {name: down, code: MCPUnavailable}
  - {name: late, code: MCPTimeout}
functions:
  - {name: call, type: mcp, operation: 'calc#${TOOL}'}
retries:
  - {name: twice, maxAttempts: 2, delay: PT0.01S}
states:
  - name: S
    type: operation
    actions:
      - functionRef: {refName: call, arguments: ${ARGS}}
        retryRef: twice
    onErrors:
      - {errorRef: toolFailed, transition: Failed}
      - {errorRef: down, transition: Failed}
      - {errorRef: late, transition: Failed}
    end: true
  - name: Failed
    type: inject
    data: {handled: true}
    end: true
"""


def errors_plan(tool: str, arguments: str, transport: dict[str, Any], timeout: str = "PT20S") -> Any:
    text = ERRORS.replace("${TOOL}", tool).replace("${ARGS}", arguments)
    return workflow(text, mcpServers=[{"name": "calc", "transport": transport, "timeout": timeout}])


async def test_a_tool_error_reaches_on_errors_after_the_retries(tmp_path) -> None:
    records: list[dict[str, Any]] = []
    plan = errors_plan("broken", "{reason: nope}", {"stdio": STDIO_COMMAND})
    result = await run_workflow(plan, {}, observer=records.append, virtual_time=False)
    assert result.status == "completed", result.error
    assert result.output == {"handled": True}
    retried = [r for r in records if r["event"] == "action_retry"]
    assert len(retried) == 1 and retried[0]["error"]["code"] == "MCPToolError"
    assert "nope" in retried[0]["error"]["message"]


async def test_an_unreachable_server_is_mcp_unavailable() -> None:
    from tests.mcp.support import free_port

    plan = errors_plan("add", "{a: 1, b: 2}", {"http": {"endpoint": f"http://127.0.0.1:{free_port()}/mcp"}})
    records: list[dict[str, Any]] = []
    result = await run_workflow(plan, {}, observer=records.append, virtual_time=False)
    assert result.output == {"handled": True}
    assert [r["error"]["code"] for r in records if r["event"] == "action_retry"] == ["MCPUnavailable"]


async def test_a_command_that_does_not_exist_is_mcp_unavailable() -> None:
    plan = errors_plan("add", "{a: 1, b: 2}", {"stdio": {"command": "/nonexistent/mcp-server"}})
    result = await run_workflow(plan, {}, virtual_time=False)
    assert result.output == {"handled": True}


LATE = """
start: S
errors:
  - {name: late, code: MCPTimeout}
functions:
  - {name: slow, type: mcp, operation: 'calc#slow'}
states:
  - name: S
    type: operation
    actions:
      - functionRef: {refName: slow, arguments: {seconds: 2, tag: late}}
    onErrors:
      - {errorRef: late, transition: Linger}
    end: true
  - name: Linger            # the connection stays open while the cancelled handler would finish
    type: sleep
    duration: PT4S
    end: true
"""


@pytest.mark.parametrize("era", ERAS)
async def test_a_late_call_times_out_and_is_cancelled(era: str, tmp_path) -> None:
    log = tmp_path / "calls.log"
    os.environ["XFLOW_MCP_CALL_LOG"] = str(log)  # the in-process server logs here
    try:
        records: list[dict[str, Any]] = []
        plan = workflow(LATE, mcpServers=[{"name": "calc", "transport": {"stdio": {"command": "unused"}},
                                           "protocol": era, "timeout": "PT0.5S"}])
        result = await run_workflow(plan, {}, observer=records.append, virtual_time=False,
                                    services={"mcp_servers": {"calc": build_server()}})
    finally:
        del os.environ["XFLOW_MCP_CALL_LOG"]
    assert result.status == "completed", result.error
    assert any(r.get("state") == "Linger" for r in records)  # onErrors matched MCPTimeout
    lines = log.read_text().splitlines()
    # started, never finished although the connection stayed open 4 s more: the request was cancelled
    assert lines == ["start slow late"]

def test_a_virtual_time_run_waits_for_the_real_server() -> None:
    """run_workflow_sync jumps over idle time; an MCP call is real work and is never overtaken."""
    from xflow_runtime.engine.inprocess import run_workflow_sync

    plan = workflow(CALLS, mcpServers=servers({"stdio": STDIO_COMMAND}, "legacy"))
    result = run_workflow_sync(plan, {"a": 2})
    assert result.status == "completed", result.error
    assert result.output == EXPECTED


async def test_http_with_oauth2_client_credentials() -> None:
    from tests.functions.server import RecordingServer, Reply

    tokens = RecordingServer().start()
    try:
        tokens.route("POST", "/oauth/token", Reply(200, {"access_token": "issued-token-42", "token_type": "Bearer",
                                                         "expires_in": 3600}))
        with HttpMcpServer(token="issued-token-42") as server:
            plan = workflow(CALLS, mcpServers=[{"name": "calc", "authRef": "oauth",
                                                "transport": {"http": {"endpoint": server.url}}}],
                            auth=[{"name": "oauth", "scheme": "oauth2", "properties": {
                                "authority": tokens.url + "/oauth/token", "grantType": "clientCredentials",
                                "clientId": "xflow", "clientSecret": "${ $SECRETS.clientSecret }"}}],
                            secrets=["clientSecret"])
            result = await run_workflow(plan, {"a": 2}, secrets={"clientSecret": "client-secret-value"},
                                        virtual_time=False)
            assert result.status == "completed", result.error
            assert result.output == EXPECTED
        assert len(tokens.only("POST", "/oauth/token")) == 1  # one token for the instance's connection
        assert tokens.only("POST", "/oauth/token")[0].form()["grant_type"] == ["client_credentials"]
    finally:
        tokens.stop()


async def test_a_server_that_dies_is_unavailable_and_the_retry_starts_it_again(tmp_path) -> None:
    plan = errors_plan("die_once", f"{{marker: '{tmp_path / 'died'}'}}", {"stdio": STDIO_COMMAND})
    records: list[dict[str, Any]] = []
    result = await run_workflow(plan, {}, observer=records.append, virtual_time=False)
    assert result.status == "completed", result.error
    assert result.output == {"total": 1}  # the second attempt reached a new server process
    assert [r["error"]["code"] for r in records if r["event"] == "action_retry"] == ["MCPUnavailable"]
