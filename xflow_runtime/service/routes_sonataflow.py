"""SonataFlow-compatible routes (specs/compat-sonataflow.md §7), off unless enabled
(``create_app(…, sonataflow_routes=True)``, ``xflow serve --sonataflow-routes``), so a client
written for SonataFlow works unchanged:

- ``POST /{workflowId}`` with the input as body → ``201 {"id", "workflowdata"}`` once the instance
  has ended or an agent waits for a message (bounded by the start wait, 60 s by default); a failed
  instance → 400 problem+json ``instance-failed`` with its message and ``id``;
- ``GET /{workflowId}/{instanceId}`` → ``200`` with the same shape.

Mounted after every other router: ``/v1/…``, ``/healthz`` and the rest keep their meaning. Same
credential, tenancy and input-schema rules as ``POST /v1/workflows/{id}/instances``."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from xflow_runtime.service.auth import current_principal
from xflow_runtime.service.principal import Principal
from xflow_runtime.service.problems import PROBLEM_TYPES, Problem
from xflow_runtime.service.routes_instances import accepted_start, service
from xflow_runtime.service.views import status_of
from xflow_runtime.service.waiting import settled

router = APIRouter(tags=["sonataflow"])
PROBLEM_TYPES.setdefault("instance-failed", (400, "The workflow instance failed"))


def _shape(instance_id: str, described: dict[str, Any], status: str) -> dict[str, Any]:
    if status == "failed":
        error = described.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        raise Problem("instance-failed", str(message or "the instance failed")[:2000], id=instance_id)
    data = described.get("output") if status == "completed" else described.get("input")
    return {"id": instance_id, "workflowdata": data}


@router.post("/{workflow_id}", status_code=201, summary="Start an instance (SonataFlow's route)",
             openapi_extra={"requestBody": {"content": {"application/json": {"schema": {}}}}})
async def start(workflow_id: str, request: Request, principal: Principal = Depends(current_principal)) -> Any:
    state, definition, data = await accepted_start(request, workflow_id)
    instance_id = str(uuid.uuid4())
    with state.hub.subscribe(instance_id, tokens=False) as subscription:
        await state.runtime.start(definition.plan, data, instance_id=instance_id, tenant=principal.tenant,
                                  user=principal.user)
        state.workflow_of[instance_id] = workflow_id
        state.metrics.instances_started.labels(workflow_id).inc()
        await settled(subscription, state.options.max_wait_seconds)
    body = await _view(request, principal, workflow_id, instance_id)
    return JSONResponse(body, status_code=201,
                        headers={"Location": f"{request.scope.get('root_path') or ''}/{workflow_id}/{instance_id}"})


@router.get("/{workflow_id}/{instance_id}", summary="One instance (SonataFlow's route)")
async def get(workflow_id: str, instance_id: str, request: Request,
              principal: Principal = Depends(current_principal)) -> Any:
    return await _view(request, principal, workflow_id, instance_id)


async def _view(request: Request, principal: Principal, workflow_id: str, instance_id: str) -> dict[str, Any]:
    state = service(request)
    row = await state.owned(principal, instance_id)
    definition = state.catalog.get(workflow_id)
    if definition is None or row.get("workflow") not in (workflow_id, definition.plan.id):
        raise Problem("not-found", f"no instance {instance_id} of {workflow_id}")
    status = status_of(row, await state.last_event(instance_id))
    return _shape(instance_id, await state.describe(instance_id), status)
