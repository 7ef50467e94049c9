"""Run as a process (a global tracer provider can be set only once per process): one ``type: mcp``
function call over Streamable HTTP with an SDK provider set globally, so the ``mcp`` SDK's own
spans are recorded too. Prints the finished spans as JSON lines (name, kind, own and parent span
id) and then the traceparents the server received."""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


async def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    from tests.mcp.support import HttpMcpServer
    from tests.telemetry.mcp_trace_server import traced_server
    from xflow_runtime import Runtime

    seen: list[dict] = []
    with HttpMcpServer(server=traced_server(seen)) as server:
        document = {"id": "global-sdk", "specVersion": "0.8", "start": "S",
                    "mcpServers": [{"name": "calc", "transport": {"http": {"endpoint": server.url}}}],
                    "functions": [{"name": "traced", "type": "mcp", "operation": "calc#traced"}],
                    "states": [{"name": "S", "type": "operation",
                                "actions": [{"functionRef": {"refName": "traced"}}], "end": True}]}
        path = Path(tempfile.mkdtemp()) / "global-sdk.json"
        path.write_text(json.dumps(document))
        async with Runtime() as runtime:  # no provider given: the global SDK one is used
            await (await runtime.start(runtime.load(path), {})).result(timeout=60)
    for span in exporter.get_finished_spans():
        print(json.dumps({"name": span.name, "kind": span.kind.name, "id": f"{span.context.span_id:016x}",
                          "parent": f"{span.parent.span_id:016x}" if span.parent else None}))
    print(json.dumps({"received": [meta.get("traceparent") for meta in seen]}))
    sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(main())
