"""Pure mapping of a ``rest`` function's arguments onto an HTTP request (no I/O).

The rules (specs/functions.md §rest arguments):

1. Each declared OpenAPI parameter takes the argument of the same name and goes where its
   ``in`` says: ``path`` (substituted into ``{name}``, percent-encoded), ``query``, ``header``,
   ``cookie``; Swagger 2 ``body`` takes that argument as the whole body.
2. A ``{name}`` placeholder with no declared parameter still takes the argument ``name``.
   A declared path parameter with no placeholder is appended as a path segment (xFlow's
   ``{"/users": {get: {parameters: [{name: id, in: path}]}}}`` targets ``/users/{id}``).
3. The arguments no parameter took ("the rest") become the JSON body when the operation
   declares a ``requestBody`` or its method is POST/PUT/PATCH, and query parameters otherwise.
   A parameter whose name is also a property of the JSON request-body schema stays in the body.
4. Null and absent arguments are left out; a missing required (or path) parameter is an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import quote

BODY_METHODS = frozenset({"post", "put", "patch"})
LOCATIONS = frozenset({"path", "query", "header", "cookie", "body"})


class ArgumentError(ValueError):
    """The arguments do not fit the operation (a missing required parameter, a wrong shape)."""


@dataclass(frozen=True)
class Parameter:
    name: str
    location: str
    required: bool = False


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
    query: list[tuple[str, str]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    cookies: dict[str, str] = field(default_factory=dict)
    body: Any = None
    has_body: bool = False


def map_arguments(operation: RestOperation, arguments: Any) -> MappedRequest:
    """Place ``arguments`` into path, query, headers, cookies and body of ``operation``."""
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
            request.query.extend((parameter.name, text) for text in _query_values(value))
        elif parameter.location == "header":
            request.headers[parameter.name] = _scalar_text(value, separator=",")
        elif parameter.location == "cookie":
            request.cookies[parameter.name] = _scalar_text(value, separator=",")
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
                request.query.extend((key, text) for text in _query_values(value))
    return request


def _fill_path(operation: RestOperation, arguments: Mapping[str, Any]) -> tuple[str, set[str]]:
    path, consumed = operation.path, set()
    for name in sorted(_placeholders(path)):
        path = path.replace("{" + name + "}", _path_segment(operation, name, arguments))
        consumed.add(name)
    for parameter in operation.parameters:  # declared but not templated: append, in order
        if parameter.location == "path" and parameter.name not in consumed:
            path = path.rstrip("/") + "/" + _path_segment(operation, parameter.name, arguments)
            consumed.add(parameter.name)
    return path, consumed


def _path_segment(operation: RestOperation, name: str, arguments: Mapping[str, Any]) -> str:
    value = arguments.get(name)
    if value is None:
        raise ArgumentError(f"missing path parameter '{name}' for {operation.path}")
    # safe="": a value never adds path separators (and '{' is encoded, so no re-substitution).
    return quote(_scalar_text(value, separator=","), safe="")


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


def _query_values(value: Any) -> list[str]:
    """Arrays repeat the key (OpenAPI ``form`` style, ``explode: true``, the default)."""
    if isinstance(value, (list, tuple)):
        return [_scalar_text(item, separator=",") for item in value if item is not None]
    return [_scalar_text(value, separator=",")]


def _scalar_text(value: Any, *, separator: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return separator.join(_scalar_text(item, separator=separator) for item in value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
