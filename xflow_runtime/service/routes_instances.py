"""``/v1/workflows`` and ``/v1/instances``: list definitions, start (idempotent, optional
bounded wait), get, list (filters, keyset cursor), history, cancel, resume."""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import JSONResponse

from xflow_runtime.service.auth import current_principal
from xflow_runtime.service.body import json_body
from xflow_runtime.service.catalog import Definition
from xflow_runtime.service.listing import list_page
from xflow_runtime.service.principal import Principal
from xflow_runtime.service.problems import Problem
from xflow_runtime.service.state import ServiceState
from xflow_runtime.service.views import (STATUSES, TERMINAL, decode_cursor, instance_detail, instance_summary,
                                         status_of)
from xflow_runtime.service.waiting import idempotency_key, prefer_wait, settled

router = APIRouter(prefix="/v1", tags=["instances"])
_KEYS = uuid.UUID("6b1d3f0e-54a4-4c55-9a55-0c8e1e6f2a10")
FINGERPRINT_LABEL = "xflow.idempotency_fingerprint"
CORRELATION_PREFIX = "correlation."


def service(request: Request) -> ServiceState:
    return request.app.state.xflow


def base_url(request: Request) -> str:
    return str(request.scope.get("root_path") or "")


@router.get("/workflows", summary="List workflow definitions")
async def list_workflows(request: Request, principal: Principal = Depends(current_principal)) -> Any:
    state = service(request)
    definitions = state.catalog.definitions()
    state.metrics.definitions.set(len(definitions))
    return {"items": [d.to_dict() for d in definitions], "errors": state.catalog.errors()}


@router.get("/workflows/{workflow_id}", summary="One workflow definition")
async def get_workflow(workflow_id: str, request: Request, principal: Principal = Depends(current_principal)) -> Any:
    definition = service(request).catalog.get(workflow_id)
    if definition is None:
        raise Problem("not-found", f"no workflow {workflow_id}")
    return definition.to_dict()


@router.post("/workflows/{workflow_id}/instances", status_code=201, summary="Start an instance",
             openapi_extra={"requestBody": {"content": {"application/json": {"schema": {}}},
                                            "description": "the instance input (any JSON value; none means {})"}})
async def start_instance(workflow_id: str, request: Request, principal: Principal = Depends(current_principal),
                         idempotency: str | None = Header(None, alias="Idempotency-Key"),
                         prefer: str | None = Header(None)) -> Any:
    state, definition, data = await accepted_start(request, workflow_id)
    key = idempotency_key(idempotency)
    labels = correlation_labels(request)
    instance_id = str(uuid.uuid4())
    if key is not None:
        instance_id = str(uuid.uuid5(_KEYS, json.dumps([principal.tenant, principal.user, workflow_id, key])))
        labels[FINGERPRINT_LABEL] = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
        existing = await state.runtime.status_row(instance_id)
        if existing is not None:
            if existing.get("labels", {}).get(FINGERPRINT_LABEL) != labels[FINGERPRINT_LABEL]:
                raise Problem("idempotency-key-reused", "this Idempotency-Key started an instance with another input")
            return _instance_response(request, state, existing, 200, replayed=True)
    wait = prefer_wait(prefer, state.options.max_wait_seconds)
    with state.hub.subscribe(instance_id, tokens=False) as subscription:
        await state.runtime.start(definition.plan, data, instance_id=instance_id, tenant=principal.tenant,
                                  user=principal.user, labels=labels)
        state.workflow_of[instance_id] = workflow_id
        state.hub.note_owner(instance_id, principal.tenant, principal.user, start=True)
        state.metrics.instances_started.labels(workflow_id).inc()
        if wait:
            await settled(subscription, wait)
    row = await state.runtime.status_row(instance_id)
    assert row is not None
    response = _instance_response(request, state, row, 201, described=await state.describe(instance_id)
                                  if wait else None)
    if wait:
        response.headers["Preference-Applied"] = f"wait={int(wait)}"
    return response


def correlation_labels(request: Request) -> dict[str, str]:
    """``?correlation.<attribute>=<value>``: the CloudEvents extension values this instance
    correlates on; only events carrying them are delivered to it (specs/service.md, "Events")."""
    labels = {}
    for name, value in request.query_params.multi_items():
        if not name.startswith(CORRELATION_PREFIX):
            continue
        attribute = name[len(CORRELATION_PREFIX):]
        if not re.fullmatch(r"[a-z0-9]{1,20}", attribute) or not 0 < len(value) <= 200:
            raise Problem("invalid-parameter", f"{name}: a correlation attribute is 1-20 lowercase letters "
                          "or digits, its value 1-200 characters")
        labels[name] = value
    return labels


async def accepted_start(request: Request, workflow_id: str) -> tuple[ServiceState, Definition, Any]:
    """What every start route checks before anything starts: the service takes work, the workflow
    exists, and the body is JSON valid against its input schema (none means ``{}``)."""
    state = service(request)
    if state.draining:
        raise Problem("not-ready", "the service is shutting down", headers={"Retry-After": "5"})
    definition = state.catalog.get(workflow_id)
    if definition is None:
        raise Problem("not-found", f"no workflow {workflow_id}")
    data = await json_body(request, optional=True)
    data = {} if data is None else data
    _check_input(definition.plan, data)
    return state, definition, data


def _check_input(plan: Any, data: Any) -> None:
    schema = plan.data_input_schema
    if schema is None or schema.validator is None or not schema.fail_on_validation_errors:
        return
    errors = [{"pointer": "#/" + "/".join(str(p) for p in e.absolute_path), "detail": e.message[:300]}
              for e in schema.validator.iter_errors(data)]
    if errors:
        raise Problem("validation-error", "the input does not match the workflow's input schema", errors=errors)


def _instance_response(request: Request, state: ServiceState, row: dict[str, Any], status: int, *,
                       replayed: bool = False, described: dict[str, Any] | None = None) -> JSONResponse:
    last = state.hub.last_event(row["instance_id"])
    base = base_url(request)
    body = instance_summary(row, last, base) if described is None else instance_detail(row, described, last, base)
    headers = {"Location": body["links"]["self"]}
    if replayed:
        headers["Idempotent-Replayed"] = "true"
    return JSONResponse(body, status_code=status, headers=headers)


@router.get("/instances", summary="List instances (newest first)")
async def list_instances(request: Request, principal: Principal = Depends(current_principal),
                         workflow: str | None = Query(None, max_length=200),
                         status: str | None = Query(None, max_length=20),
                         user: str | None = Query(None, max_length=255,
                                                  description="only this end user's instances (a service credential)"),
                         started_after: datetime | None = Query(None, description="ISO 8601, with its zone"),
                         started_before: datetime | None = Query(None, description="ISO 8601, with its zone"),
                         limit: int = Query(50, ge=1, le=200),
                         cursor: str | None = Query(None, max_length=500)) -> Any:
    state = service(request)
    if status is not None and status not in STATUSES:
        raise Problem("validation-error", f"status must be one of {', '.join(STATUSES)}",
                      errors=[{"pointer": "#/status", "detail": "unknown status"}])
    earliest, latest = _epoch(started_after, "started_after"), _epoch(started_before, "started_before")
    filters = {"tenant": principal.tenant, "user": principal.user if principal.role == "user" else user,
               "workflow": workflow, "status": status, "started_after": earliest, "started_before": latest}
    after = decode_cursor(cursor, filters) if cursor else None
    items, next_cursor = await list_page(state, principal, filters, after, limit, base_url(request))
    return {"items": items, "next_cursor": next_cursor}


def _epoch(moment: datetime | None, name: str) -> float | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        raise Problem("invalid-parameter", f"{name} needs a time zone (e.g. 2026-11-26T09:00:00Z)",
                      errors=[{"pointer": f"#/{name}", "detail": "no time zone"}])
    return moment.timestamp()


@router.get("/instances/{instance_id}", summary="One instance")
async def get_instance(instance_id: str, request: Request, principal: Principal = Depends(current_principal)) -> Any:
    state = service(request)
    row = await state.owned(principal, instance_id)
    # the last event before the description: records only grow, so a status of "completed" read
    # from the history is always matched by the output in the description read after it
    last = await state.last_event(instance_id)
    return instance_detail(row, await state.describe(instance_id), last, base_url(request))


@router.get("/instances/{instance_id}/history", summary="History records of an instance")
async def get_history(instance_id: str, request: Request, principal: Principal = Depends(current_principal),
                      after: int = Query(-1, ge=-1), limit: int = Query(100, ge=1, le=1000)) -> Any:
    state = service(request)
    await state.owned(principal, instance_id)
    records = [r for r in await state.runtime.history(instance_id) if r.get("seq", -1) > after]
    page = records[:limit]
    return {"items": page, "next_after": page[-1]["seq"] if len(records) > limit else None}


@router.post("/instances/{instance_id}/cancel", summary="Cancel an instance")
async def cancel_instance(instance_id: str, request: Request, principal: Principal = Depends(current_principal)) -> Any:
    state = service(request)
    row = await state.owned(principal, instance_id)
    status = status_of(row, await state.last_event(instance_id))
    if status == "cancelled":
        return JSONResponse({"id": instance_id, "status": "cancelled"}, status_code=200)
    if status in TERMINAL:
        raise Problem("instance-terminal", f"the instance is {status}", instance_status=status)
    await state.runtime.cancel(instance_id)
    state.hub.status(instance_id, "cancelled")
    state.hub.release_turn(instance_id)
    return JSONResponse({"id": instance_id, "status": "cancelled"}, status_code=202)


@router.post("/instances/{instance_id}/resume", summary="Resume a cancelled or failed instance")
async def resume_instance(instance_id: str, request: Request, principal: Principal = Depends(current_principal)) -> Any:
    state = service(request)
    row = await state.owned(principal, instance_id)
    status = status_of(row, await state.last_event(instance_id))
    if status not in ("cancelled", "failed"):
        raise Problem("instance-running" if status in ("running", "waiting") else "instance-terminal",
                      f"only a cancelled or failed instance can be resumed; this one is {status}",
                      instance_status=status)
    await state.runtime.resume(instance_id)
    state.hub.status(instance_id, "running")
    return JSONResponse({"id": instance_id, "status": "running"}, status_code=202)
