"""OpenAPI descriptions split across documents: gathering every document a ``$ref`` names and
resolving references with ``referencing`` (the library JSON Schema validation already uses).

Safety rules, the same as the definition loader's for referenced files (specs/functions.md §4.1):
a description read from a file may reference other **files** only (relative paths or
``file://``), never the network; one fetched over HTTP may reference documents of the **same
origin** only (scheme, host and port), fetched with the function's credentials. Every document is
at most :data:`MAX_DOCUMENT_BYTES`, and a description at most :data:`MAX_DOCUMENTS` documents.
Anything else is a ``ConfigurationError`` naming the reference.
"""

from __future__ import annotations

import json
import os
from typing import Any, Awaitable, Callable, Iterator, Mapping
from urllib.parse import unquote, urljoin, urlsplit

import yaml

from xflow_runtime.error_codes import CONFIGURATION_ERROR
from xflow_runtime.errors import WorkflowError

MAX_DOCUMENT_BYTES = 8 * 1024 * 1024
MAX_DOCUMENTS = 64


def parse_document(location: str, text: str) -> Any:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_DOCUMENT_BYTES:
        raise _error(f"OpenAPI document {location} is larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB")
    try:
        return json.loads(text) if location.split("#")[0].endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise _error(f"OpenAPI document {location} does not parse: {exc}") from None


def file_uri(path: str) -> str:
    from pathlib import Path

    return Path(path).absolute().as_uri()


def uri_path(uri: str) -> str:
    return os.path.normpath(unquote(urlsplit(uri).path))


def gather_files(entry_uri: str, entry: Any) -> dict[str, Any]:
    """Every document reachable through ``$ref`` from a file, read from disk."""
    documents = {entry_uri: entry}
    pending = list(_referenced(entry_uri, entry))
    while pending:
        uri = pending.pop()
        if uri in documents:
            continue
        if urlsplit(uri).scheme != "file":
            raise _error(f"OpenAPI document {uri_path(entry_uri)} references {uri}: a description read "
                         f"from a file may reference other files only (no network)")
        _check_count(entry_uri, documents)
        path = uri_path(uri)
        try:
            if os.path.getsize(path) > MAX_DOCUMENT_BYTES:
                raise _error(f"OpenAPI document {path} is larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB")
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise _error(f"OpenAPI $ref to {path}: cannot read it: {exc.strerror}") from None
        documents[uri] = parse_document(path, text)
        pending.extend(_referenced(uri, documents[uri]))
    return documents


async def gather_http(entry_uri: str, entry: Any, fetch: Callable[[str], Awaitable[str | Any]]) -> dict[str, Any]:
    """Every document reachable through ``$ref`` from a document fetched over HTTP (same origin)."""
    origin = _origin(entry_uri)
    documents = {entry_uri: entry}
    pending = list(_referenced(entry_uri, entry))
    while pending:
        uri = pending.pop()
        if uri in documents:
            continue
        if _origin(uri) != origin:
            raise _error(f"OpenAPI document {entry_uri} references {uri}: only documents of the same "
                         f"origin ({origin}) are fetched")
        _check_count(entry_uri, documents)
        body = await fetch(uri)
        documents[uri] = parse_document(uri, body) if isinstance(body, str) else body
        pending.extend(_referenced(uri, documents[uri]))
    return documents


def resolver(documents: Mapping[str, Any], entry_uri: str) -> Any:
    """A ``referencing`` resolver over exactly these documents (it retrieves nothing else)."""
    from referencing import Registry, Resource

    registry: Registry[Any] = Registry().with_resources(
        (uri, Resource.opaque(contents)) for uri, contents in documents.items())
    return registry.resolver(base_uri=entry_uri)


def follow(resolver_: Any, node: Any) -> tuple[Any, Any]:
    """Follow ``{"$ref": …}`` (a few hops at most) → (target, the resolver of the target's
    document, against which the target's own references resolve). Other nodes pass through.
    ``resolver_`` is ``None`` for an xFlow inline operation: it has no document to point into."""
    for _ in range(16):
        if not (isinstance(node, Mapping) and isinstance(node.get("$ref"), str)):
            return node, resolver_
        ref = node["$ref"]
        if resolver_ is None:
            raise _error(f"$ref {ref!r} in an inline operation: there is no document to resolve it in")
        from referencing.exceptions import Unresolvable

        try:
            resolved = resolver_.lookup(ref)
        except Unresolvable:
            raise _error(f"OpenAPI $ref {ref!r} points at nothing") from None
        node, resolver_ = resolved.contents, resolved.resolver
    raise _error(f"OpenAPI $ref chain through {node.get('$ref')!r} is too long (a cycle?)")


def _referenced(base_uri: str, node: Any) -> Iterator[str]:
    """The documents (absolute URIs, no fragment) this document's ``$ref``s name."""
    for ref in _refs(node):
        target = urljoin(base_uri, ref).split("#", 1)[0]
        if target and target != base_uri:
            yield target


def _refs(node: Any) -> Iterator[str]:
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, Mapping):
            ref = current.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                yield ref
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)


def _origin(uri: str) -> tuple[str, str]:
    parts = urlsplit(uri)
    return parts.scheme, parts.netloc


def _check_count(entry_uri: str, documents: Mapping[str, Any]) -> None:
    if len(documents) >= MAX_DOCUMENTS:
        raise _error(f"OpenAPI description {entry_uri} references more than {MAX_DOCUMENTS} documents")


def _error(message: str) -> WorkflowError:
    return WorkflowError(message, code=CONFIGURATION_ERROR)
