"""``graphql`` functions: ``<endpoint>#query|mutation#<field>`` with arguments and a selection set.

The request document is ``<kind> { <field>(<arguments as literals>) <selectionSet> }``, POSTed as
``{"query": …}``. The result is keyed by the field, as in the SW 0.8 example:
``{"pet": {…}}`` (specs/functions.md §graphql). A response with ``errors`` raises
``WorkflowError(code=GRAPHQL_ERROR)`` whatever the HTTP status.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

from xflow_runtime.error_codes import GRAPHQL_ERROR, INVALID_ARGUMENTS
from xflow_runtime.errors import WorkflowError
from xflow_runtime.functions.auth import auth_headers, send_authenticated
from xflow_runtime.functions.context import FunctionContext
from xflow_runtime.functions.http import HttpRequest, decode_body, raise_for_status
from xflow_runtime.plan.functions import FunctionDef

_NAME = re.compile(r"^[_A-Za-z][_0-9A-Za-z]*$")


def split_graphql_operation(operation: str) -> tuple[str, str, str]:
    """``"<endpoint>#query|mutation#<field>"`` → (endpoint, kind, field)."""
    endpoint, kind, field = operation.rsplit("#", 2)
    return endpoint, kind, field


def build_document(kind: str, field: str, arguments: Any, selection_set: str | None) -> str:
    """The GraphQL request document; ``arguments`` must be an object (or null)."""
    if arguments is not None and not isinstance(arguments, Mapping):
        raise ValueError(f"graphql arguments must be an object, found {type(arguments).__name__}")
    call = field
    if arguments:
        call += "(" + ", ".join(f"{_name(key)}: {to_literal(value)}" for key, value in arguments.items()) + ")"
    selection = (selection_set or "").strip()
    if selection and not selection.startswith("{"):
        selection = "{ " + selection + " }"
    return f"{kind} {{ {call}{' ' + selection if selection else ''} }}"


def to_literal(value: Any) -> str:
    """A JSON value as a GraphQL input literal (object keys unquoted, strings JSON-escaped)."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_name(key)}: {to_literal(item)}" for key, item in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(to_literal(item) for item in value) + "]"
    if isinstance(value, float) and value.is_integer():
        return json.dumps(int(value)) if abs(value) < 2**53 else json.dumps(value)
    return json.dumps(value)  # null, true/false, numbers, strings (JSON escapes are valid GraphQL)


async def invoke_graphql(fn: FunctionDef, arguments: Any, selection_set: str | None, context: FunctionContext) -> Any:
    endpoint, kind, field = split_graphql_operation(str(fn.operation))
    endpoint = context.http.base_urls.get(fn.name) or fn.metadata.get("endpoint") or endpoint
    try:
        document = build_document(kind, field, arguments, selection_set)
    except ValueError as exc:
        raise WorkflowError(f"function '{fn.name}': {exc}", code=INVALID_ARGUMENTS) from None
    headers = await auth_headers(fn.auth, context)
    headers["Accept"] = "application/json"
    what = f"function '{fn.name}'"
    request = HttpRequest("post", endpoint, headers=headers, json_body={"query": document}, has_body=True,
                          timeout=context.http.timeouts.get(fn.name))
    response = await send_authenticated(context, what, request, fn.auth)
    body = decode_body(response)
    if isinstance(body, Mapping) and body.get("errors"):
        errors = body["errors"]
        first = errors[0].get("message") if isinstance(errors, list) and isinstance(errors[0], Mapping) else errors
        raise WorkflowError(
            context.redactor.redact(f"{what}: GraphQL error: {first}"), code=GRAPHQL_ERROR,
            status=response.status_code, details={"errors": errors},
        )
    raise_for_status(context, what, response)
    data = body.get("data") if isinstance(body, Mapping) else None
    if not isinstance(data, Mapping) or field not in data:
        raise WorkflowError(f"{what}: GraphQL response has no data.{field}", code=GRAPHQL_ERROR, status=response.status_code)
    return {field: data[field]}


def _name(key: Any) -> str:
    if not isinstance(key, str) or not _NAME.match(key):
        raise ValueError(f"{key!r} is not a valid GraphQL name")
    return key
