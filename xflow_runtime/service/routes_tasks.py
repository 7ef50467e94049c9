"""The task inbox over HTTP (``usertask`` states, specs/states-human.md §4):

- ``GET /v1/tasks?status=open,claimed`` — the caller's tasks: assigned to them, offered to them
  or to one of their groups (a ``service`` credential sees every task of its tenant);
- ``GET /v1/tasks/{id}``; ``POST /v1/tasks/{id}/claim``, ``/unclaim``, ``/complete`` (body
  ``{"data": …}``, checked against the task's form schema); ``DELETE /v1/tasks/{id}``.

Who acts comes from the credential only: tenant and user, and the groups of a JWT's ``groups``
claim (a list of strings). A task the caller may not see is a 404, as for instances."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict

from xflow_runtime.service.auth import current_principal
from xflow_runtime.service.body import model_body
from xflow_runtime.service.principal import Principal
from xflow_runtime.service.problems import PROBLEM_TYPES, Problem
from xflow_runtime.service.state import ServiceState
from xflow_runtime.usertask.rules import Actor
from xflow_runtime.usertask.store import TaskError

PROBLEM_TYPES.setdefault("task-conflict", (409, "The task is not in a state that allows this"))
PROBLEM_TYPES.setdefault("task-data-invalid", (422, "The data does not match the task's form"))
_STATUSES = ("open", "claimed", "completed", "deleted", "timedOut")
_SLUG_OF = {"not-found": "not-found", "forbidden": "forbidden", "conflict": "task-conflict",
            "invalid": "task-data-invalid"}

router = APIRouter(prefix="/v1", tags=["tasks"])


class Completion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    data: Any = None


async def acting(request: Request, principal: Principal = Depends(current_principal)) -> Actor:
    return Actor(principal.tenant, principal.user, credential_groups(request), admin=principal.role == "service")


def credential_groups(request: Request) -> frozenset[str]:
    """The ``groups`` claim of the request's JWT (already verified by ``current_principal``)."""
    header = request.headers.get("authorization") or ""
    token = header.partition(" ")[2].strip()
    if token.count(".") != 2:
        return frozenset()
    import jwt

    try:
        groups = jwt.decode(token, options={"verify_signature": False}).get("groups")
    except jwt.PyJWTError:
        return frozenset()
    return frozenset(g for g in groups if isinstance(g, str)) if isinstance(groups, list) else frozenset()


def _inbox(request: Request) -> Any:
    state: ServiceState = request.app.state.xflow
    return state.runtime.tasks


async def _run(operation: Any) -> dict[str, Any]:
    try:
        return (await operation).to_dict()
    except TaskError as error:
        raise Problem(_SLUG_OF[error.kind], str(error), errors=error.errors or None) from None


@router.get("/tasks", summary="List my tasks and my groups' tasks")
async def list_tasks(request: Request, actor: Actor = Depends(acting),
                     status: str = Query("open,claimed", max_length=100),
                     limit: int = Query(100, ge=1, le=500)) -> dict[str, Any]:
    wanted = tuple(s.strip() for s in status.split(",") if s.strip())
    unknown = [s for s in wanted if s not in _STATUSES]
    if unknown or not wanted:
        raise Problem("invalid-parameter", f"status must be among {', '.join(_STATUSES)}")
    tasks = await _inbox(request).list(actor, wanted, limit)
    return {"items": [task.to_dict() for task in tasks]}


@router.get("/tasks/{task_id}", summary="One task")
async def get_task(task_id: str, request: Request, actor: Actor = Depends(acting)) -> dict[str, Any]:
    return await _run(_inbox(request).get(task_id, actor))


@router.post("/tasks/{task_id}/claim", summary="Claim a task")
async def claim(task_id: str, request: Request, actor: Actor = Depends(acting)) -> dict[str, Any]:
    return await _run(_inbox(request).claim(task_id, actor))


@router.post("/tasks/{task_id}/unclaim", summary="Give a claimed task back")
async def unclaim(task_id: str, request: Request, actor: Actor = Depends(acting)) -> dict[str, Any]:
    return await _run(_inbox(request).unclaim(task_id, actor))


@router.post("/tasks/{task_id}/complete", summary="Complete a task with its form data")
async def complete(task_id: str, request: Request, actor: Actor = Depends(acting)) -> dict[str, Any]:
    body = await model_body(request, Completion)
    return await _run(_inbox(request).complete(task_id, actor, body.data))


@router.delete("/tasks/{task_id}", summary="Delete a task")
async def delete(task_id: str, request: Request, actor: Actor = Depends(acting)) -> dict[str, Any]:
    return await _run(_inbox(request).delete(task_id, actor))
