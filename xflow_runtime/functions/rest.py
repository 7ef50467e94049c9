"""``rest`` functions: SW 0.8 ``<openapi>#<operationId>`` and xFlow inline Paths Objects.

Base URL, first found wins (specs/functions.md §rest base URL):
``HttpSettings.base_urls[function name]`` → ``metadata.baseUrl`` → the operation's OpenAPI
``servers`` (operation, then path item, then document) → ``HttpSettings.default_base_url``.
"""

from __future__ import annotations

from typing import Any

from xflow_runtime.error_codes import CONFIGURATION_ERROR, FUNCTION_NOT_FOUND, INVALID_ARGUMENTS
from xflow_runtime.errors import WorkflowError
from xflow_runtime.functions.auth import auth_headers, send_authenticated
from xflow_runtime.functions.context import FunctionContext
from xflow_runtime.functions.http import HttpRequest, decode_body, raise_for_status
from xflow_runtime.functions.openapi import inline_operation, load_document, split_operation
from xflow_runtime.functions.rest_mapping import ArgumentError, RestOperation, map_arguments
from xflow_runtime.plan.functions import FunctionDef



async def invoke_rest(fn: FunctionDef, arguments: Any, context: FunctionContext) -> Any:
    headers = await auth_headers(fn.auth, context)
    operation = await resolve_operation(fn, context, headers)
    try:
        mapped = map_arguments(operation, arguments)
    except ArgumentError as exc:
        raise WorkflowError(f"function '{fn.name}': {exc}", code=INVALID_ARGUMENTS) from None
    url = base_url(fn, operation, context).rstrip("/") + mapped.path
    if mapped.query:  # already encoded by the parameters' styles: sent as written
        url += ("&" if "?" in url else "?") + mapped.query_string
    cookie = {"Cookie": mapped.cookie_header} if mapped.cookies else {}
    request = HttpRequest(
        method=operation.method, url=url, headers={**mapped.headers, **cookie, **headers},
        json_body=mapped.body, has_body=mapped.has_body, timeout=context.http.timeouts.get(fn.name),
    )
    what = f"function '{fn.name}'"
    response = await send_authenticated(context, what, request, fn.auth)
    raise_for_status(context, what, response)
    return decode_body(response)


async def resolve_operation(fn: FunctionDef, context: FunctionContext, headers: dict[str, str]) -> RestOperation:
    if isinstance(fn.operation, dict):
        return inline_operation(fn.operation)
    location, operation_id = split_operation(fn)
    document = await load_document(fn, location, context, headers)
    operation = document.operations.get(operation_id)
    if operation is None:
        raise WorkflowError(
            f"function '{fn.name}': operationId '{operation_id}' is not in {document.location}",
            code=FUNCTION_NOT_FOUND,
        )
    return operation


def base_url(fn: FunctionDef, operation: RestOperation, context: FunctionContext) -> str:
    configured = context.http.base_urls.get(fn.name)
    if configured:
        return configured
    from_metadata = fn.metadata.get("baseUrl")
    if isinstance(from_metadata, str) and from_metadata:
        return from_metadata
    absolute = [url for url in operation.servers if url.startswith(("http://", "https://"))]
    if absolute:
        return absolute[0]
    if context.http.default_base_url:
        relative = operation.servers[0] if operation.servers else ""
        return context.http.default_base_url.rstrip("/") + relative
    raise WorkflowError(
        f"function '{fn.name}': no server to call; set metadata.baseUrl, HttpSettings.base_urls"
        f"['{fn.name}'] or HttpSettings.default_base_url, or give the OpenAPI document absolute 'servers'",
        code=CONFIGURATION_ERROR,
    )
