"""OpenTelemetry traces and metrics of instances (``specs/observability.md``), imported lazily.

This module is cheap: it imports nothing of OpenTelemetry. Tracing is on for a runtime when

- the embedder passes ``Runtime(tracer_provider=…)`` (and/or ``meter_provider=…``), or
- the process already has an SDK tracer provider set globally (``trace.set_tracer_provider``), or
- the standard ``OTEL_*`` variables ask for an exporter (``OTEL_TRACES_EXPORTER``,
  ``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``): the SDK is then set up
  from them, once per process;

and never when ``OTEL_SDK_DISABLED=true``. Otherwise nothing of OpenTelemetry is imported: the
check reads ``os.environ`` and ``sys.modules`` only, so cold start does not move.

:func:`inject_trace_context` is for protocol clients (REST/GraphQL here; MCP and A2A clients):
it adds ``traceparent`` (and ``tracestate``) of the current span to their headers;
:func:`annotate_current_span` lets them add their attributes to the span that covers their call.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Mapping, MutableMapping

if TYPE_CHECKING:
    from xflow_runtime.telemetry.spans import Telemetry

#: The setting that records prompts, completions and tool payloads on spans (off by default).
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: Variables that, set, mean "this process exports traces".
_EXPORTER_ENV = ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def capture_content_from_env() -> bool:
    """``true`` (or ``SPAN_ONLY``/``SPAN_AND_EVENT``, the values OTel's GenAI packages use) records
    message content on spans; anything else, or unset, does not."""
    value = os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower()
    return value in ("true", "1", "yes", "span_only", "span_and_event")


def resolve(tracer_provider: Any = None, meter_provider: Any = None, *,
            capture_content: bool | None = None) -> "Telemetry | None":
    """The telemetry of a runtime, or ``None`` when tracing is off (see the module docstring)."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    explicit = tracer_provider is not None or meter_provider is not None
    if not explicit and not _global_sdk_configured() and not _exporter_requested():
        return None
    if not explicit and not _global_sdk_configured():
        from xflow_runtime.telemetry.setup import configure_from_environment

        if not configure_from_environment():  # the SDK or the exporter is missing: warned once, off
            return None
    from xflow_runtime.telemetry.spans import Telemetry

    return Telemetry(tracer_provider, meter_provider,
                     capture_content=capture_content_from_env() if capture_content is None else capture_content)


def _exporter_requested() -> bool:
    exporter = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    return any(os.environ.get(name) for name in _EXPORTER_ENV)


def _global_sdk_configured() -> bool:
    """A tracer provider other than the API's default proxy is set (only looked up when the
    embedder imported OpenTelemetry already)."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return False
    provider = trace.get_tracer_provider()
    return not isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


def inject_trace_context(headers: MutableMapping[str, str]) -> MutableMapping[str, str]:
    """Add the W3C trace context of the current span (``traceparent``, ``tracestate``) to
    ``headers`` and return them. A no-op, importing nothing, when no OpenTelemetry is in use.
    Protocol clients call it for every outgoing request (MCP: put the same keys in ``_meta``)."""
    if "opentelemetry.trace" not in sys.modules:
        return headers
    from xflow_runtime.telemetry.spans import inject

    inject(headers)
    return headers


def annotate_current_span(attributes: Mapping[str, Any]) -> None:
    """Add ``attributes`` to our innermost span (an MCP client adds ``mcp.method.name`` … to the
    ``execute_tool`` span that covers its call, as the conventions ask, instead of a second span).
    A no-op, importing nothing, when no OpenTelemetry is in use."""
    if "opentelemetry.trace" not in sys.modules:
        return
    from xflow_runtime.telemetry.spans import annotate

    annotate(attributes)


__all__ = ["annotate_current_span", "CAPTURE_CONTENT_ENV", "capture_content_from_env", "inject_trace_context", "resolve"]
