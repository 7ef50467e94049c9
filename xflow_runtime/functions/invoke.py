"""The one entry point the interpreter uses: run a function definition with its arguments."""

from __future__ import annotations

from typing import Any

from xflow_runtime.error_codes import NOT_SUPPORTED
from xflow_runtime.errors import WorkflowError
from xflow_runtime.functions.context import FunctionContext
from xflow_runtime.plan.functions import FunctionDef



async def invoke_function(fn: FunctionDef, arguments: Any, *, selection_set: str | None = None,
                          context: FunctionContext) -> Any:
    """Invoke ``fn`` and return its result (JSON data).

    ``arguments`` and ``selection_set`` arrive already evaluated (the interpreter resolves their
    expressions). Every failure is a :class:`WorkflowError` whose ``code`` ``onErrors`` can match.
    ``expression`` functions are pure and evaluated by the interpreter, never here.
    """
    if fn.type == "custom":
        from xflow_runtime.functions.custom import invoke_custom

        return await invoke_custom(fn, arguments, context)
    if fn.type == "rest":
        from xflow_runtime.functions.rest import invoke_rest

        return await invoke_rest(fn, arguments, context)
    if fn.type == "graphql":
        from xflow_runtime.functions.graphql import invoke_graphql

        return await invoke_graphql(fn, arguments, selection_set, context)
    if fn.type == "a2a":
        from xflow_runtime.a2a.function import invoke_a2a

        return await invoke_a2a(fn, arguments, context)
    if fn.type == "expression":
        raise WorkflowError(
            f"function '{fn.name}' is an expression function; the interpreter evaluates it, not invoke_function",
            code=NOT_SUPPORTED,
        )
    raise WorkflowError(
        f"function '{fn.name}': type '{fn.type}' is not supported yet (supported: rest, graphql, custom, expression, a2a)",
        code=NOT_SUPPORTED,
    )
