"""Pure ASGI middleware (no ``BaseHTTPMiddleware``: it re-wraps streams and breaks SSE
disconnects): a request id, the body-size bound (413 from ``Content-Length`` or while the body
streams in, never buffered past the limit), Prometheus request metrics labelled by route
*template*, and one structured access-log line per request (no bodies, no credentials)."""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any, Awaitable, Callable, MutableMapping

from xflow_runtime.service.metrics import ServiceMetrics
from xflow_runtime.service.problems import Problem, problem_response

Scope = dict[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

access_log = logging.getLogger("xflow_runtime.service.access")


class _TooLarge(Exception):
    pass


class ServiceMiddleware:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int, metrics: ServiceMetrics) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = uuid.uuid4().hex
        scope["xflow.request_id"] = request_id
        started = time.perf_counter()
        status = 500
        response_started = False

        async def send_wrapper(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status = message["status"]
                response_started = True
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode())]
            await send(message)

        declared = _content_length(scope)
        try:
            if declared is not None and declared > self.max_body_bytes:
                raise _TooLarge
            await self.app(scope, self._bounded(receive), send_wrapper)
        except _TooLarge:
            if not response_started:
                problem = Problem("payload-too-large", f"the body exceeds {self.max_body_bytes} bytes")
                await problem_response(problem, request_id)(scope, receive, send_wrapper)
        finally:
            elapsed = time.perf_counter() - started
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            self.metrics.observe_request(scope["method"], route, status, elapsed)
            _log_access(scope, route, status, elapsed, request_id)

    def _bounded(self, receive: Receive) -> Receive:
        received = 0

        async def bounded() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    raise _TooLarge
            return message

        return bounded


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _log_access(scope: Scope, route: str, status: int, elapsed: float, request_id: str) -> None:
    if not access_log.isEnabledFor(logging.INFO):
        return
    principal = scope.get("xflow.principal")
    access_log.info(json.dumps({
        "request_id": request_id, "method": scope["method"], "route": route, "path": scope.get("path"),
        "status": status, "duration_ms": round(elapsed * 1000, 3),
        "tenant": getattr(principal, "tenant", None), "client": (scope.get("client") or ("", 0))[0],
    }, separators=(",", ":")))
