"""Callbacks of asynchronous ``aiagentproxy`` agents (specs/states-human.md §7).

The state gives the agent a request id, a callback URL and a per-request token
(:mod:`xflow_runtime.callback_tokens`, purpose :data:`PURPOSE`, bound to the instance and the
request, expiring when the state stops waiting). A callback is checked here, once, for the HTTP
route and the Python API alike:

1. the token verifies (else ``forbidden``; an expired one is ``gone``) and names this request;
2. the body is an answer: ``{returnValues, log?}`` or ``{error: {message, code?}}`` (else ``invalid``);
3. the answer is recorded on the request's row and the instance woken, as one recoverable
   operation on a durable runtime (``engine/durable/wakes.py``). The row decides: a second
   callback with the same answer is a duplicate (accepted, nothing changes), another answer is a
   ``conflict``, a request timed out is ``gone``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping
from urllib.parse import quote, urlsplit

from xflow_runtime.callback_tokens import CallbackSigner, InvalidCallbackToken
from xflow_runtime.errors import XFlowError

if TYPE_CHECKING:
    from xflow_runtime.agent.proxy_requests import ProxyRequestStore
    from xflow_runtime.runtime import Runtime

PURPOSE = "aiagentproxy"
#: The wake-up CloudEvent (no answer inside: the instance reads the row) and its request attribute.
ANSWERED = "io.xflow.agentproxy.answered"
REQUEST_ATTRIBUTE = "xflowrequestid"
WAKE_KIND = "agent-proxy"
#: How long a proxy state waits for its callback without ``timeouts.eventTimeout``.
DEFAULT_WAIT_SECONDS = 24 * 3600.0
CALLBACK_PATH = "/v1/callbacks/agent-proxy/"


@dataclass(frozen=True)
class CallbackSettings:
    """Where agents call back (the service's public base URL) and the secrets that sign their
    tokens (the first signs, all verify; ≥ 32 bytes each)."""

    base_url: str
    secrets: tuple[bytes | str, ...]
    signer: CallbackSigner = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise XFlowError(f"the callback base URL must be an http(s) URL, got {self.base_url!r}")
        try:
            object.__setattr__(self, "signer", CallbackSigner(self.secrets))
        except ValueError as error:
            raise XFlowError(str(error)) from None


class CallbackError(XFlowError):
    """``kind``: ``not-found``, ``forbidden`` (a token not ours, or for another request),
    ``gone`` (late), ``conflict`` (answered already, otherwise) or ``invalid`` (not an answer)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class AgentCallbacks:
    """The request store of proxy states, and the callback settings when the runtime has them
    (without them, proxy agents can only answer synchronously)."""

    def __init__(self, settings: CallbackSettings | None, store: "ProxyRequestStore") -> None:
        self.settings = settings
        self.store = store

    @property
    def enabled(self) -> bool:
        return self.settings is not None

    def callback_for(self, instance_id: str, request_id: str, expires_at: float) -> tuple[str, str]:
        """(callback URL carrying the token, the token alone) for one request."""
        assert self.settings is not None
        token = self.settings.signer.sign(PURPOSE, instance_id, request_id, expires_at)
        url = f"{self.settings.base_url.rstrip('/')}{CALLBACK_PATH}{quote(request_id, safe='')}?token={token}"
        return url, token

    async def deliver(self, runtime: "Runtime", request_id: str, token: str | None, body: Any) -> dict[str, Any]:
        """Check and record a callback; ``{requestId, status: "answered", duplicate}``."""
        if self.settings is None:
            raise CallbackError("not-found", "this runtime takes no agent callbacks")
        if not token:
            raise CallbackError("forbidden", "the callback carries no token")
        try:
            claims = self.settings.signer.verify(token, PURPOSE)
        except InvalidCallbackToken as error:
            if error.reason == "expired":
                raise CallbackError("gone", "the request is no longer waited for (its token expired)") from None
            raise CallbackError("forbidden", str(error)) from None
        if claims.request_id != request_id:
            raise CallbackError("forbidden", "the callback token is for another request")
        arguments = {"request_id": request_id, "instance_id": claims.instance_id, "answer": answer_of(body)}
        durable = runtime._durable  # noqa: SLF001 - the runtime's own engine
        if durable is not None:
            outcome = await durable.write_then_wake(WAKE_KIND, arguments, instance_id=claims.instance_id)
        else:
            outcome = await answer_and_ask_to_wake(self.store, arguments)
            for wake in outcome.get("wake") or ():
                await _wake_in_process(runtime, wake)
        if "error" in outcome:
            raise CallbackError(outcome["error"]["kind"], outcome["error"]["message"])
        return outcome["result"]


def answer_of(body: Any) -> dict[str, Any]:
    """The answer a callback body carries: ``{returnValues, log?}`` or ``{error: {message, code?}}``."""
    if not isinstance(body, Mapping):
        raise CallbackError("invalid", "the callback body must be a JSON object")
    if "returnValues" in body:
        if body["returnValues"] is None:
            raise CallbackError("invalid", "returnValues must not be null")
        log = body.get("log")
        if log is not None and not isinstance(log, str):
            raise CallbackError("invalid", "log must be a string")
        return {"returnValues": body["returnValues"], "log": log}
    error = body.get("error")
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        code = error.get("code")
        return {"error": {"message": error["message"], "code": code if isinstance(code, str) else None}}
    raise CallbackError("invalid", "a callback body is {returnValues, log?} or {error: {message, code?}}")


async def answer_and_ask_to_wake(store: "ProxyRequestStore", arguments: dict[str, Any]) -> dict[str, Any]:
    """The write of a callback: ``{"result", "wake"}`` or ``{"error"}``. Safe to run again: the
    answer recorded by a first run is a duplicate the second time, and asks for the same
    wake-up (event id ``agent-proxy:<request>``, stored once by the engine)."""
    from xflow_runtime.agent.proxy_requests import RequestRefused

    request_id = arguments["request_id"]
    try:
        request, duplicate = await asyncio.to_thread(store.answer, request_id, arguments["instance_id"],
                                                     arguments["answer"], now=time.time())
    except RequestRefused as refused:
        return {"error": {"kind": refused.kind, "message": str(refused)}}
    event = {"specversion": "1.0", "id": f"agent-proxy:{request_id}", "source": "/xflow/agent-proxy",
             "type": ANSWERED, REQUEST_ATTRIBUTE: request_id, "datacontenttype": "application/json", "data": {}}
    return {"result": {"requestId": request_id, "status": request.status, "duplicate": duplicate},
            "wake": [{"instance": request.instance_id, "event": event}]}


async def _wake_in_process(runtime: "Runtime", wake: dict[str, Any]) -> None:
    from xflow_runtime.runtime import UnknownInstance

    try:
        await runtime.send_event(wake["event"], instance_id=wake["instance"])
    except UnknownInstance:
        pass  # the instance is gone: the row tells what happened
