"""In-memory OpenTelemetry providers and helpers to read the spans they collected as a tree."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

#: Attribute names that carry content: recorded only with capture on.
CONTENT_ATTRIBUTES = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
                      "gen_ai.tool.definitions", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")


@dataclass
class Collected:
    """Providers passed explicitly to a Runtime (never the global ones) and what they collected."""

    exporter: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    reader: InMemoryMetricReader = field(default_factory=InMemoryMetricReader)

    def __post_init__(self) -> None:
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def providers(self) -> dict[str, Any]:
        return {"tracer_provider": self.tracer_provider, "meter_provider": self.meter_provider}

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [span for span in self.spans if span.name.startswith(prefix)]

    def one(self, name: str) -> ReadableSpan:
        found = [span for span in self.spans if span.name == name]
        assert len(found) == 1, (name, [s.name for s in self.spans])
        return found[0]

    def parent_of(self, span: ReadableSpan) -> ReadableSpan | None:
        if span.parent is None:
            return None
        return next((s for s in self.spans if s.context.span_id == span.parent.span_id), None)

    def points(self, metric: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        found = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for item in scope.metrics:
                    if item.name == metric:
                        found.extend(item.data.data_points)
        return found


async def waiting_for_its_event(instance_id: str, timeout: float = 30.0) -> None:
    """Returns once the durable instance waits in an event state (a ``xflow.receive`` step)."""
    import asyncio

    from dbos import DBOS

    for _ in range(int(timeout / 0.05)):
        steps = await DBOS.list_workflow_steps_async(instance_id)
        if any(step["function_name"].startswith("xflow.receive") for step in steps):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"instance {instance_id} never waited for its event")
