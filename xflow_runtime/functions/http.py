"""Sending one HTTP request and turning the outcome into data or a :class:`WorkflowError`.

Shared by ``rest``, ``graphql``, OpenAPI document fetches and OAuth2 token requests. Error codes
(specs/functions.md §errors): a non-2xx status → ``code = str(status)``; a timeout →
``"timeout"``; a refused/failed connection → ``"ConnectError"``; any other transport failure →
the httpx exception class name. Messages carry method and URL without the query string (which
may hold credentials), and every known secret is redacted.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any

from xflow_runtime.error_codes import CONNECT_ERROR, TIMEOUT
from xflow_runtime.errors import WorkflowError
from xflow_runtime.functions.context import FunctionContext

#: How much of an error response body is kept in ``WorkflowError.details``.
_BODY_EXCERPT = 2000


@dataclass
class HttpRequest:
    method: str
    url: str
    params: list[tuple[str, str]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    cookies: dict[str, str] = field(default_factory=dict)
    json_body: Any = None
    has_body: bool = False
    form: dict[str, Any] | None = None
    timeout: float | None = None  # seconds; None → the client's default


async def send(context: FunctionContext, what: str, request: HttpRequest) -> Any:
    """Send ``request``; the response must be 2xx. Returns the httpx response."""
    import httpx

    where = f"{request.method.upper()} {request.url}"
    context.log.debug("%s: %s", what, where)
    headers = _traced(request.headers)
    kwargs: dict[str, Any] = {"params": request.params or None, "headers": headers or None}
    if request.timeout is not None:
        kwargs["timeout"] = request.timeout
    if request.cookies:
        # httpx deprecates per-request cookies; a Cookie header has the same effect.
        cookie = "; ".join(f"{name}={value}" for name, value in request.cookies.items())
        kwargs["headers"] = {**(headers or {}), "Cookie": cookie}
    if request.form is not None:
        kwargs["data"] = request.form
    elif request.has_body:
        kwargs["content"] = json.dumps(request.json_body, separators=(",", ":")).encode()
        kwargs["headers"] = {"Content-Type": "application/json", **(kwargs["headers"] or {})}
    try:
        response = await context.client().request(request.method.upper(), request.url, **kwargs)
    except httpx.TimeoutException as exc:
        raise _transport_error(context, what, where, TIMEOUT, exc) from None
    except httpx.ConnectError as exc:
        raise _transport_error(context, what, where, CONNECT_ERROR, exc) from None
    except httpx.HTTPError as exc:
        raise _transport_error(context, what, where, type(exc).__name__, exc) from None
    context.log.debug("%s: %s → %s", what, where, response.status_code)
    return response


def _traced(headers: dict[str, str]) -> dict[str, str]:
    """The headers plus the current span's ``traceparent`` when tracing is on (a ``traceparent``
    the workflow sets itself is kept)."""
    if "opentelemetry.trace" not in sys.modules or any(name.lower() == "traceparent" for name in headers):
        return headers
    from xflow_runtime.telemetry import inject_trace_context

    return dict(inject_trace_context(dict(headers)))


def raise_for_status(context: FunctionContext, what: str, response: Any) -> None:
    if 200 <= response.status_code < 300:
        return
    status = response.status_code
    body = decode_body(response)
    excerpt = body if not isinstance(body, str) else body[:_BODY_EXCERPT]
    where = f"{response.request.method} {_without_query(str(response.request.url))}"
    message = context.redactor.redact(f"{what}: HTTP {status} {response.reason_phrase} from {where}")
    raise WorkflowError(message, code=str(status), status=status, details={"body": _redact_value(context, excerpt)})


def decode_body(response: Any) -> Any:
    """JSON when the content type says so (``application/json``, ``+json``), else text; empty → None."""
    if not response.content:
        return None
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == "application/json" or content_type.endswith("+json"):
        try:
            return response.json()
        except ValueError:
            return response.text
    return response.text


def _transport_error(context: FunctionContext, what: str, where: str, code: str, exc: Exception) -> WorkflowError:
    reason = str(exc) or type(exc).__name__
    message = context.redactor.redact(f"{what}: {_without_query(where)} failed: {reason}")
    return WorkflowError(message, code=code, details={"exception": type(exc).__name__})


def _without_query(url: str) -> str:
    return url.split("?", 1)[0]


def _redact_value(context: FunctionContext, value: Any) -> Any:
    if isinstance(value, str):
        return context.redactor.redact(value)
    try:
        return json.loads(context.redactor.redact(json.dumps(value)))
    except (TypeError, ValueError):
        return None
