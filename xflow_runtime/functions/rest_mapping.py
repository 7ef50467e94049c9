"""Pure mapping of a ``rest`` function's arguments onto an HTTP request (no I/O).

The rules (specs/functions.md §rest arguments):

1. Each declared OpenAPI parameter takes the argument of the same name and goes where its
   ``in`` says: ``path`` (substituted into ``{name}``), ``query``, ``header``, ``cookie``, written
   in its ``style`` (``parameter_styles``); Swagger 2 ``body`` takes that argument as the whole body.
2. A ``{name}`` placeholder with no declared parameter still takes the argument ``name``.
   A declared path parameter with no placeholder is appended as a path segment (xFlow's
   ``{"/users": {get: {parameters: [{name: id, in: path}]}}}`` targets ``/users/{id}``).
3. The arguments no parameter took ("the rest") become the JSON body when the operation
   declares a ``requestBody`` or its method is POST/PUT/PATCH, and query parameters otherwise.
   A parameter whose name is also a property of the JSON request-body schema stays in the body.
4. Null and absent arguments are left out; a missing required (or path) parameter is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from xflow_runtime.functions.parameter_styles import (
    Style, StyleError, default_style, plain_query, serialize_cookie, serialize_header, serialize_path,
    serialize_query,
)

BODY_METHODS = frozenset({"post", "put", "patch"})
LOCATIONS = frozenset({"path", "query", "header", "cookie", "body"})


class ArgumentError(ValueError):
    """The arguments do not fit the operation (a missing required parameter, a wrong shape)."""


@dataclass(frozen=True)
class Parameter:
    name: str
    location: str
    required: bool = False
    style: Style | None = None  # None: the location's default (simple for path/header, form otherwise)

    @property
    def serialization(self) -> Style:
        return self.style or default_style(self.location)


@dataclass(frozen=True)
class RestOperation:
    """One HTTP operation, from an OpenAPI document or an xFlow inline Paths Object."""

    method: str
    path: str
    parameters: tuple[Parameter, ...] = ()
    has_request_body: bool = False
    request_body_required: bool = False
    body_properties: frozenset[str] = frozenset()
    servers: tuple[str, ...] = ()


@dataclass
class MappedRequest:
    path: str
    #: ``key=value`` pieces, already percent-encoded (the style decides the encoding)
    query: list[str] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    #: ``name=value`` pieces of the ``Cookie`` header
    cookies: list[str] = field(default_factory=list)
    body: Any = None
    has_body: bool = False

    @property
    def query_string(self) -> str:
        return "&".join(self.query)

    @property
    def cookie_header(self) -> str:
        return "; ".join(self.cookies)


def map_arguments(operation: RestOperation, arguments: Any) -> MappedRequest:
    """Place ``arguments`` into path, query, headers, cookies and body of ``operation``."""
    try:
        return _map(operation, arguments)
    except StyleError as exc:
        raise ArgumentError(str(exc)) from None


def _map(operation: RestOperation, arguments: Any) -> MappedRequest:
    wants_body = operation.has_request_body or operation.method in BODY_METHODS
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        if not wants_body:
            raise ArgumentError(
                f"arguments of {operation.method.upper()} {operation.path} must be an object, "
                f"found {type(arguments).__name__}"
            )
        _check_required(operation, {})
        return MappedRequest(path=_fill_path(operation, {})[0], body=arguments, has_body=True)

    request = MappedRequest(path="")
    request.path, consumed = _fill_path(operation, arguments)
    body_parameter: Parameter | None = None
    for parameter in operation.parameters:
        if parameter.location == "path":
            continue
        value = arguments.get(parameter.name)
        if value is None:
            if parameter.required:
                raise ArgumentError(f"missing required {parameter.location} parameter '{parameter.name}'")
            continue
        consumed.add(parameter.name)
        if parameter.location == "query":
            request.query.extend(serialize_query(parameter.name, value, parameter.serialization))
        elif parameter.location == "header":
            request.headers[parameter.name] = serialize_header(parameter.name, value, parameter.serialization)
        elif parameter.location == "cookie":
            request.cookies.extend(serialize_cookie(parameter.name, value, parameter.serialization))
        else:
            body_parameter = parameter
            request.body, request.has_body = value, True

    rest = {
        key: value for key, value in arguments.items()
        if value is not None and (key not in consumed or key in operation.body_properties)
    }
    if body_parameter is None:
        if wants_body:
            if rest or operation.request_body_required:
                request.body, request.has_body = rest, True
        else:
            for key, value in rest.items():
                request.query.extend(plain_query(key, value))
    return request


def _fill_path(operation: RestOperation, arguments: Mapping[str, Any]) -> tuple[str, set[str]]:
    path, consumed = operation.path, set()
    styles = {p.name: p.serialization for p in operation.parameters if p.location == "path"}
    for name in sorted(_placeholders(path)):
        path = path.replace("{" + name + "}", _path_segment(operation, name, arguments, styles))
        consumed.add(name)
    for parameter in operation.parameters:  # declared but not templated: append, in order
        if parameter.location == "path" and parameter.name not in consumed:
            path = path.rstrip("/") + "/" + _path_segment(operation, parameter.name, arguments, styles)
            consumed.add(parameter.name)
    return path, consumed


def _path_segment(operation: RestOperation, name: str, arguments: Mapping[str, Any],
                  styles: Mapping[str, Style]) -> str:
    value = arguments.get(name)
    if value is None:
        raise ArgumentError(f"missing path parameter '{name}' for {operation.path}")
    # Every value character is percent-encoded: a value never adds path separators (and '{' is
    # encoded, so no re-substitution); only the style's own delimiters stay.
    return serialize_path(name, value, styles.get(name) or default_style("path"))


def _placeholders(path: str) -> set[str]:
    names, start = set(), path.find("{")
    while start != -1:
        end = path.find("}", start)
        if end == -1:
            break
        names.add(path[start + 1:end])
        start = path.find("{", end)
    return names


def _check_required(operation: RestOperation, arguments: Mapping[str, Any]) -> None:
    for parameter in operation.parameters:
        if (parameter.required or parameter.location == "path") and parameter.location != "body":
            if arguments.get(parameter.name) is None:
                raise ArgumentError(f"missing required {parameter.location} parameter '{parameter.name}'")
