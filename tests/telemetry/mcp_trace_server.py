"""The MCP test server plus a ``traced`` tool that reports the ``_meta`` of its request: appended
to a list in process (in-process and HTTP tests), and its ``traceparent`` as the tool's answer
(``"none"`` without one), which is what a stdio subprocess can report
(``python -m tests.telemetry.mcp_trace_server``)."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer

from tests.mcp.servers import build_server


def traced_server(seen: list[dict[str, Any]] | None = None, name: str = "calc") -> MCPServer:
    server = build_server(name)

    @server.tool(description="Answers the traceparent its request carried; remembers the request's _meta.")
    def traced(ctx: Context) -> str:
        meta = dict(ctx.request_context.meta or {})
        if seen is not None:
            seen.append(meta)
        return str(meta.get("traceparent") or "none")

    return server


if __name__ == "__main__":
    traced_server(name="stdio-traced").run("stdio")
