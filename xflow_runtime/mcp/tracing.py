"""What every outgoing MCP request carries in ``params._meta`` besides the SDK's own keys.

OPENTELEMETRY HOOK: :func:`outgoing_meta` is the one place where a W3C ``traceparent`` (and
``tracestate``/``baggage``, SEP-414: the only ``_meta`` keys without a prefix) would be injected
into outgoing MCP requests. It is called once per ``tools/list`` and ``tools/call`` with the
instance id; today it adds only our own vendor-prefixed instance id.
"""

from __future__ import annotations

from typing import Any

#: Our ``_meta`` key (a reverse-DNS prefix of ours, never ``io.modelcontextprotocol/``).
INSTANCE_KEY = "dev.xflow-runtime/instanceId"


def outgoing_meta(instance_id: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if instance_id:
        meta[INSTANCE_KEY] = instance_id
    # OpenTelemetry: meta["traceparent"] = …, meta["tracestate"] = … (the current span's context)
    return meta
