"""Callbacks of asynchronous ``aiagentproxy`` agents (specs/states-human.md §7):
``POST /v1/callbacks/agent-proxy/{requestId}?token=…`` with ``{returnValues, log?}`` or
``{error: {message, code?}}``.

No service credential: the per-request token the state gave the agent is the credential (in the
``token`` query parameter of the callback URL, or an ``X-Xflow-Callback-Token`` header). The
access log shows only the route template, never the token. Answers: 200 ``{requestId, status,
duplicate}`` (a repeated identical callback is a duplicate that changes nothing); 403
``callback-token-invalid`` (forged, another service's, another request's); 404 (no such request);
409 ``callback-conflict`` (answered already, with another answer); 410 ``callback-late`` (the
state stopped waiting: timed out); 422 ``callback-invalid`` (not an answer)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request

from xflow_runtime.agent.proxy_callbacks import CallbackError
from xflow_runtime.service.body import json_body
from xflow_runtime.service.problems import PROBLEM_TYPES, Problem
from xflow_runtime.service.state import ServiceState

PROBLEM_TYPES.setdefault("callback-token-invalid", (403, "The callback token is not valid for this request"))
PROBLEM_TYPES.setdefault("callback-conflict", (409, "The request was answered already"))
PROBLEM_TYPES.setdefault("callback-late", (410, "The request is no longer waited for"))
PROBLEM_TYPES.setdefault("callback-invalid", (422, "The callback body is not an answer"))
_SLUG_OF = {"forbidden": "callback-token-invalid", "not-found": "not-found", "conflict": "callback-conflict",
            "gone": "callback-late", "invalid": "callback-invalid"}
_ANSWER_SCHEMA = {"type": "object", "description": "{returnValues, log?} or {error: {message, code?}}",
                  "properties": {"returnValues": {}, "log": {"type": "string"},
                                 "error": {"type": "object", "properties": {"message": {"type": "string"},
                                                                            "code": {"type": "string"}}}}}

router = APIRouter(prefix="/v1", tags=["callbacks"])


@router.post("/callbacks/agent-proxy/{request_id}", summary="An asynchronous proxy agent's answer",
             openapi_extra={"requestBody": {"required": True,
                                            "content": {"application/json": {"schema": _ANSWER_SCHEMA}}}})
async def agent_proxy_callback(request_id: str, request: Request,
                               token: str | None = Query(None, max_length=2048)) -> dict[str, Any]:
    state: ServiceState = request.app.state.xflow
    await state.open()
    given = token or request.headers.get("x-xflow-callback-token")
    if not given:
        raise Problem("callback-token-invalid", "the callback carries no token")
    body = await json_body(request)
    try:
        return await state.runtime.agent_callback(request_id, given, body)
    except CallbackError as error:
        raise Problem(_SLUG_OF[error.kind], str(error)) from None
