"""``POST /a2a/callbacks/{instance}/{call}``: push notifications from A2A agents to a waiting
``aiagentproxy`` (specs/a2a.md §3). The caller is the remote agent, not an xflow principal: the
per-call token is its credential (:mod:`xflow_runtime.a2a.callbacks` checks it). A verified
callback only wakes the wait (which then reads the task from the agent itself); a wrong token is
401, a callback for an instance that ended or a call whose wait is over is 410 ``a2a-callback-late``,
and none of them changes anything."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from xflow_runtime.service.problems import Problem
from xflow_runtime.service.state import ServiceState

router = APIRouter(prefix="/a2a/callbacks", tags=["a2a"])
_ENDED = ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")


@router.post("/{instance_id}/{call_id}", status_code=202, summary="A push notification from an A2A agent",
             include_in_schema=False)
async def a2a_callback(instance_id: str, call_id: str, request: Request) -> Any:
    from xflow_runtime.a2a import callback_topic
    from xflow_runtime.a2a.callbacks import CallbackRefused, secret_bytes, verify

    state: ServiceState = request.app.state.xflow
    settings = state.runtime.a2a
    if (settings is None or not settings.push_ready or settings.callback_secret is None
            or not _plausible(instance_id, call_id)):
        raise Problem("not-found", "no such callback")
    await state.open()
    body = await request.body()
    try:
        callback = verify(secret_bytes(settings.callback_secret), instance_id, call_id, request.headers, body)
    except CallbackRefused as refused:
        if refused.status == 401:
            raise Problem("unauthenticated", refused.detail) from None
        raise Problem("malformed-json", refused.detail) from None
    row = await state.runtime.status_row(instance_id)
    if row is None:
        raise Problem("not-found", "no such callback")
    if row.get("status") in _ENDED or await _call_ended(state, instance_id, call_id):
        raise Problem("a2a-callback-late", "the wait this callback was for is over")
    await state.runtime.deliver_callback(instance_id, callback_topic(call_id), {"taskId": callback.task_id},
                                         idempotency_key=callback.idempotency_key)
    return JSONResponse({"accepted": True}, status_code=202)


async def _call_ended(state: ServiceState, instance_id: str, call_id: str) -> bool:
    """Whether the instance recorded the end of this call's wait (from the hub, else the store)."""
    def ended(records: Any) -> bool:
        return any(r.get("event") == "a2a_call_ended" and r.get("call") == call_id for r in records)

    return ended(state.hub.recent(instance_id)) or ended(await state.runtime.history(instance_id))


def _plausible(*ids: str) -> bool:
    return all(0 < len(value) <= 200 and value.isprintable() for value in ids)
