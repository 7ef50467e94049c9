"""RFC 9457 problem details: every 4xx/5xx the service answers is ``application/problem+json``
with a stable ``type`` (``urn:xflow:problem:<slug>``), the HTTP ``status``, a ``title`` that is
the same for every occurrence of the type, a ``detail`` about this request (never a traceback or
internal text), ``instance`` (the request id) and, for invalid fields, ``errors: [{pointer,
detail}]`` with JSON Pointers. The full list of types is in ``specs/service.md``."""

from __future__ import annotations

import json
import logging
from typing import Any, Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from xflow_runtime.privacy.subject import SubjectErased

PROBLEM_MEDIA_TYPE = "application/problem+json"
TYPE_PREFIX = "urn:xflow:problem:"
_log = logging.getLogger("xflow_runtime.service")

#: slug → (status, title). Titles never change per occurrence (RFC 9457 §3.1.3).
PROBLEM_TYPES: dict[str, tuple[int, str]] = {
    "malformed-json": (400, "The request body is not valid JSON"),
    "invalid-cursor": (400, "The pagination cursor is not valid"),
    "invalid-parameter": (400, "A query parameter or header is not valid"),
    "idempotency-key-invalid": (400, "The Idempotency-Key header is not valid"),
    "cloudevent-invalid": (400, "The CloudEvent is not valid"),
    "unauthenticated": (401, "Authentication is required"),
    "forbidden": (403, "The credential does not allow this operation"),
    "not-found": (404, "The resource does not exist"),
    "method-not-allowed": (405, "The method is not allowed on this resource"),
    "not-acceptable": (406, "No acceptable representation"),
    "instance-not-awaiting-input": (409, "The instance is not waiting for a message"),
    "instance-terminal": (409, "The instance has already ended"),
    "instance-running": (409, "The instance is still running"),
    "request-body-timeout": (408, "The request body did not arrive in time"),
    "a2a-callback-late": (410, "The wait this callback was for is over"),
    "payload-too-large": (413, "The request body is too large"),
    "unsupported-media-type": (415, "The request content type is not supported"),
    "validation-error": (422, "The request is not valid"),
    "idempotency-key-reused": (422, "The Idempotency-Key was used with another request"),
    "workflow-invalid": (422, "The workflow definition is not valid"),
    "internal": (500, "Internal server error"),
    "not-ready": (503, "The service is not ready"),
    "erasure-incomplete": (503, "The erasure could not finish yet"),
    "reply-timeout": (504, "The instance did not answer in time"),
    "request-timeout": (504, "The request took too long"),
}


class Problem(Exception):
    """Raised anywhere in a request; answered as a problem document."""

    def __init__(self, slug: str, detail: str | None = None, *, errors: list[dict[str, str]] | None = None,
                 headers: Mapping[str, str] | None = None, **extensions: Any) -> None:
        super().__init__(detail or slug)
        self.slug = slug
        self.status, self.title = PROBLEM_TYPES[slug]
        self.detail = detail
        self.errors = errors
        self.headers = dict(headers or {})
        self.extensions = extensions


def problem_response(problem: Problem, request_id: str | None = None) -> Response:
    body: dict[str, Any] = {"type": TYPE_PREFIX + problem.slug, "title": problem.title, "status": problem.status}
    if problem.detail:
        body["detail"] = problem.detail
    if request_id:
        body["instance"] = f"urn:xflow:request:{request_id}"
    if problem.errors:
        body["errors"] = problem.errors
    body.update(problem.extensions)
    return Response(json.dumps(body, separators=(",", ":")), status_code=problem.status,
                    media_type=PROBLEM_MEDIA_TYPE, headers=problem.headers)


def pointer(location: tuple[Any, ...] | list[Any]) -> str:
    """A JSON Pointer (RFC 6901) for a pydantic error location (``body`` dropped)."""
    parts = [str(p) for p in location[1:]] if location and location[0] == "body" else [str(p) for p in location]
    return "#/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def validation_problem(errors: list[Mapping[str, Any]]) -> Problem:
    """Field errors without the offending input (it may be huge, secret, or NaN)."""
    items = [{"pointer": pointer(tuple(e.get("loc", ()))), "detail": str(e.get("msg", "invalid"))} for e in errors]
    where = ", ".join(sorted({i["pointer"] for i in items})) or "#/"
    return Problem("validation-error", f"invalid value at {where}", errors=items)


_STATUS_SLUGS = {400: "malformed-json", 401: "unauthenticated", 403: "forbidden", 404: "not-found",
                 405: "method-not-allowed", 406: "not-acceptable", 413: "payload-too-large",
                 415: "unsupported-media-type", 422: "validation-error", 503: "not-ready"}


def install_problem_handlers(app: FastAPI) -> None:
    async def on_problem(request: Request, error: Exception) -> Response:
        assert isinstance(error, Problem)
        return problem_response(error, request.scope.get("xflow.request_id"))

    async def on_validation(request: Request, error: Exception) -> Response:
        assert isinstance(error, RequestValidationError)
        return problem_response(validation_problem(list(error.errors())), request.scope.get("xflow.request_id"))

    async def on_http(request: Request, error: Exception) -> Response:
        assert isinstance(error, StarletteHTTPException)
        slug = _STATUS_SLUGS.get(error.status_code, "internal" if error.status_code >= 500 else "invalid-parameter")
        problem = Problem(slug, headers=error.headers or {})
        if slug == "not-found":
            problem.detail = f"no resource at {request.url.path}"
        elif slug == "method-not-allowed":
            problem.detail = f"{request.method} is not allowed on {request.url.path}"
        return problem_response(problem, request.scope.get("xflow.request_id"))

    async def on_erased(request: Request, error: Exception) -> Response:
        # the caller's user was erased during the request (an instance whose start raced it)
        return problem_response(Problem("forbidden", "the user was erased"), request.scope.get("xflow.request_id"))

    async def on_error(request: Request, error: Exception) -> Response:
        request_id = request.scope.get("xflow.request_id")
        _log.error("request %s failed: %s", request_id, type(error).__name__, exc_info=error)
        return problem_response(Problem("internal", "the request failed; quote the instance id to the operator"),
                                request_id)

    app.add_exception_handler(Problem, on_problem)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(SubjectErased, on_erased)
    app.add_exception_handler(Exception, on_error)
