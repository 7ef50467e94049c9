"""``tools/list`` and ``tools/call`` for one instance, with every failure turned into a documented
error code (specs/mcp.md, "Errors"), and a ``tools/call`` result turned into workflow data:

- ``structuredContent`` (the SDK checks it against the tool's ``outputSchema``) is the result;
- else one text block: its JSON when it parses, else the text;
- else ``{"content": [...]}`` (the blocks as the server sent them).

``isError: true`` raises :data:`~xflow_runtime.mcp.TOOL_ERROR` with the text the server gave;
an ``aiagent`` reports it to the model as the tool message, an action lets ``onErrors`` and
``retries`` see it.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from xflow_runtime.errors import WorkflowError
from xflow_runtime.interpreter.state_run import StateRun
from xflow_runtime.mcp import (INPUT_REQUIRED, OUTPUT_INVALID, PROTOCOL_ERROR, TIMEOUT, TOOL_ERROR, UNAUTHORIZED,
                               UNAVAILABLE)
from xflow_runtime.mcp.config import McpServerDef, split_operation
from xflow_runtime.mcp.connections import HARD_BOUND_SLACK, connections_for, unavailable
from xflow_runtime.mcp.tracing import connection_attributes, outgoing_meta, request_attributes

#: JSON-RPC codes the SDK uses for its own failures (mcp_types.REQUEST_TIMEOUT, CONNECTION_CLOSED).
_REQUEST_TIMEOUT = -32001
_CONNECTION_CLOSED = -32000
_MAX_PAGES = 100


@dataclass
class InputRequired:
    """A 2026-07-28 server needs answers (elicitation) before it can finish the call."""

    input_requests: dict[str, Any]
    request_state: str | None


async def call_function(run: StateRun, function: Any, arguments: Any) -> Any:
    """A ``type: mcp`` function (one attempt, inside its recorded step)."""
    server_name, tool = split_operation(function.operation, function.name)
    server = run.plan.mcp_servers[server_name]
    if arguments is not None and not isinstance(arguments, dict):
        raise WorkflowError(f"MCP tool {tool!r}: arguments must be an object, got {type(arguments).__name__}",
                            code=PROTOCOL_ERROR, details={"server": server.name, "tool": tool})
    outcome = await call_tool(run, server, tool, arguments or {})
    if isinstance(outcome, InputRequired):
        raise WorkflowError(f"MCP tool {tool!r} of server {server.name!r} asks for user input; only an aiagent "
                            "tool can wait for it", code=INPUT_REQUIRED,
                            details={"server": server.name, "tool": tool, "inputRequests": outcome.input_requests})
    return outcome


async def list_tools(run: StateRun, server: McpServerDef) -> list[dict[str, Any]]:
    """Every tool of ``server`` (all pages), as JSON: name, description, inputSchema, outputSchema."""
    tools: list[dict[str, Any]] = []
    cursor = None
    for _ in range(_MAX_PAGES):
        page = await _request(run, server, "tools/list", lambda client, meta, c=cursor: _list_page(client, c, meta))
        for tool in page.tools:
            entry = {"name": tool.name, "description": tool.description or tool.title or "",
                     "inputSchema": tool.input_schema or {"type": "object"}}
            if tool.output_schema is not None:
                entry["outputSchema"] = tool.output_schema
            tools.append(entry)
        cursor = page.next_cursor
        if not cursor:
            return tools
    raise WorkflowError(f"MCP server {server.name!r} listed more than {_MAX_PAGES} pages of tools",
                        code=PROTOCOL_ERROR, details={"server": server.name})


async def _list_page(client: Any, cursor: str | None, meta: dict[str, Any]) -> Any:
    from mcp_types import PaginatedRequestParams

    return await client.session.list_tools(params=PaginatedRequestParams(cursor=cursor, _meta=meta or None))  # type: ignore[arg-type]  # a plain dict is what the SDK sends


async def call_tool(run: StateRun, server: McpServerDef, tool: str, arguments: dict[str, Any], *,
                    input_responses: dict[str, Any] | None = None, request_state: str | None = None) -> Any:
    """The tool's result as workflow data, or :class:`InputRequired`."""
    async def send(client: Any, meta: dict[str, Any]) -> Any:
        responses = None
        if input_responses:
            from mcp_types import ElicitResult

            responses = {key: ElicitResult.model_validate(value) for key, value in input_responses.items()}
        return await client.session.call_tool(tool, arguments, read_timeout_seconds=server.timeout,
                                              input_responses=responses, request_state=request_state,
                                              meta=meta or None, allow_input_required=True)

    result = await _request(run, server, f"tools/call {tool}", send)
    if type(result).__name__ == "InputRequiredResult":
        return InputRequired(
            input_requests={key: request.model_dump(mode="json", by_alias=True, exclude_none=True)
                            for key, request in (result.input_requests or {}).items()},
            request_state=result.request_state)
    if result.is_error:
        text = _text_of(result.content) or "the tool reported an error"
        raise WorkflowError(f"MCP tool {tool!r} of server {server.name!r} failed: {text}", code=TOOL_ERROR,
                            details={"server": server.name, "tool": tool, "content": text})
    return tool_result(result)


def tool_result(result: Any) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    blocks = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
    if len(blocks) == 1 and blocks[0].get("type") == "text":
        text = blocks[0].get("text", "")
        try:
            return json.loads(text)
        except ValueError:
            return text
    return {"content": blocks}


async def _request(run: StateRun, server: McpServerDef, what: str, send: Any) -> Any:
    telemetry = run.telemetry
    if telemetry is None:
        return await _send(run, server, what, send, None)
    method, _, tool = what.partition(" ")
    with telemetry.client_call(what, request_attributes(server, method, tool or None),
                               covered_by="execute_tool" if tool else None) as span:
        return await _send(run, server, what, send, span)


async def _send(run: StateRun, server: McpServerDef, what: str, send: Any, span: Any) -> Any:
    connections = connections_for(run)
    connections.http_status.pop(server.name, None)
    try:
        connection, client = await connections.client(server, run.variables)
    except WorkflowError as error:
        raise _redacted(run, _refused(server, connections) or error) from None
    if span is not None:
        for key, value in connection_attributes(client, connections.network.get(server.name)).items():
            span.set(key, value)
    meta = outgoing_meta(_instance_id(run))  # after the span: its traceparent names it
    try:
        # The SDK times the request out itself (and sends notifications/cancelled); this bound
        # only guards against a transport that stops answering altogether.
        async with asyncio.timeout(server.timeout + HARD_BOUND_SLACK):
            result = await send(client, meta)
    except WorkflowError:
        raise
    except Exception as exc:  # noqa: BLE001 - classified below
        failure = _refused(server, connections) or _classify(server, what, exc)
        if failure.code in (UNAVAILABLE, UNAUTHORIZED):
            await connections.drop(connection)
        raise _redacted(run, failure) from None
    if span is not None and getattr(result, "is_error", False):
        span.fail("tool_error")  # the conventions' error.type of an isError result
    return result


def _redacted(run: StateRun, error: WorkflowError) -> WorkflowError:
    """Endpoints, headers and server messages may hold secret values: they never reach a message."""
    from xflow_runtime.functions.context import SecretRedactor

    redactor = SecretRedactor(run.variables.get("SECRETS") or {})
    text = redactor.redact(str(error))
    if text == str(error):
        return error
    return WorkflowError(text, name=error.name, code=error.code, status=error.status, details=error.details)


def _refused(server: McpServerDef, connections: Any) -> WorkflowError | None:
    status = connections.http_status.get(server.name)
    if status not in (401, 403):
        return None
    return WorkflowError(f"MCP server {server.name!r} refused the credentials (HTTP {status})", code=UNAUTHORIZED,
                         details={"server": server.name, "status": status})


def _classify(server: McpServerDef, what: str, exc: Exception) -> WorkflowError:
    from mcp.shared.exceptions import MCPError

    details: dict[str, Any] = {"server": server.name, "request": what}
    if isinstance(exc, TimeoutError):
        return WorkflowError(f"MCP server {server.name!r}: {what} got no answer within {server.timeout:g} s; "
                             "the request was cancelled", code=TIMEOUT, details=details)
    if isinstance(exc, MCPError):
        if exc.code == _REQUEST_TIMEOUT:
            return WorkflowError(f"MCP server {server.name!r}: {what} got no answer within {server.timeout:g} s; "
                                 "the request was cancelled", code=TIMEOUT, details=details)
        if exc.code == _CONNECTION_CLOSED:
            return unavailable(server, exc)
        details["code"] = exc.code
        return WorkflowError(f"MCP server {server.name!r}: {what} failed: {exc.message} "
                             f"(JSON-RPC error {exc.code})", code=PROTOCOL_ERROR, details=details)
    if isinstance(exc, RuntimeError) and ("structured content" in str(exc) or "output schema" in str(exc)):
        return WorkflowError(f"MCP server {server.name!r}: {what}: {exc}", code=OUTPUT_INVALID, details=details)
    if type(exc).__name__ == "ValidationError":
        return WorkflowError(f"MCP server {server.name!r}: {what}: malformed answer: {exc}", code=PROTOCOL_ERROR,
                             details=details)
    return unavailable(server, exc)


def _text_of(content: Any) -> str:
    return "\n".join(block.text for block in content or () if getattr(block, "type", None) == "text")


def _instance_id(run: StateRun) -> str | None:
    instance_id = run.root.instance_id
    return None if instance_id is None else str(instance_id)
