"""Setting the OpenTelemetry SDK up from the standard ``OTEL_*`` variables, once per process.

Used when no embedder configured a tracer provider but the environment asks for an exporter
(``xflow run``/``xflow serve`` under ``OTEL_TRACES_EXPORTER=otlp``, say). The SDK's own
environment configurator does the reading (exporters by entry point, sampler, resource,
``OTEL_METRICS_EXPORTER``); it is a private function of ``opentelemetry-sdk``, hence the pinned
range of the ``[otel]`` extra.
"""

from __future__ import annotations

import logging
import os

_log = logging.getLogger("xflow.telemetry")
_configured: bool | None = None


def configure_from_environment() -> bool:
    """True once the global providers come from the environment; False (with one warning) when
    the SDK or the named exporter is not installed."""
    global _configured
    if _configured is not None:
        return _configured
    try:
        from opentelemetry.sdk._configuration import _initialize_components
    except ImportError:
        _log.warning("OTEL_* variables ask for traces, but opentelemetry-sdk is not installed: "
                     "pip install 'xflow-runtime[otel]'")
        _configured = False
        return False
    names = [] if os.environ.get("OTEL_TRACES_EXPORTER") else ["otlp"]  # the spec's default exporter
    try:
        _initialize_components(trace_exporter_names=names)
    except Exception as error:  # noqa: BLE001 - e.g. the OTLP exporter package is missing
        _log.warning("cannot set OpenTelemetry up from the OTEL_* variables: %s", error)
        _configured = False
        return False
    _configured = True
    return True
