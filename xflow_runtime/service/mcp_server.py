"""``xflow serve --mcp``: the workflows marked ``metadata: {xflow.mcp.expose: 'true'}`` as MCP
tools at ``/mcp`` (Streamable HTTP, both protocol eras, the official SDK's low-level ``Server``).

- One tool per exposed workflow: name = the workflow id (characters outside ``A-Za-z0-9_-.``
  as ``_``), description = the workflow's ``description``, ``inputSchema`` = its
  ``dataInputSchema`` (an object schema; none: any object), ``outputSchema`` = its output schema
  *or* a run handle, when it declares one.
- ``tools/call`` starts an instance for the caller (tenant and user from the credential, as on
  every route) and waits up to ``--mcp-wait`` seconds: the output is the ``structuredContent``;
  a failure is an ``isError`` result; a run that is still going (or waits for a chat message)
  answers the handle ``{runId, status}`` instead.
- ``get_workflow_run {runId}`` answers ``{runId, status, output?, error?}`` for a run the caller
  may see (the handle pattern of the MCP spec's "Stateful Tools").

Authentication is the service's (API keys, JWTs); an unauthenticated request gets the service's
401 problem. The SDK validates ``Host``/``Origin`` against the bind address (DNS rebinding).
"""

from __future__ import annotations

import json
import re
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, AsyncIterator

if TYPE_CHECKING:
    from xflow_runtime.service.state import ServiceState

EXPOSE_KEY = "xflow.mcp.expose"
STATUS_TOOL = "get_workflow_run"
HANDLE_SCHEMA = {"type": "object", "required": ["runId", "status"],
                 "properties": {"runId": {"type": "string"}, "status": {"type": "string"}}}
_NAME = re.compile(r"[^A-Za-z0-9_.-]")


def exposed(plan: Any) -> bool:
    value = (plan.metadata or {}).get(EXPOSE_KEY)
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def tool_name(workflow_id: str) -> str:
    return _NAME.sub("_", workflow_id)[:128] or "workflow"


class McpEndpoint:
    """The ``/mcp`` route of the service: authenticates, then hands the request to the SDK."""

    def __init__(self, state: "ServiceState", *, host: str, wait_seconds: float):
        from mcp.server.lowlevel import Server
        from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
        from mcp.server.transport_security import TransportSecuritySettings

        self.state, self.wait_seconds = state, wait_seconds
        self.server = Server("xflow-runtime", on_list_tools=self._list_tools, on_call_tool=self._call_tool)
        security = None
        if host in ("127.0.0.1", "localhost", "::1"):
            security = TransportSecuritySettings(
                enable_dns_rebinding_protection=True, allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"])
        self.manager = StreamableHTTPSessionManager(app=self.server, security_settings=security)
        self._asgi = StreamableHTTPASGIApp(self.manager)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.manager.run():
            yield

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        from starlette.requests import Request

        from xflow_runtime.service.problems import Problem, problem_response

        request = Request(scope, receive)
        try:
            await self.state.open()
            scope["xflow.principal"] = await self.state.auth.authenticate(request)
        except Problem as problem:
            await problem_response(problem)(scope, receive, send)
            return
        await self._asgi(scope, receive, send)

    # --- MCP handlers --------------------------------------------------------------------------
    def _definitions(self) -> dict[str, Any]:
        self.state.catalog.refresh()
        return {tool_name(d.workflow_id): d for d in self.state.catalog.definitions() if exposed(d.plan)}

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        from mcp_types import ListToolsResult, Tool

        tools = [Tool(name=STATUS_TOOL, description="The status and, once finished, the output of a workflow run "
                                                     "started by another tool (runId from its answer).",
                      input_schema={"type": "object", "required": ["runId"], "additionalProperties": False,
                                    "properties": {"runId": {"type": "string"}}},
                      output_schema={"type": "object", "required": ["runId", "status"],
                                     "properties": {"runId": {"type": "string"}, "status": {"type": "string"}}})]
        for name, definition in sorted(self._definitions().items()):
            plan = definition.plan
            schema = definition.input_schema
            output = None if plan.output_schema is None else plan.output_schema.schema
            tools.append(Tool(
                name=name, description=plan.description or plan.name or f"Run the workflow {definition.workflow_id}.",
                input_schema=schema if isinstance(schema, dict) and schema.get("type") == "object"
                else {"type": "object"},
                output_schema=None if output is None else {"type": "object", "anyOf": [output, HANDLE_SCHEMA]}))
        return ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        principal = _principal(ctx)
        if principal is None:
            return _error("not authenticated")
        arguments = params.arguments or {}
        if params.name == STATUS_TOOL:
            return await self._status(principal, arguments.get("runId"))
        definition = self._definitions().get(params.name)
        if definition is None:
            return _error(f"no tool {params.name!r}")
        problems = _input_problems(definition.plan, arguments)
        if problems:
            return _error("the arguments do not match the workflow's input schema: " + "; ".join(problems))
        return await self._start(principal, definition, arguments)

    async def _start(self, principal: Any, definition: Any, arguments: dict[str, Any]) -> Any:
        import uuid

        from xflow_runtime.service.live import TERMINAL_RECORDS
        from xflow_runtime.service.waiting import settled

        state = self.state
        if state.draining:
            return _error("the service is shutting down; try again later")
        instance_id = str(uuid.uuid4())
        with state.hub.subscribe(instance_id, tokens=False) as subscription:
            await state.runtime.start(definition.plan, arguments, instance_id=instance_id,
                                      tenant=principal.tenant, user=principal.user)
            state.workflow_of[instance_id] = definition.workflow_id
            state.metrics.instances_started.labels(definition.workflow_id).inc()
            await settled(subscription, self.wait_seconds, until=("agent_reply", *TERMINAL_RECORDS))
        return await self._answer(instance_id)

    async def _status(self, principal: Any, run_id: Any) -> Any:
        from xflow_runtime.service.problems import Problem

        if not isinstance(run_id, str):
            return _error("runId must be a string")
        try:
            await self.state.owned(principal, run_id)
        except Problem:
            return _error(f"no run {run_id}")
        return await self._answer(run_id, always_handle=True)

    async def _answer(self, instance_id: str, *, always_handle: bool = False) -> Any:
        from xflow_runtime.service.views import status_of

        state = self.state
        row = await state.runtime.status_row(instance_id) or {}
        status = status_of(row, state.hub.last_event(instance_id) or await state.last_event(instance_id))
        described = await state.describe(instance_id) if status in ("completed", "failed") else {}
        if status == "failed":
            error = described.get("error") or {}
            return _error(f"the workflow run {instance_id} failed: {error.get('message') or error.get('code')}",
                          {"runId": instance_id, "status": status,
                           "error": {k: error.get(k) for k in ("code", "message") if k in error}})
        if status == "completed" and not always_handle:
            output = described.get("output")
            return _result(output if isinstance(output, dict) else {"result": output})
        handle: dict[str, Any] = {"runId": instance_id, "status": status}
        if status == "completed":
            handle["output"] = described.get("output")
        return _result(handle, note="" if status == "completed" else
                       f" The run continues; ask {STATUS_TOOL} with this runId for its result.")


def _principal(ctx: Any) -> Any:
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None) or {}
    return scope.get("xflow.principal")


def _input_problems(plan: Any, arguments: Any) -> list[str]:
    schema = plan.data_input_schema
    if schema is None or schema.validator is None:
        return []
    return [f"/{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in schema.validator.iter_errors(arguments)]


def _result(structured: dict[str, Any], note: str = "") -> Any:
    from mcp_types import CallToolResult, TextContent

    text = json.dumps(structured, ensure_ascii=False) + note
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def _error(message: str, structured: dict[str, Any] | None = None) -> Any:
    from mcp_types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True,
                          structured_content=structured)


def install(app: Any, state: "ServiceState", *, host: str = "127.0.0.1", wait_seconds: float = 30.0) -> McpEndpoint:
    """Add ``/mcp`` to ``app``; the service lifespan runs the SDK's session manager."""
    from starlette.routing import Route

    endpoint = McpEndpoint(state, host=host, wait_seconds=wait_seconds)
    app.router.routes.append(Route("/mcp", endpoint=endpoint, methods=["GET", "POST", "DELETE"],
                                   include_in_schema=False))
    state.lifespans.append(endpoint.running)
    return endpoint
