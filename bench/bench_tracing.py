"""Tracing overhead per state: the same instances with an OpenTelemetry exporter configured and
with tracing off, measured in the same run.

    python3 bench/bench_tracing.py [--quick]

Each instance runs ``--states`` operation states on the in-process engine, each calling an async
custom function (a recorded step, so every traced state has its span and its step). "On" is a
``TracerProvider`` with a ``BatchSpanProcessor`` in front of an exporter that drops what it gets
(the set-up of a real deployment, minus the network) plus a ``MeterProvider``. Rounds alternate
and each side keeps its best, so warm-up and drift cancel out.

Prints ``BENCH tracing_per_state states=… instances=… on_us=… off_us=… ratio=… added_us=… sdk_span_us=…``:
``added_us`` is what tracing adds per state, ``sdk_span_us`` one bare ``start_as_current_span`` of
the SDK with the same processor (the floor: a visit is one span).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

for _name in [name for name in os.environ if name.startswith("OTEL_")]:
    del os.environ[_name]  # "off" must really be off

from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult  # noqa: E402

from xflow_runtime import Runtime  # noqa: E402


class DroppingExporter(SpanExporter):
    def __init__(self) -> None:
        self.count = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.count += len(spans)
        return SpanExportResult.SUCCESS


def workflow(states: int) -> dict[str, Any]:
    body = []
    for n in range(states):
        state: dict[str, Any] = {"name": f"S{n}", "type": "operation",
                                 "actions": [{"functionRef": {"refName": "step", "arguments": {"n": n}},
                                              "actionDataFilter": {"toStateData": "${ .last }"}}]}
        state.update({"transition": f"S{n + 1}"} if n + 1 < states else {"end": True})
        body.append(state)
    return {"id": "traced-bench", "specVersion": "0.8", "start": "S0",
            "functions": [{"name": "step", "type": "custom", "operation": "step"}], "states": body}


async def step(arguments: dict[str, Any]) -> int:
    return arguments["n"]


async def per_state_us(path: Path, instances: int, states: int, **options: Any) -> float:
    async with Runtime(functions={"step": step}, **options) as runtime:
        plan = runtime.load(path)
        for _ in range(3):  # warm caches
            await (await runtime.start(plan, {})).result()
        started = time.perf_counter()
        for _ in range(instances):
            await (await runtime.start(plan, {})).result()
        return (time.perf_counter() - started) / (instances * states) * 1e6


def sdk_span_us(provider: TracerProvider, count: int) -> float:
    """The peer: one ``start_as_current_span`` of the SDK itself, with attributes like a visit's."""
    tracer = provider.get_tracer("bench")
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(count):
            with tracer.start_as_current_span("xflow.state S", attributes={"xflow.state.name": "S",
                                                                            "xflow.state.type": "operation",
                                                                            "xflow.state.visit": "1:S"}):
                pass
        best = min(best, (time.perf_counter() - started) / count * 1e6)
    return best


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=20)
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a few instances: check it runs")
    args = parser.parse_args()
    instances, rounds = (5, 1) if args.quick else (args.instances, args.rounds)
    exporter = DroppingExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
    meter_provider = MeterProvider()
    with tempfile.TemporaryDirectory(prefix="xflow-trace-bench-") as tmp:
        path = Path(tmp) / "bench.json"
        path.write_text(json.dumps(workflow(args.states)))
        on = off = float("inf")
        for _ in range(rounds):
            off = min(off, await per_state_us(path, instances, args.states))
            on = min(on, await per_state_us(path, instances, args.states, tracer_provider=tracer_provider,
                                            meter_provider=meter_provider))
    tracer_provider.force_flush()
    spans = exporter.count / ((instances + 3) * rounds)
    sdk = sdk_span_us(tracer_provider, 2000 if args.quick else 20000)
    tracer_provider.shutdown()
    load = os.getloadavg()[0]
    print(f"BENCH tracing_per_state states={args.states} instances={instances} on_us={on:.1f} off_us={off:.1f} "
          f"ratio={on / off:.2f} added_us={on - off:.1f} sdk_span_us={sdk:.1f} spans_per_instance={spans:.0f} "
          f"load={load:.1f}")


if __name__ == "__main__":
    asyncio.run(main())
