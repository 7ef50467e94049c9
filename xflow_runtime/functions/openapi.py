"""OpenAPI documents: loading (file or http(s)), caching, and finding an operation.

Supports OpenAPI 3.x (``servers``, ``requestBody``) and Swagger 2.0 (``host``/``basePath``/
``schemes``, ``in: body``), local ``$ref``s (``#/...``) for parameters and request bodies, and
xFlow's inline Paths Object. Files are cached process-wide by path and modification time;
documents fetched over HTTP are cached in the :class:`FunctionContext` (they may need the
function's credentials). Decisions: specs/functions.md §rest.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import urljoin

import yaml

from xflow_runtime.errors import WorkflowError
from xflow_runtime.functions.context import FunctionContext
from xflow_runtime.functions.http import HttpRequest, decode_body, raise_for_status, send
from xflow_runtime.functions.rest_mapping import LOCATIONS, Parameter, RestOperation
from xflow_runtime.plan.functions import HTTP_METHODS, FunctionDef

#: Code of errors about a function's OpenAPI document or server configuration.
CONFIGURATION_ERROR = "ConfigurationError"
#: Code of the error raised when the operationId does not exist in the document.
FUNCTION_NOT_FOUND = "FunctionNotFound"


@dataclass(frozen=True)
class OpenApiDocument:
    """A parsed document and its operations indexed by ``operationId``."""

    location: str
    operations: Mapping[str, RestOperation]


_file_cache: dict[tuple[str, int, int], OpenApiDocument] = {}
_file_lock = threading.Lock()


def split_operation(fn: FunctionDef) -> tuple[str, str]:
    """``"<document>#<operationId>"`` → (document, operationId); the last ``#`` separates them."""
    location, _, operation_id = str(fn.operation).rpartition("#")
    return location, operation_id


def inline_operation(paths: Mapping[str, Any]) -> RestOperation:
    """The single operation of an xFlow inline Paths Object (checked by the plan compiler)."""
    path, item = next(iter(paths.items()))
    method = next(key for key in item if key in HTTP_METHODS)
    return _operation({}, path, item, method, document_servers=())


async def load_document(fn: FunctionDef, location: str, context: FunctionContext, headers: dict[str, str]) -> OpenApiDocument:
    if location.startswith(("http://", "https://")):
        cached = context.documents.get(location)
        if isinstance(cached, OpenApiDocument):
            return cached
        response = await send(context, f"function '{fn.name}' OpenAPI document", HttpRequest("get", location, headers=headers))
        raise_for_status(context, f"function '{fn.name}' OpenAPI document", response)
        body = decode_body(response)
        raw = _parse(location, body) if isinstance(body, str) else body
        document = _index(location, raw, base_url=location)
        context.documents[location] = document
        return document
    return _load_file(fn, _file_path(location, fn.base_dir))


def _load_file(fn: FunctionDef, path: str) -> OpenApiDocument:
    try:
        stat = os.stat(path)
    except OSError as exc:
        raise WorkflowError(
            f"function '{fn.name}': cannot read OpenAPI document {path}: {exc.strerror}", code=CONFIGURATION_ERROR,
        ) from None
    key = (path, stat.st_mtime_ns, stat.st_size)
    cached = _file_cache.get(key)
    if cached is not None:
        return cached
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    document = _index(path, _parse(path, text), base_url=None)
    with _file_lock:
        _file_cache[key] = document
    return document


def _file_path(location: str, base_dir: str | None) -> str:
    if location.startswith("file://"):
        location = location[len("file://"):]
    if not os.path.isabs(location):
        location = os.path.join(base_dir or os.getcwd(), location)
    return os.path.normpath(location)


def _parse(location: str, text: str) -> Any:
    try:
        return json.loads(text) if location.endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise WorkflowError(f"OpenAPI document {location} does not parse: {exc}", code=CONFIGURATION_ERROR) from None


def _index(location: str, raw: Any, *, base_url: str | None) -> OpenApiDocument:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("paths"), Mapping):
        raise WorkflowError(f"OpenAPI document {location} has no 'paths' object", code=CONFIGURATION_ERROR)
    servers = _document_servers(raw, base_url)
    operations: dict[str, RestOperation] = {}
    for path, item in raw["paths"].items():
        if not isinstance(item, Mapping):
            continue
        item = _resolve(raw, item)
        for method in HTTP_METHODS:
            spec = item.get(method)
            if isinstance(spec, Mapping) and isinstance(spec.get("operationId"), str):
                operations[spec["operationId"]] = _operation(raw, path, item, method, servers, base_url)
    return OpenApiDocument(location=location, operations=operations)


def _operation(raw: Mapping[str, Any], path: str, item: Mapping[str, Any], method: str,
               document_servers: tuple[str, ...], base_url: str | None = None) -> RestOperation:
    spec = item[method] or {}
    if not isinstance(spec, Mapping):
        raise WorkflowError(f"{method.upper()} {path}: the operation must be an object", code=CONFIGURATION_ERROR)
    parameters: dict[tuple[str, str], Parameter] = {}
    for source in (item.get("parameters") or [], spec.get("parameters") or []):  # operation level wins
        if not isinstance(source, list):
            raise WorkflowError(f"{method.upper()} {path}: 'parameters' must be a list", code=CONFIGURATION_ERROR)
        for entry in source:
            entry = _resolve(raw, entry)
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                raise WorkflowError(
                    f"{method.upper()} {path}: every parameter needs a string 'name'", code=CONFIGURATION_ERROR,
                )
            location = entry.get("in")
            if location not in LOCATIONS:
                raise WorkflowError(
                    f"{method.upper()} {path}: parameter '{entry.get('name')}' has unsupported location "
                    f"{location!r} (supported: {', '.join(sorted(LOCATIONS))})", code=CONFIGURATION_ERROR,
                )
            parameters[(entry["name"], location)] = Parameter(
                name=entry["name"], location=location, required=bool(entry.get("required")) or location == "path",
            )
    body = _resolve(raw, spec.get("requestBody")) if spec.get("requestBody") else None
    servers = _servers(spec.get("servers"), base_url) or _servers(item.get("servers"), base_url) or document_servers
    return RestOperation(
        method=method, path=path, parameters=tuple(parameters.values()),
        has_request_body=body is not None, request_body_required=bool(body and body.get("required")),
        body_properties=_body_properties(raw, body), servers=servers,
    )


def _body_properties(raw: Mapping[str, Any], body: Mapping[str, Any] | None) -> frozenset[str]:
    content = (body or {}).get("content") or {}
    media = next((value for key, value in content.items() if "json" in key), None)
    schema = _resolve(raw, (media or {}).get("schema") or {})
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    return frozenset(properties) if isinstance(properties, Mapping) else frozenset()


def _document_servers(raw: Mapping[str, Any], base_url: str | None) -> tuple[str, ...]:
    if "swagger" in raw and raw.get("host"):
        schemes = raw.get("schemes") or ["https"]
        return (f"{schemes[0]}://{raw['host']}{raw.get('basePath', '')}",)
    return _servers(raw.get("servers"), base_url)


def _servers(entries: Any, base_url: str | None) -> tuple[str, ...]:
    """Server URLs with their variables set to defaults; relative ones resolved against the
    document's own URL when it was fetched over HTTP."""
    urls = []
    for entry in entries or []:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("url"), str):
            continue
        url = entry["url"]
        for name, variable in (entry.get("variables") or {}).items():
            url = url.replace("{" + name + "}", str((variable or {}).get("default", "")))
        urls.append(urljoin(base_url, url) if base_url else url)
    return tuple(urls)


def _resolve(raw: Mapping[str, Any], node: Any, depth: int = 0) -> Any:
    """Follow a local ``{"$ref": "#/a/b"}`` (a few hops at most); other nodes pass through."""
    while isinstance(node, Mapping) and isinstance(node.get("$ref"), str) and depth < 8:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            raise WorkflowError(f"only local $ref are supported in OpenAPI documents, found {ref!r}", code=CONFIGURATION_ERROR)
        target: Any = raw
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, Mapping) else None
        if target is None:
            raise WorkflowError(f"OpenAPI $ref {ref!r} points at nothing", code=CONFIGURATION_ERROR)
        node, depth = target, depth + 1
    return node
