"""Chat and streams: ``POST /v1/instances/{id}/messages`` sends a user message to an agent
conversation that waits in the instance (``finish: false``) and answers with the agent's reply
(or, with ``Accept: text/event-stream``, streams this turn's tokens and records);
``GET /v1/instances/{id}/stream`` is the instance's SSE stream with ``Last-Event-ID`` resumption.

One message per turn: a second message while the first is being answered is a 409 (as is a
message to an instance that does not wait for one). The instance runs in the runtime, never in
the response: a client that disconnects loses its view, not the turn."""

from __future__ import annotations

from typing import Any, AsyncIterator

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from xflow_runtime.service.auth import current_principal
from xflow_runtime.service.body import model_body
from xflow_runtime.service.live import TERMINAL_RECORDS
from xflow_runtime.service.middleware import runtime_span
from xflow_runtime.service.principal import Principal
from xflow_runtime.service.problems import Problem
from xflow_runtime.service.sse import HEADERS, frame, instance_stream, item_frame, parse_cursor
from xflow_runtime.service.state import ServiceState
from xflow_runtime.service.views import TERMINAL, status_of
from xflow_runtime.service.waiting import settled

router = APIRouter(prefix="/v1", tags=["chat"])


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=100_000)


class ChatReply(BaseModel):
    instance_id: str
    status: str
    turn: int | None = None
    reply: str | None = None
    output: Any = None


@router.post("/instances/{instance_id}/messages", summary="Send a message to a waiting agent",
             response_model=ChatReply,
             openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                 "schema": ChatMessage.model_json_schema()}}},
                 "responses": {"200": {"content": {"text/event-stream": {}}}}})
async def post_message(instance_id: str, request: Request, principal: Principal = Depends(current_principal),
                       accept: str | None = Header(None)) -> Any:
    state: ServiceState = request.app.state.xflow
    message = await model_body(request, ChatMessage)
    status = await state.chat_status(principal, instance_id)
    if status != "waiting":
        raise Problem("instance-not-awaiting-input", f"the instance is {status}", instance_status=status)
    if not state.hub.claim_turn(instance_id):
        raise Problem("instance-not-awaiting-input", "the previous message is still being answered",
                      instance_status="running")
    after = state.hub.max_seq(instance_id)
    if after is None:
        records = await state.runtime.history(instance_id)
        after = records[-1]["seq"] if records else -1
    if accept and "text/event-stream" in accept:
        return StreamingResponse(_turn_stream(state, instance_id, message.text, after),
                                 media_type="text/event-stream", headers=HEADERS)
    try:
        with state.hub.subscribe(instance_id, tokens=False) as subscription, runtime_span(request.scope):
            await state.runtime.send_message(instance_id, {"text": message.text})
            record = await settled(subscription, state.options.reply_timeout_seconds, after_seq=after)
    except BaseException:
        state.hub.release_turn(instance_id)
        raise
    if record is None:
        # No reply in time. The status may have come from the hub, which does not see a cancel
        # made by another process: ask the store before saying the message is being worked on.
        status = status_of(await state.owned(principal, instance_id), await state.last_event(instance_id))
        if status in TERMINAL:
            state.hub.status(instance_id, status)  # later messages read the store
            state.hub.release_turn(instance_id)
            raise Problem("instance-not-awaiting-input", f"the instance is {status}", instance_status=status)
        return JSONResponse({"instance_id": instance_id, "status": "running"}, status_code=202,
                            headers={"Location": f"{request.scope.get('root_path') or ''}/v1/instances/{instance_id}"})
    return await _reply(state, instance_id, record)


async def _reply(state: ServiceState, instance_id: str, record: dict[str, Any]) -> dict[str, Any]:
    if record.get("event") == "agent_reply":
        return {"instance_id": instance_id, "status": "waiting", "turn": record.get("turn"),
                "reply": record.get("reply"), "output": None}
    described = await state.describe(instance_id)
    status = "completed" if record.get("event") == "workflow_completed" else "failed"
    return {"instance_id": instance_id, "status": status, "turn": None, "reply": None,
            "output": described.get("output") if status == "completed" else None}


async def _turn_stream(state: ServiceState, instance_id: str, text: str, after: int) -> AsyncIterator[bytes]:
    with state.hub.subscribe(instance_id) as subscription:
        try:
            await state.runtime.send_message(instance_id, {"text": text})
        except BaseException:
            state.hub.release_turn(instance_id)
            raise
        yield b"retry: 3000\n: xflow turn\n\n"
        while True:
            item = await subscription.get(state.options.reply_timeout_seconds)
            if item is None:
                yield frame("error", {"type": "urn:xflow:problem:reply-timeout", "detail": "no reply in time"})
                return
            if item.kind == "record":
                if item.data.get("seq", -1) <= after:
                    continue
                yield frame("record", item.data, item.data.get("seq"))
                if item.data.get("event") in ("agent_reply", *TERMINAL_RECORDS):
                    yield frame("end", {"seq": item.data.get("seq")})
                    return
            elif item.kind == "overflow":
                yield frame("error", {"type": "urn:xflow:problem:stream-overflow", "detail": "reader fell behind"})
                return
            else:
                yield item_frame(item)


@router.get("/instances/{instance_id}/stream", summary="SSE stream of an instance",
            responses={200: {"content": {"text/event-stream": {}}}, 204: {"description": "ended, nothing after the cursor"}})
async def stream(instance_id: str, request: Request, principal: Principal = Depends(current_principal),
                 last_event_id_header: str | None = Header(None, alias="Last-Event-ID"),
                 last_event_id: str | None = Query(None, max_length=40)) -> Any:
    state: ServiceState = request.app.state.xflow
    after = parse_cursor(last_event_id_header, last_event_id)
    row = await state.owned(principal, instance_id)
    if status_of(row, None) in TERMINAL:
        records = await state.runtime.history(instance_id)
        if not records or records[-1]["seq"] <= after:
            return Response(status_code=204)

    async def frames() -> AsyncIterator[bytes]:
        with state.hub.subscribe(instance_id) as subscription:
            state.metrics.sse_streams.inc()
            try:
                async for chunk in instance_stream(state, instance_id, subscription, after):
                    yield chunk
            finally:
                state.metrics.sse_streams.dec()

    return StreamingResponse(frames(), media_type="text/event-stream", headers=HEADERS)
