"""``POST /v1/events``: CloudEvents in (structured, binary, batch). Each event starts the
workflows whose start state waits for its type (one instance per workflow and event
``source``+``id``: a retried event attaches to the same instance), and is delivered to every
running instance of the caller's tenant (an end-user credential: its own instances), which
match type, source and correlation themselves. ``source``+``id`` is the delivery idempotency key
per instance: the same event twice is consumed once. An instance started with correlation values
(``?correlation.<attribute>=<value>``, or by an event carrying its definition's correlation
attributes) receives only events that carry the same values."""

from __future__ import annotations

import json
import uuid
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from xflow_runtime.service.auth import current_principal
from xflow_runtime.service.cloudevents import BATCH, STRUCTURED, parse
from xflow_runtime.service.principal import Principal
from xflow_runtime.service.problems import Problem
from xflow_runtime.service.state import ServiceState

router = APIRouter(prefix="/v1", tags=["events"])
_EVENTS = uuid.UUID("0f3c7d52-1b8e-4a8e-9f1e-6d8f0c1a2b3c")


@router.post("/events", summary="Send CloudEvents (structured, binary or batch)",
             openapi_extra={"requestBody": {"content": {STRUCTURED: {"schema": {"type": "object"}},
                                                        BATCH: {"schema": {"type": "array"}},
                                                        "application/json": {"schema": {}}}}})
async def post_events(request: Request, principal: Principal = Depends(current_principal)) -> Any:
    state: ServiceState = request.app.state.xflow
    if state.draining:
        raise Problem("not-ready", "the service is shutting down", headers={"Retry-After": "5"})
    mode, events = parse(await request.body(), request.headers)
    state.metrics.events_received.labels(mode).inc(len(events))
    results = [await _accept(state, principal, event) for event in events]
    body: dict[str, Any] = {"results": results} if mode == "batch" else results[0]
    return Response(json.dumps(body, separators=(",", ":")), media_type="application/json")


async def _accept(state: ServiceState, principal: Principal, event: dict[str, Any]) -> dict[str, Any]:
    started: list[str] = []
    for definition in state.catalog.started_by(event["type"], event.get("source")):
        labels = {f"correlation.{rule.attribute}": str(event[rule.attribute])
                  for event_def in definition.plan.events.values() for rule in event_def.correlation
                  if rule.attribute in event}
        instance_id = str(uuid.uuid5(_EVENTS, json.dumps([principal.tenant, definition.workflow_id,
                                                          event["source"], event["id"]])))
        await state.runtime.start(definition.plan, {}, instance_id=instance_id, tenant=principal.tenant,
                                  user=principal.user, labels=labels)
        state.workflow_of[instance_id] = definition.workflow_id
        await state.runtime.send_event(event, instance_id=instance_id)
        started.append(instance_id)
    delivered = 0
    # found by index on (tenant, correlation key); ENQUEUED too: a resumed instance is queued
    # before it runs again, and keeps its events (specs/service.md, "Events")
    user = principal.user if principal.role == "user" else None
    recipients = [] if principal.role == "user" and user is None else \
        await state.runtime.event_recipients(event, tenant=principal.tenant, user=user)
    for instance_id in recipients:
        if instance_id in started:
            continue
        await state.runtime.send_event(event, instance_id=instance_id)
        delivered += 1
    return {"id": event["id"], "source": event["source"], "started": started, "delivered_to": delivered}
