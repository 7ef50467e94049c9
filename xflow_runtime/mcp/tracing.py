"""What every outgoing MCP request carries in ``params._meta`` besides the SDK's own keys.

:func:`outgoing_meta` is the one place where the W3C ``traceparent`` (and ``tracestate``, SEP-414:
the only ``_meta`` keys without a prefix) of the current span goes into outgoing MCP requests
(:func:`xflow_runtime.telemetry.inject_trace_context`: nothing without OpenTelemetry in use). It
is called once per ``tools/list`` and ``tools/call`` with the instance id, which it adds under our
own vendor prefix.

:func:`request_attributes` and :func:`connection_attributes` are the OpenTelemetry MCP attributes
of a request (semantic conventions, ``mcp.md``), set by :func:`xflow_runtime.mcp.calls._request`
on the ``execute_tool`` span that covers a ``tools/call`` or on a CLIENT span of its own
(``specs/observability.md`` §6).
"""

from __future__ import annotations

from typing import Any

#: Our ``_meta`` key (a reverse-DNS prefix of ours, never ``io.modelcontextprotocol/``).
INSTANCE_KEY = "dev.xflow-runtime/instanceId"


def request_attributes(server: Any, method: str, tool: str | None) -> dict[str, Any]:
    """Known before connecting: the method, the tool, our name of the server."""
    attributes: dict[str, Any] = {"mcp.method.name": method, "xflow.mcp.server": server.name}
    if tool is not None:
        attributes["gen_ai.operation.name"] = "execute_tool"
        attributes["gen_ai.tool.name"] = tool
        attributes["xflow.mcp.tool"] = tool  # kept when an execute_tool span keeps the model's name
    return attributes


def connection_attributes(client: Any, network: dict[str, Any] | None) -> dict[str, Any]:
    """Known once connected: the negotiated protocol revision, and what the connection recorded
    of its transport (``network.transport`` ``pipe``/``tcp``, ``server.address``/``server.port``;
    nothing for an in-process server). ``mcp.session.id`` is not set: the SDK's ``Client`` does
    not expose a legacy session's id."""
    attributes: dict[str, Any] = dict(network or {})
    version = getattr(client, "protocol_version", None)
    if isinstance(version, str) and version:
        attributes["mcp.protocol.version"] = version
    return attributes


def outgoing_meta(instance_id: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if instance_id:
        meta[INSTANCE_KEY] = instance_id
    from xflow_runtime.telemetry import inject_trace_context

    inject_trace_context(meta)
    return meta
