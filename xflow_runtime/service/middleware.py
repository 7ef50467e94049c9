"""Pure ASGI middleware (no ``BaseHTTPMiddleware``: it re-wraps streams and breaks SSE
disconnects): a request id, the body bounds (413 from ``Content-Length`` or while the body
streams in, never buffered past the limit; 408 when the body does not arrive within
``body_timeout``), the request-time bound (504 when no response has started within
``request_timeout``; a response that started, such as an SSE stream, is not cut), Prometheus
request metrics labelled by route *template*, one structured access-log line per request
(no bodies, no credentials), and a ``Server-Timing`` header on every response: ``app`` = the
time from the request reaching the service to its response starting, ``body`` (a request with a
body) = the part of it until the whole body had arrived, ``runtime`` (when the handler waited on
the runtime, :func:`runtime_span`) = the part inside the runtime call; ``app − body − runtime``
is what the service itself added (specs/service.md, "Overhead")."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from contextlib import contextmanager
from typing import Any, Awaitable, Callable, Iterator, MutableMapping

from xflow_runtime.service.metrics import ServiceMetrics
from xflow_runtime.service.problems import Problem, problem_response

Scope = dict[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

access_log = logging.getLogger("xflow_runtime.service.access")
RUNTIME_SECONDS = "xflow.runtime_seconds"
BODY_SECONDS = "xflow.body_seconds"


@contextmanager
def runtime_span(scope: MutableMapping[str, Any]) -> Iterator[None]:
    """Count the enclosed wait (a call into the runtime and the wait for its answer) as the
    request's ``runtime`` time in ``Server-Timing``."""
    began = time.perf_counter()
    try:
        yield
    finally:
        scope[RUNTIME_SECONDS] = scope.get(RUNTIME_SECONDS, 0.0) + time.perf_counter() - began


class _TooLarge(Exception):
    pass


class _TooSlow(Exception):
    pass


class ServiceMiddleware:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int, metrics: ServiceMetrics,
                 body_timeout: float = 30.0, request_timeout: float = 150.0) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.metrics = metrics
        self.body_timeout = body_timeout
        self.request_timeout = request_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = uuid.uuid4().hex
        scope["xflow.request_id"] = request_id
        started = time.perf_counter()
        status = 500
        response_started = False
        # Until the response starts: a stream that has started (SSE) is never cut.
        deadline = asyncio.timeout(self.request_timeout)
        timing = False  # while the handler runs under the deadline, before its response starts

        async def send_wrapper(message: Message) -> None:
            nonlocal status, response_started, timing
            if message["type"] == "http.response.start":
                status = message["status"]
                if timing:
                    deadline.reschedule(None)
                    timing = False
                response_started = True
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode()),
                                      (b"server-timing", _server_timing(scope, time.perf_counter() - started))]
            await send(message)

        declared = _content_length(scope)
        try:
            if declared is not None and declared > self.max_body_bytes:
                raise _TooLarge
            timing = True
            try:
                await self._within_time(self.app(scope, self._bounded(receive, scope, started), send_wrapper), deadline)
            finally:
                timing = False
        except _TooLarge:
            if not response_started:
                problem = Problem("payload-too-large", f"the body exceeds {self.max_body_bytes} bytes")
                await problem_response(problem, request_id)(scope, receive, send_wrapper)
        except _TooSlow as slow:
            if not response_started:
                await problem_response(slow.args[0], request_id)(scope, receive, send_wrapper)
        finally:
            elapsed = time.perf_counter() - started
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            self.metrics.observe_request(scope["method"], route, status, elapsed)
            _log_access(scope, route, status, elapsed, request_id)

    async def _within_time(self, handling: Awaitable[None], deadline: asyncio.Timeout) -> None:
        """Run the handler in this task, cancelled (and answered 504) if its response has not
        started when ``deadline`` passes. Every wait a handler does on purpose (``Prefer: wait``, a
        chat reply) is bounded below this, so only a stall reaches it."""
        try:
            async with deadline:
                await handling
        except TimeoutError:
            if not deadline.expired():  # the handler's own timeout, not ours
                raise
            raise _TooSlow(Problem("request-timeout", f"no response within {self.request_timeout:g} s; "
                                   "a retried start with the same Idempotency-Key never starts a second instance"))

    def _bounded(self, receive: Receive, scope: Scope, started: float) -> Receive:
        received = 0
        body_done = False
        deadline = asyncio.get_running_loop().time() + self.body_timeout

        async def bounded() -> Message:
            nonlocal received, body_done
            if body_done:  # later receives wait for a disconnect (SSE): not bounded here
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                raise _TooSlow(Problem("request-body-timeout",
                                       f"the body did not arrive within {self.body_timeout:g} s")) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    raise _TooLarge
                body_done = not message.get("more_body", False)
                if body_done:
                    scope[BODY_SECONDS] = time.perf_counter() - started
            return message

        return bounded


def _server_timing(scope: Scope, elapsed: float) -> bytes:
    runtime = scope.get(RUNTIME_SECONDS)
    value = f"app;dur={elapsed * 1000:.3f}"
    if scope.get(BODY_SECONDS) is not None:
        value += f", body;dur={scope[BODY_SECONDS] * 1000:.3f}"
    if runtime is not None:
        value += f", runtime;dur={runtime * 1000:.3f}"
    return value.encode()


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
