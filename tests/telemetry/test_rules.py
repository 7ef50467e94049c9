"""The rules of our spans, one by one, on a Telemetry with in-memory exporters: deferred spans,
stored trace contexts, the sampling decision, propagation for protocol clients."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased

from tests.telemetry.support import Collected
from xflow_runtime.telemetry import annotate_current_span, inject_trace_context
from xflow_runtime.telemetry.spans import Telemetry, context_of, link_to, touch, traceparent_of

TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"


def telemetry() -> tuple[Telemetry, Collected]:
    collected = Collected()
    return Telemetry(collected.tracer_provider, collected.meter_provider), collected


def test_a_span_opened_while_replaying_is_dropped_when_nothing_real_happens_in_it() -> None:
    tracing, collected = telemetry()
    with tracing.workflow("w", None, "i-1"):
        with tracing.state("Replayed", "operation", "1:Replayed", replaying=True):
            with tracing.agent("a", "gpt-4o", None, replaying=True):
                pass
    assert [span.name for span in collected.spans] == ["invoke_workflow w"]


def test_real_work_starts_the_deferred_spans_above_it_with_the_time_they_were_opened() -> None:
    tracing, collected = telemetry()
    with tracing.workflow("w", None, "i-1"):
        with tracing.state("InFlight", "operation", "2:InFlight", replaying=True) as state:
            opened = state.start_ns
            with tracing.tool("lookup", "call-1", {}, replaying=True):
                touch()  # a step's effect really runs (it was in flight at the crash)
    tool, visit, root = collected.one("execute_tool lookup"), collected.one("xflow.state InFlight"), \
        collected.one("invoke_workflow w")
    assert visit.start_time == opened and collected.parent_of(visit) is root
    assert collected.parent_of(tool) is visit


def test_propagation_from_a_deferred_span_starts_it() -> None:
    """An outgoing request (REST, MCP, A2A) from a replayed visit is real work: its traceparent
    names a span that exists."""
    tracing, collected = telemetry()
    with tracing.workflow("w", None, "i-1"):
        with tracing.state("InFlight", "operation", "2:InFlight", replaying=True):
            headers = inject_trace_context({})
    visit = collected.one("xflow.state InFlight")
    assert headers["traceparent"].startswith(f"00-{visit.context.trace_id:032x}-{visit.context.span_id:016x}-")


@given(st.one_of(st.none(), st.integers(), st.text(max_size=80),
                 st.from_regex(r"\A00-[0-9a-f]{32}-[0-9a-f]{16}-0[0-3]\Z")))
def test_a_stored_trace_context_is_used_only_when_it_is_a_valid_traceparent(stored) -> None:
    context = context_of(stored)
    links = link_to(stored, "resumed")
    if context is None:
        assert links == []
    else:
        assert isinstance(stored, str) and stored.startswith("00-") and len(links) == 1
        assert f"{links[0].context.span_id:016x}" == stored.split("-")[2]


def test_a_resumed_execution_keeps_the_sampling_decision_of_the_first() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ParentBased(ALWAYS_ON))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = Telemetry(provider)
    with tracing.workflow("w", None, "i", resumed=True, parent_context=context_of(f"00-{TRACE}-{PARENT}-00")):
        pass
    assert exporter.get_finished_spans() == ()  # sampled out the first time: still out
    with tracing.workflow("w", None, "i", resumed=True, parent_context=context_of(f"00-{TRACE}-{PARENT}-01")) as span:
        assert traceparent_of(span).startswith(f"00-{TRACE}-")
    (kept,) = exporter.get_finished_spans()
    assert f"{kept.parent.span_id:016x}" == PARENT


def test_a_cancelled_execution_is_stopped_not_failed() -> None:
    tracing, collected = telemetry()
    try:
        with tracing.workflow("w", None, "i"):
            raise asyncio.CancelledError
    except asyncio.CancelledError:
        pass
    span = collected.one("invoke_workflow w")
    assert span.attributes["xflow.stopped"] is True and "error.type" not in span.attributes


def test_a_protocol_client_annotates_the_tool_span_that_covers_its_call() -> None:
    tracing, collected = telemetry()
    with tracing.workflow("w", None, "i"):
        with tracing.tool("search", "call-1", {}, replaying=False):
            annotate_current_span({"mcp.method.name": "tools/call", "network.transport": "pipe"})
    tool = collected.one("execute_tool search")
    assert tool.attributes["mcp.method.name"] == "tools/call" and tool.attributes["network.transport"] == "pipe"
    annotate_current_span({"ignored": True})  # outside any span of ours: nothing to annotate, no error


_TEXT = st.text(max_size=20)
_CALL = st.fixed_dictionaries({"id": _TEXT, "type": st.just("function"),
                               "function": st.fixed_dictionaries({"name": _TEXT, "arguments": _TEXT})})
_MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "user"]), "content": _TEXT}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": st.one_of(st.none(), _TEXT)},
                          optional={"tool_calls": st.lists(_CALL, max_size=3)}),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": _TEXT, "content": _TEXT}),
)


@given(st.lists(_MESSAGE, max_size=8))
def test_captured_messages_keep_every_message_in_the_conventions_shape(messages) -> None:
    import json

    from xflow_runtime.telemetry.genai import as_json, input_messages

    system, conversation = input_messages(messages)
    assert len(system) == sum(m["role"] == "system" for m in messages)
    assert [m["role"] for m in conversation] == [m["role"] for m in messages if m["role"] != "system"]
    for original, converted in zip([m for m in messages if m["role"] != "system"], conversation):
        kinds = [part["type"] for part in converted["parts"]]
        if original["role"] == "tool":
            assert kinds == ["tool_call_response"]
        else:
            assert kinds.count("tool_call") == len(original.get("tool_calls") or [])
            assert ("text" in kinds) == bool(original.get("content"))
    assert json.loads(as_json(conversation)) == conversation
