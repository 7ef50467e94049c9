"""What every outgoing MCP request carries in ``params._meta`` besides the SDK's own keys.

:func:`outgoing_meta` is the one place where the W3C ``traceparent`` (and ``tracestate``, SEP-414:
the only ``_meta`` keys without a prefix) of the current span goes into outgoing MCP requests
(:func:`xflow_runtime.telemetry.inject_trace_context`: nothing without OpenTelemetry in use). It
is called once per ``tools/list`` and ``tools/call`` with the instance id, which it adds under our
own vendor prefix.
"""

from __future__ import annotations

from typing import Any

#: Our ``_meta`` key (a reverse-DNS prefix of ours, never ``io.modelcontextprotocol/``).
INSTANCE_KEY = "dev.xflow-runtime/instanceId"


def outgoing_meta(instance_id: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if instance_id:
        meta[INSTANCE_KEY] = instance_id
    from xflow_runtime.telemetry import inject_trace_context

    inject_trace_context(meta)
    return meta
