"""SonataFlow's ``custom`` function conventions: ``sysout``, ``rest:METHOD:URL``, JVM-only operations.

* ``sysout`` / ``sysout:LEVEL`` logs its arguments (the ``message`` argument alone when that is
  all there is) on the ``xflow_runtime.sysout`` logger at LEVEL (default INFO) and returns nothing.
* ``rest:METHOD:URL`` is a REST call without an OpenAPI document: the URL's ``{name}``
  placeholders take the arguments of that name, the rest go in the JSON body (POST/PUT/PATCH) or
  the query (other methods), exactly as for an inline xFlow operation. A relative URL needs a base
  URL (``metadata.baseUrl`` or ``HttpSettings``); an absolute one is its own base unless those say
  otherwise.
* ``service:``, ``camel:``, ``dmn``, ``knative:``, ``script:``, ``rpc:`` need the JVM: calling one
  without a Python implementation registered under the function's name fails with
  ``FunctionNotFound`` naming the operation.

The registry (by function name, then by operation) is always asked first, so any of these can be
replaced by Python code.
"""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable
from urllib.parse import urlsplit

from xflow_runtime.error_codes import FUNCTION_NOT_FOUND
from xflow_runtime.errors import WorkflowError
from xflow_runtime.functions.context import FunctionContext
from xflow_runtime.plan.functions import FunctionDef, jvm_only_operation, python_implementation_hint

SYSOUT_LOGGER = "xflow_runtime.sysout"

Convention = Callable[[FunctionDef, Any, FunctionContext], Awaitable[Any]]


def convention_for(fn: FunctionDef) -> Convention | None:
    """The SonataFlow convention the function's operation follows, if any."""
    operation = fn.operation if isinstance(fn.operation, str) else ""
    if operation == "sysout" or operation.startswith("sysout:"):
        return _sysout
    if operation.startswith("rest:"):
        return _rest
    if jvm_only_operation(fn.type, operation):
        return _jvm_only
    return None


async def _sysout(fn: FunctionDef, arguments: Any, context: FunctionContext) -> None:
    level_name = str(fn.operation).partition(":")[2].strip().upper() or "INFO"
    level = logging.getLevelName(level_name)
    if not isinstance(level, int):
        level = logging.INFO
    message = arguments["message"] if isinstance(arguments, dict) and set(arguments) == {"message"} else arguments
    text = message if isinstance(message, str) else _json(message)
    logging.getLogger(SYSOUT_LOGGER).log(level, "%s", context.redactor.redact(text))
    return None


async def _rest(fn: FunctionDef, arguments: Any, context: FunctionContext) -> Any:
    from xflow_runtime.functions.rest import invoke_rest

    _, method, url = str(fn.operation).split(":", 2) if str(fn.operation).count(":") >= 2 else ("", "", "")
    method = method.strip().lower()
    if method not in ("get", "put", "post", "delete", "options", "head", "patch") or not url.strip():
        raise WorkflowError(f"function '{fn.name}': {fn.operation!r} is not rest:METHOD:URL "
                            "(e.g. rest:post:/numbers/{n})", code=FUNCTION_NOT_FOUND)
    parts = urlsplit(url.strip())
    metadata = dict(fn.metadata)
    if parts.scheme in ("http", "https") and not metadata.get("baseUrl"):
        metadata["baseUrl"] = f"{parts.scheme}://{parts.netloc}"
    path = (parts.path or "/") if parts.scheme else url.strip()
    inline = FunctionDef(name=fn.name, type="rest", operation={path: {method: {}}}, auth=fn.auth,
                         metadata=metadata, base_dir=fn.base_dir)
    return await invoke_rest(inline, arguments, context)


async def _jvm_only(fn: FunctionDef, arguments: Any, context: FunctionContext) -> Any:
    raise WorkflowError(f"custom function '{fn.name}': operation {fn.operation!r} needs SonataFlow's JVM and "
                        f"cannot run here; {python_implementation_hint(fn.name)}", code=FUNCTION_NOT_FOUND,
                        details={"function": fn.name, "operation": fn.operation})


def _json(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"), default=str)
