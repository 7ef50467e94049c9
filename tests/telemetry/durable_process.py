"""A process that runs (``start``) or resumes (``resume``) one durable instance with tracing on,
writing every ended span to a JSON-lines file as it ends (the crash test kills it mid-run).

    python -m tests.telemetry.durable_process start|resume DB WORKFLOW INSTANCE SPANS LOG API_BASE

The ``slow`` function appends ``start slow`` to LOG and sleeps ``$TRACE_TEST_PAUSE`` seconds;
``lookup`` appends ``lookup`` (the test counts real runs from it).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any, Sequence

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from xflow_runtime import Runtime
from xflow_runtime.llm import LLMSettings


class FileExporter(SpanExporter):
    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a", encoding="utf-8") as sink:
            for span in spans:
                sink.write(json.dumps(as_dict(span)) + "\n")
            sink.flush()
            os.fsync(sink.fileno())
        return SpanExportResult.SUCCESS


def as_dict(span: ReadableSpan) -> dict[str, Any]:
    return {"name": span.name, "trace_id": f"{span.context.trace_id:032x}", "span_id": f"{span.context.span_id:016x}",
            "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
            "attributes": {key: value if isinstance(value, (str, int, float, bool)) else list(value)
                           for key, value in span.attributes.items()},
            "links": [{"trace_id": f"{link.context.trace_id:032x}", "span_id": f"{link.context.span_id:016x}",
                       "attributes": dict(link.attributes or {})} for link in span.links]}


def _append(log: str, line: str) -> None:
    with open(log, "a", encoding="utf-8") as sink:
        sink.write(line + "\n")
        sink.flush()
        os.fsync(sink.fileno())


async def main(mode: str, db: str, workflow: str, instance_id: str, spans: str, log: str, api_base: str) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileExporter(spans)))

    def lookup(arguments: dict) -> dict:
        _append(log, "lookup")
        return {"status": "shipped", "id": arguments.get("id")}

    def slow(arguments: dict) -> dict:
        _append(log, "start slow")
        time.sleep(float(os.environ.get("TRACE_TEST_PAUSE", "0")))
        return {"slow": "done"}

    async with Runtime("durable", database_url=db, executor_id=f"trace-test-{os.getpid()}",
                       llm=LLMSettings(api_base=api_base), functions={"lookup": lookup, "slow": slow},
                       tracer_provider=provider) as runtime:
        if mode == "start":
            handle = await runtime.start(runtime.load(workflow), {"question": "where is order 7?"},
                                         instance_id=instance_id)
        else:
            runtime.load(workflow)
            handle = await runtime.resume(instance_id)
        print(json.dumps(await handle.result()))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:8]))
