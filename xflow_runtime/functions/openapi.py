"""OpenAPI documents: loading (file or http(s)), caching, and finding an operation.

Supports OpenAPI 3.x (``servers``, ``requestBody``, parameter ``style``/``explode``/
``allowReserved``/``content``) and Swagger 2.0 (``host``/``basePath``/``schemes``, ``in: body``,
``collectionFormat``), ``$ref``s within the document and to other documents (``openapi_refs``), and
xFlow's inline Paths Object. Files are cached process-wide by the path, modification time and size
of every document of the description; documents fetched over HTTP are cached in the
:class:`FunctionContext` (they may need the function's credentials). Decisions:
specs/functions.md §rest.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import urljoin

from xflow_runtime.error_codes import CONFIGURATION_ERROR
from xflow_runtime.errors import WorkflowError
from xflow_runtime.functions.context import FunctionContext
from xflow_runtime.functions.http import HttpRequest, decode_body, raise_for_status, send
from xflow_runtime.functions.openapi_refs import (
    MAX_DOCUMENT_BYTES, file_uri, follow, gather_files, gather_http, parse_document, resolver, uri_path,
)
from xflow_runtime.functions.parameter_styles import STYLES, Style, style_problem
from xflow_runtime.functions.rest_mapping import LOCATIONS, Parameter, RestOperation
from xflow_runtime.plan.functions import HTTP_METHODS, FunctionDef



@dataclass(frozen=True)
class OpenApiDocument:
    """A parsed document and its operations indexed by ``operationId``."""

    location: str
    operations: Mapping[str, RestOperation]


#: entry path → (path, mtime, size) of every document of the description, and the indexed result
_file_cache: dict[str, tuple[tuple[tuple[str, int, int], ...], OpenApiDocument]] = {}
_file_lock = threading.Lock()


def split_operation(fn: FunctionDef) -> tuple[str, str]:
    """``"<document>#<operationId>"`` → (document, operationId); the last ``#`` separates them."""
    location, _, operation_id = str(fn.operation).rpartition("#")
    return location, operation_id


def inline_operation(paths: Mapping[str, Any]) -> RestOperation:
    """The single operation of an xFlow inline Paths Object (checked by the plan compiler)."""
    path, item = next(iter(paths.items()))
    method = next(key for key in item if key in HTTP_METHODS)
    return _operation(None, path, item, method, document_servers=())  # no document: no $ref to follow


async def load_document(fn: FunctionDef, location: str, context: FunctionContext, headers: dict[str, str]) -> OpenApiDocument:
    if location.startswith(("http://", "https://")):
        cached = context.documents.get(location)
        if isinstance(cached, OpenApiDocument):
            return cached
        what = f"function '{fn.name}' OpenAPI document"

        async def fetch(url: str) -> Any:
            response = await send(context, what, HttpRequest("get", url, headers=headers))
            raise_for_status(context, what, response)
            return decode_body(response)

        body = await fetch(location)
        raw = parse_document(location, body) if isinstance(body, str) else body
        documents = await gather_http(location, raw, fetch)
        document = _index(location, documents, base_url=location)
        context.documents[location] = document
        return document
    return _load_file(fn, _file_path(location, fn.base_dir))


def _load_file(fn: FunctionDef, path: str) -> OpenApiDocument:
    cached = _file_cache.get(path)
    if cached is not None and cached[0] == _stats(fn, [known for known, _, _ in cached[0]]):
        return cached[1]
    [(_, _, size)] = _stats(fn, [path])  # a clear error when the file is missing
    if size > MAX_DOCUMENT_BYTES:  # refused before reading it
        raise WorkflowError(f"OpenAPI document {path} is larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB",
                            code=CONFIGURATION_ERROR)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    entry = file_uri(path)
    documents = gather_files(entry, parse_document(path, text))
    document = _index(path, documents, base_url=None, entry_uri=entry)
    stats = _stats(fn, [uri_path(uri) for uri in documents])
    with _file_lock:
        _file_cache[path] = (stats, document)
    return document


def _stats(fn: FunctionDef, paths: list[str]) -> tuple[tuple[str, int, int], ...]:
    found = []
    for path in paths:
        try:
            stat = os.stat(path)
        except OSError as exc:
            raise WorkflowError(
                f"function '{fn.name}': cannot read OpenAPI document {path}: {exc.strerror}",
                code=CONFIGURATION_ERROR,
            ) from None
        found.append((path, stat.st_mtime_ns, stat.st_size))
    return tuple(found)


def _file_path(location: str, base_dir: str | None) -> str:
    if location.startswith("file://"):
        location = location[len("file://"):]
    if not os.path.isabs(location):
        location = os.path.join(base_dir or os.getcwd(), location)
    return os.path.normpath(location)


def _index(location: str, documents: Mapping[str, Any], *, base_url: str | None,
           entry_uri: str | None = None) -> OpenApiDocument:
    entry_uri = entry_uri or location
    raw = documents[entry_uri]
    if not isinstance(raw, Mapping) or not isinstance(raw.get("paths"), Mapping):
        raise WorkflowError(f"OpenAPI document {location} has no 'paths' object", code=CONFIGURATION_ERROR)
    servers = _document_servers(raw, base_url)
    swagger = "swagger" in raw
    root = resolver(documents, entry_uri)
    operations: dict[str, RestOperation] = {}
    for path, item in raw["paths"].items():
        if not isinstance(item, Mapping):
            continue
        item, refs = follow(root, item)
        for method in HTTP_METHODS:
            spec = item.get(method)
            if isinstance(spec, Mapping) and isinstance(spec.get("operationId"), str):
                operations[spec["operationId"]] = _operation(refs, path, item, method, servers, base_url,
                                                             swagger=swagger)
    return OpenApiDocument(location=location, operations=operations)


def _operation(refs: Any, path: str, item: Mapping[str, Any], method: str,
               document_servers: tuple[str, ...], base_url: str | None = None, *,
               swagger: bool = False) -> RestOperation:
    spec = item[method] or {}
    if not isinstance(spec, Mapping):
        raise WorkflowError(f"{method.upper()} {path}: the operation must be an object", code=CONFIGURATION_ERROR)
    parameters: dict[tuple[str, str], Parameter] = {}
    for source in (item.get("parameters") or [], spec.get("parameters") or []):  # operation level wins
        if not isinstance(source, list):
            raise WorkflowError(f"{method.upper()} {path}: 'parameters' must be a list", code=CONFIGURATION_ERROR)
        for entry in source:
            entry, _ = follow(refs, entry)
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
                style=_style(entry, location, swagger, f"{method.upper()} {path}"),
            )
    body, body_refs = follow(refs, spec.get("requestBody")) if spec.get("requestBody") else (None, refs)
    servers = _servers(spec.get("servers"), base_url) or _servers(item.get("servers"), base_url) or document_servers
    return RestOperation(
        method=method, path=path, parameters=tuple(parameters.values()),
        has_request_body=body is not None, request_body_required=bool(body and body.get("required")),
        body_properties=_body_properties(body_refs, body), servers=servers,
    )


def _body_properties(refs: Any, body: Mapping[str, Any] | None) -> frozenset[str]:
    content = (body or {}).get("content") or {}
    media = next((value for key, value in content.items() if "json" in key), None)
    schema, _ = follow(refs, (media or {}).get("schema") or {})
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


#: Swagger 2 ``collectionFormat`` → (OpenAPI 3 style, explode); ``csv`` is Swagger's default
_COLLECTION_FORMATS = {"csv": ("form", False), "ssv": ("spaceDelimited", False),
                       "pipes": ("pipeDelimited", False), "multi": ("form", True)}


def _style(entry: Mapping[str, Any], location: str, swagger: bool, where: str) -> Style | None:
    """The declared serialization of a parameter (None: the location's default); what OpenAPI
    does not define, or we do not support, is refused here, before anything is sent."""
    name = entry["name"]
    if location == "body":
        return None
    if "content" in entry:
        content = entry.get("content")
        media = next(iter(content), None) if isinstance(content, Mapping) and len(content) == 1 else None
        if not isinstance(media, str) or not ("json" in media or media.startswith("text/plain")):
            raise WorkflowError(f"{where}: parameter '{name}': content must name exactly one media type, "
                                f"JSON or text/plain (found {content!r})", code=CONFIGURATION_ERROR)
        return Style(STYLES[location][0], media_type=media)
    if swagger:
        if entry.get("type") != "array":
            return None
        form = entry.get("collectionFormat", "csv")
        if form not in _COLLECTION_FORMATS:
            raise WorkflowError(f"{where}: parameter '{name}': collectionFormat {form!r} is not supported "
                                f"(supported: {', '.join(_COLLECTION_FORMATS)})", code=CONFIGURATION_ERROR)
        style, explode = _COLLECTION_FORMATS[form]
        if location != "query":  # outside the query, every format is the plain comma list
            return Style(STYLES[location][0], explode=False)
        return Style(style, explode=explode)
    if not any(key in entry for key in ("style", "explode", "allowReserved")):
        return None
    style = entry.get("style", STYLES[location][0])
    explode = entry.get("explode", style == "form")
    if not isinstance(style, str) or not isinstance(explode, bool) or not isinstance(entry.get("allowReserved", False), bool):
        raise WorkflowError(f"{where}: parameter '{name}': style must be a string, explode and allowReserved "
                            f"booleans", code=CONFIGURATION_ERROR)
    problem = style_problem(location, style, explode)
    if problem is not None:
        raise WorkflowError(f"{where}: parameter '{name}': {problem}", code=CONFIGURATION_ERROR)
    return Style(style, explode=explode, allow_reserved=bool(entry.get("allowReserved")) and location == "query")
