"""Prometheus metrics of one service process (names follow prometheus.io naming: base units,
``_total`` counters, labels bounded by route templates, workflow ids and models — never by
instance, user or tenant). Each app has its own registry, so two apps in one process (tests,
an embedder mounting twice) do not collide."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class ServiceMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.http_requests = Counter("xflow_http_requests", "HTTP requests", ["method", "route", "status_class"], registry=r)
        self.http_duration = Histogram("xflow_http_request_duration_seconds", "HTTP request duration",
                                       ["route"], registry=r, buckets=_LATENCY_BUCKETS)
        self.instances_started = Counter("xflow_instances_started", "Instances started", ["workflow"], registry=r)
        self.instances_finished = Counter("xflow_instances_finished", "Instances finished",
                                          ["workflow", "outcome"], registry=r)
        self.instances_by_status = Gauge("xflow_instances", "Instances in the store (every tenant), by the status they show",
                                         ["status"], registry=r)
        self.state_duration = Histogram("xflow_state_duration_seconds", "Time spent in a state",
                                        ["workflow", "state_type"], registry=r, buckets=_LATENCY_BUCKETS)
        self.llm_latency = Histogram("xflow_llm_request_duration_seconds", "LLM call latency", ["model"],
                                     registry=r, buckets=_LATENCY_BUCKETS)
        self.llm_tokens = Counter("xflow_llm_tokens", "LLM tokens", ["model", "direction"], registry=r)
        self.llm_cost = Counter("xflow_llm_cost_usd", "LLM cost in US dollars", ["model"], registry=r)
        self.events_received = Counter("xflow_events_received", "CloudEvents received", ["mode"], registry=r)
        self.sse_streams = Gauge("xflow_sse_streams_active", "Open SSE streams", registry=r)
        self.definitions = Gauge("xflow_definitions_loaded", "Workflow definitions loaded", registry=r)

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.http_requests.labels(method, route, f"{status // 100}xx").inc()
        self.http_duration.labels(route).observe(seconds)

    def observe_record(self, workflow: str, record: dict[str, Any], entered: dict[str, tuple[float, str]],
                       instance_id: str) -> None:
        """Fold one history record into the metrics (``entered`` remembers state entries)."""
        event = record.get("event")
        if event == "state_entered":
            entered[f"{instance_id}/{record.get('state')}"] = (record.get("at") or 0.0, str(record.get("type", "")))
        elif event in ("state_exited", "state_failed"):
            start = entered.pop(f"{instance_id}/{record.get('state')}", None)
            if start is not None and record.get("at"):
                self.state_duration.labels(workflow, start[1] or "state").observe(max(0.0, record["at"] - start[0]))
        elif event == "llm_call":
            model = str(record.get("model") or "unknown")
            usage = record.get("usage") or {}
            self.llm_latency.labels(model).observe((record.get("latency_ms") or 0.0) / 1000)
            self.llm_tokens.labels(model, "input").inc(usage.get("prompt_tokens") or 0)
            self.llm_tokens.labels(model, "output").inc(usage.get("completion_tokens") or 0)
            if usage.get("cost"):
                self.llm_cost.labels(model).inc(usage["cost"])
        elif event in ("workflow_completed", "workflow_failed"):
            self.instances_finished.labels(workflow, "completed" if event == "workflow_completed" else "failed").inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
