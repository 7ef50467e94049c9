"""Push-notification callbacks from A2A agents: the per-call token and its verification
(specs/a2a.md §3). Pure and small on purpose: this is the whole of what lets a caller that is
not an xflow principal (the remote agent) reach a waiting instance.

- Each push-mode call gets a URL ``<base>/a2a/callbacks/<instance>/<call>`` and a token of the
  project's one signed-callback format (:mod:`xflow_runtime.callback_tokens`, purpose
  ``a2a-push``, the instance and the call as its claims, no expiry: a late callback is refused by
  the wait's state, 410). The token authenticates that one call (one remote task): a token for
  another call or instance is refused, and no token is stored anywhere (it verifies by its MAC,
  also after a restart).
- The agent sends it back as ``X-A2A-Notification-Token`` (the SDK's sender) or as
  ``Authorization: Bearer <token>`` (our push config names both); compared in constant time.
- The body must be one A2A ``StreamResponse`` (exactly one of ``task``, ``message``,
  ``statusUpdate``, ``artifactUpdate``) naming a task id; the instance checks that id against the
  task it created, and never takes the body's word for the outcome: a callback only wakes the
  wait, which then reads the task from the agent (``GetTask``, a recorded step).
- A delivery's idempotency key is a digest of (call, body): the same delivery twice wakes once.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Mapping

from xflow_runtime.callback_tokens import MIN_SECRET_BYTES, CallbackSigner, InvalidCallbackToken

PURPOSE = "a2a-push"
#: Tokens carry an expiry; push tokens do not need one (the wait decides what is late).
_NEVER = 2**62
_KINDS = ("task", "message", "statusUpdate", "artifactUpdate")


@dataclass(frozen=True)
class Callback:
    """A verified callback: what the instance is told."""

    task_id: str | None
    body: dict[str, Any]
    idempotency_key: str


class CallbackRefused(Exception):
    """``status`` is the HTTP status to answer (401 bad token, 400 bad body)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def secret_bytes(secret: str | bytes) -> bytes:
    key = secret.encode() if isinstance(secret, str) else bytes(secret)
    if len(key) < MIN_SECRET_BYTES:
        raise ValueError(f"the A2A callback secret needs at least {MIN_SECRET_BYTES} bytes")
    return key


def call_token(secret: bytes, instance_id: str, call_id: str) -> str:
    return CallbackSigner(secret).sign(PURPOSE, instance_id, call_id, _NEVER)


def presented_token(headers: Mapping[str, str]) -> str | None:
    """The token the agent sent: ``X-A2A-Notification-Token``, else a Bearer credential."""
    token = headers.get("x-a2a-notification-token")
    if token:
        return token.strip()
    scheme, _, credentials = (headers.get("authorization") or "").partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" and credentials.strip() else None


def verify(secret: bytes, instance_id: str, call_id: str, headers: Mapping[str, str], body: bytes) -> Callback:
    """The callback, or :class:`CallbackRefused`. Checks the token before reading the body."""
    token = presented_token(headers)
    try:
        claims = CallbackSigner(secret).verify(token or "", PURPOSE)
    except InvalidCallbackToken:
        claims = None
    if claims is None or (claims.instance_id, claims.request_id) != (instance_id, call_id):
        raise CallbackRefused(401, "the callback token is not the one issued for this call")
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise CallbackRefused(400, "the callback body is not JSON") from None
    if not isinstance(parsed, dict) or sum(kind in parsed for kind in _KINDS) != 1:
        raise CallbackRefused(400, "the callback body must be one StreamResponse "
                                   "(exactly one of task, message, statusUpdate, artifactUpdate)")
    kind = next(kind for kind in _KINDS if kind in parsed)
    item = parsed[kind] if isinstance(parsed[kind], dict) else {}
    task_id = item.get("id") if kind == "task" else item.get("taskId")
    key = hashlib.sha256(call_id.encode() + b"\n" + body).hexdigest()
    return Callback(task_id=task_id if isinstance(task_id, str) else None, body=parsed, idempotency_key=key)
