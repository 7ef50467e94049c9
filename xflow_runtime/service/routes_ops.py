"""Operations, outside ``/v1`` and without auth: ``/healthz`` (the process answers; no I/O),
``/readyz`` (the durable store answers, definitions are loaded, not draining; else 503 problem
listing what failed), ``/metrics`` (Prometheus text format; the instance gauge counts every tenant's instances in the
store by the status they show, by aggregate queries: ``ServiceState.instances_by_status``)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from xflow_runtime.service.problems import Problem
from xflow_runtime.service.state import ServiceState
from xflow_runtime.service.views import STATUSES

router = APIRouter(tags=["operations"])
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


@router.get("/healthz", summary="Liveness")
async def healthz() -> Any:
    return {"status": "ok"}


@router.get("/readyz", summary="Readiness")
async def readyz(request: Request) -> Any:
    state: ServiceState = request.app.state.xflow
    failing = []
    if state.draining:
        failing.append("draining")
    try:
        await asyncio.wait_for(state.runtime.list_instances(limit=1), 5)
    except Exception:
        failing.append("database")
    if not state.catalog.definitions():
        failing.append("definitions")
    if failing:
        raise Problem("not-ready", f"failing checks: {', '.join(failing)}", checks=failing,
                      headers={"Retry-After": "5"})
    return {"status": "ready"}


@router.get("/metrics", summary="Prometheus metrics", response_class=Response,
            responses={200: {"content": {PROMETHEUS_TEXT: {}}}})
async def metrics(request: Request) -> Response:
    state: ServiceState = request.app.state.xflow
    try:
        counts = await state.instances_by_status()
    except Exception:  # the store does not answer: the scrape still answers (readyz says why)
        counts = {}
    for status in STATUSES:
        state.metrics.instances_by_status.labels(status).set(counts.get(status, 0))
    state.metrics.definitions.set(len(state.catalog.definitions()))
    return Response(state.metrics.render(), media_type=PROMETHEUS_TEXT)
