"""Our spans (imported only when tracing is on): one :class:`Telemetry` per runtime.

The tree of an instance (``specs/observability.md``)::

    invoke_workflow <workflow id>        INTERNAL   one per execution (first run, each resume)
      xflow.state <state name>           INTERNAL   one per state visit
        invoke_agent <agentName>         INTERNAL   one per agent turn
          chat <model>                   CLIENT     one per provider attempt (xflow_runtime.telemetry.genai)
          execute_tool <tool>            INTERNAL   one per tool call (an MCP tools/call adds its attributes here)
        tools/call <tool>, tools/list    CLIENT     an MCP request not covered by an execute_tool span
        invoke_agent <agentName>         CLIENT     an aiagentproxy call to an A2A agent

**Deferred spans.** A durable instance that resumes replays its states up to where it stopped;
steps answered from history run nothing, and must emit nothing (they were traced the first
time). So a state, agent or tool span opened while the engine replays is *deferred*: it only
starts (with the time it was opened) when real work happens beneath it — a chat span, a function
step that really runs, a live child span, an outgoing request. A visit replayed from history
from start to end leaves no span at all; the visit that was in flight when the instance stopped
shows up once, as the continuation of its work. Chat spans are opened inside the recorded step
itself, so a replay never reaches them.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from typing import Any, Iterator, MutableMapping, Sequence

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Link, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from xflow_runtime.telemetry import genai

SCOPE_NAME = "xflow_runtime"
#: What we store with an instance is W3C trace context, whatever OTEL_PROPAGATORS says for requests.
_W3C = TraceContextTextMapPropagator()


class SpanHandle:
    """One of our spans, possibly deferred: :meth:`materialize` starts it (and its deferred
    parents) on first need."""

    __slots__ = ("telemetry", "name", "kind", "attributes", "links", "parent", "base", "start_ns", "span", "closed",
                 "_context")

    def __init__(self, telemetry: "Telemetry", name: str, kind: SpanKind, attributes: dict[str, Any],
                 links: Sequence[Link], parent: "SpanHandle | None", base: Any) -> None:
        self.telemetry, self.name, self.kind = telemetry, name, kind
        self.attributes, self.links = attributes, links
        self.parent, self.base = parent, base  # base: the OTel context current when it was opened
        self.start_ns = time.time_ns()
        self.span: Any = None
        self.closed = False
        self._context: Any = None

    def materialize(self) -> None:
        """Start the span now (with the time it was opened), its deferred parents first."""
        if self.span is None and not self.closed:
            parent_context = self.parent.context() if self.parent is not None else self.base
            self.span = self.telemetry.tracer.start_span(
                self.name, context=parent_context, kind=self.kind, attributes=self.attributes,
                links=self.links, start_time=self.start_ns)

    def context(self) -> Any:
        """The OTel context with this span current (started now if deferred)."""
        if self._context is None:
            self.materialize()
            if self.span is None:  # ended without ever starting: its children hang from its parent
                return self.parent.context() if self.parent is not None else self.base
            self._context = trace.set_span_in_context(self.span, self.base)
        return self._context

    def set(self, key: str, value: Any) -> None:
        """Set an attribute now (if started) and keep it for a later start."""
        if value is None:
            return
        self.attributes[key] = value
        if self.span is not None:
            self.span.set_attribute(key, value)

    def fail(self, error_type: str, description: str | None = None) -> None:
        if self.span is not None:
            self.span.set_attribute("error.type", error_type)
            self.span.set_status(Status(StatusCode.ERROR, description))

    def end(self) -> None:
        self.closed = True
        if self.span is not None:
            self.span.end()


#: The innermost of our spans in this task (our handles, since a deferred one is no OTel span yet).
_CURRENT: contextvars.ContextVar[SpanHandle | None] = contextvars.ContextVar("xflow_span", default=None)


def current_context() -> Any:
    """The OTel context to propagate from here: our innermost span (started if deferred), else
    the ambient OTel context."""
    handle = _CURRENT.get()
    return handle.context() if handle is not None else otel_context.get_current()


def inject(headers: MutableMapping[str, str]) -> None:
    """W3C trace context (and baggage, per ``OTEL_PROPAGATORS``) of the current span into ``headers``."""
    propagate.inject(headers, context=current_context())


def annotate(attributes: Any) -> None:
    """Set ``attributes`` on our innermost span (kept for its start if it is deferred)."""
    handle = _CURRENT.get()
    if handle is not None:
        for key, value in attributes.items():
            handle.set(key, value)


def touch() -> None:
    """Real work is happening here (a step's effect runs): start the deferred spans above it."""
    handle = _CURRENT.get()
    if handle is not None:
        handle.materialize()


class Telemetry:
    """The tracer and GenAI instruments of one runtime; ``capture_content`` records prompts,
    completions and tool payloads (off unless asked for)."""

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None, *, capture_content: bool = False):
        from xflow_runtime import __version__

        tracer_provider = tracer_provider or trace.get_tracer_provider()
        self.tracer = tracer_provider.get_tracer(SCOPE_NAME, __version__)
        self.capture_content = capture_content
        self.metrics = genai.Instruments(meter_provider)

    # --- the generic part -----------------------------------------------------------------------
    @contextlib.contextmanager
    def span(self, name: str, attributes: dict[str, Any], *, kind: SpanKind = SpanKind.INTERNAL,
             deferred: bool = False, links: Sequence[Link] = (), parent_context: Any = None) -> Iterator[SpanHandle]:
        """A span around the ``with`` body; ``parent_context`` (an OTel context) replaces our
        current span as the parent (a resumed instance's stored context)."""
        parent = None if parent_context is not None else _CURRENT.get()
        base = parent_context if parent_context is not None else otel_context.get_current()
        handle = SpanHandle(self, name, kind, attributes, links, parent, base)
        attached = None
        if not deferred:
            attached = otel_context.attach(handle.context())
        token = _CURRENT.set(handle)
        try:
            yield handle
        except GeneratorExit:
            raise
        except BaseException as error:  # noqa: BLE001 - recorded, then raised on
            _record_error(handle, error)
            raise
        finally:
            _CURRENT.reset(token)
            if attached is not None:
                otel_context.detach(attached)
            handle.end()

    @staticmethod
    def fail_current(error_type: str) -> None:
        """Mark our innermost span failed (an error the workflow handled, so nothing is raised)."""
        handle = _CURRENT.get()
        if handle is not None:
            handle.fail(error_type)

    # --- the spans of the tree ------------------------------------------------------------------
    def workflow(self, workflow_id: str, version: str | None, instance_id: str, *, resumed: bool = False,
                 parent_context: Any = None, links: Sequence[Link] = ()) -> Any:
        attributes: dict[str, Any] = {"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": workflow_id,
                                      "xflow.instance.id": instance_id}
        if version:
            attributes["xflow.workflow.version"] = version
        if resumed:
            attributes["xflow.resumed"] = True
        return self.span(f"invoke_workflow {workflow_id}", attributes, parent_context=parent_context, links=links)

    def state(self, name: str, state_type: str, visit: str, *, replaying: bool) -> Any:
        return self.span(f"xflow.state {name}", {"xflow.state.name": name, "xflow.state.type": state_type,
                                                 "xflow.state.visit": visit}, deferred=replaying)

    def agent(self, agent_name: str, model: str, conversation_id: str | None, *, replaying: bool) -> Any:
        attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent_name,
                      "gen_ai.request.model": model}
        if conversation_id:
            attributes["gen_ai.conversation.id"] = conversation_id
        return self.span(f"invoke_agent {agent_name}", attributes, deferred=replaying)

    def tool(self, name: str, call_id: str, arguments: Any, *, description: str | None = None,
             tool_type: str = "function", replaying: bool) -> Any:
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                      "gen_ai.tool.call.id": call_id, "gen_ai.tool.type": tool_type}
        if description:
            attributes["gen_ai.tool.description"] = description
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = genai.as_json(arguments)
        return self.span(f"execute_tool {name}", attributes, deferred=replaying)

    def remote_agent(self, agent_name: str, server: tuple[str, int | None] | None, *, replaying: bool) -> Any:
        """``invoke_agent {agent}`` CLIENT: one ``aiagentproxy`` visit reaching a remote (A2A) agent,
        from the card to the settled task; deferred while replaying, like the visit's span."""
        attributes: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent_name}
        if server is not None:
            attributes["server.address"] = server[0]
            if server[1] is not None:
                attributes["server.port"] = server[1]
        return self.span(f"invoke_agent {agent_name}", attributes, kind=SpanKind.CLIENT, deferred=replaying)

    @contextlib.contextmanager
    def client_call(self, name: str, attributes: dict[str, Any], *,
                    covered_by: str | None = None) -> Iterator[SpanHandle]:
        """One outgoing protocol request (opened inside the effect of a recorded step, so a replay
        never reaches it). When our innermost span is a ``covered_by`` span (``execute_tool``
        around an MCP ``tools/call``), the attributes go onto it, as the MCP conventions ask,
        keeping the ones it already has (its tool name is the one the model called); otherwise a
        CLIENT span ``name``. Either way that span is the current OTel context meanwhile, so the
        request carries it and a protocol SDK's own spans nest under it."""
        handle = _CURRENT.get()
        if covered_by is None or handle is None or handle.attributes.get("gen_ai.operation.name") != covered_by:
            with self.span(name, attributes, kind=SpanKind.CLIENT) as handle:
                yield handle
            return
        for key, value in attributes.items():
            if key not in handle.attributes:
                handle.set(key, value)
        attached = otel_context.attach(handle.context())
        try:
            yield handle
        finally:
            otel_context.detach(attached)

    def tool_result(self, handle: SpanHandle, result: Any, error: Any) -> None:
        if error is not None:
            code = error.get("code") if isinstance(error, dict) else None
            handle.fail(str(code or "tool_error"))
        if self.capture_content:
            handle.set("gen_ai.tool.call.result", genai.as_json(result if error is None else {"error": error}))

    def chat(self, provider: str, model: str, messages: Sequence[Any], tools: Sequence[Any] | None,
             server: tuple[str, int | None] | None) -> "genai.ChatSpan":
        return genai.ChatSpan(self, provider, model, messages, tools, server)


def link_to(traceparent: str | None, reason: str) -> list[Link]:
    """A link to the span named by a stored ``traceparent`` (none when it is missing or invalid)."""
    context = context_of(traceparent)
    if context is None:
        return []
    return [Link(trace.get_current_span(context).get_span_context(), {"xflow.link.reason": reason})]


def context_of(traceparent: str | None) -> Any:
    """The OTel context carrying a stored ``traceparent`` as its remote parent, or ``None``."""
    if not isinstance(traceparent, str):
        return None
    context = _W3C.extract({"traceparent": traceparent})
    return context if trace.get_current_span(context).get_span_context().is_valid else None


def traceparent_of(handle: SpanHandle) -> str | None:
    carrier: dict[str, str] = {}
    _W3C.inject(carrier, context=handle.context())
    return carrier.get("traceparent")


def _record_error(handle: SpanHandle, error: BaseException) -> None:
    import asyncio

    if isinstance(error, asyncio.CancelledError):  # the runtime is closing: stopped, not failed
        handle.set("xflow.stopped", True)
        return
    code = getattr(error, "code", None) or getattr(error, "name", None)
    # only the code: messages may carry data, and are never recorded
    handle.fail(str(code) if isinstance(code, str) and code else type(error).__name__)
