"""``custom`` functions: Python callables, from the registry or imported from ``python:mod:attr``.

Calling convention: :mod:`xflow_runtime.calling`, read from the callable's signature (specs/functions.md
§3), the same for every way a Python function is provided. Sync callables
run in a daemon thread of their own so the event loop keeps serving other instances; when the
call is abandoned (a timeout) the thread cannot be stopped, but it never delays the process's
exit, its result is discarded and a warning names the function (specs/limits.md). Async
callables (and sync ones that return an awaitable) are awaited, and cancelled on a timeout.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import threading
from typing import Any, Callable

from xflow_runtime.error_codes import FUNCTION_NOT_FOUND, INVALID_RESULT
from xflow_runtime.calling import call_arguments
from xflow_runtime.errors import WorkflowError
from xflow_runtime.functions.context import FunctionContext
from xflow_runtime.functions.daemon_workers import WORKERS
from xflow_runtime.plan.functions import FunctionDef

PYTHON_PREFIX = "python:"

_imported: dict[str, Callable[..., Any]] = {}
_import_lock = threading.Lock()


async def invoke_custom(fn: FunctionDef, arguments: Any, context: FunctionContext) -> Any:
    operation = fn.operation if isinstance(fn.operation, str) else ""
    target = context.registry.lookup(fn.name, operation)
    if target is None:
        from xflow_runtime.functions.sonataflow import convention_for

        convention = convention_for(fn)  # sysout, rest:METHOD:URL, JVM-only operations
        if convention is not None:
            return await convention(fn, arguments, context)
        target = _import_target(fn.name, operation)
    args, kwargs = call_arguments(target, fn.name, arguments)
    context.log.debug("calling custom function %s", fn.name)
    try:
        if _is_async(target):
            result = await target(*args, **kwargs)
        else:
            result = await _in_daemon_thread(fn.name, target, args, kwargs, context)
            if inspect.isawaitable(result):
                result = await result
    except WorkflowError:
        raise  # the user chose name/code on purpose
    except Exception as exc:  # user code: every failure becomes a matchable workflow error
        message = context.redactor.redact(f"{type(exc).__name__}: {exc}")
        raise WorkflowError(
            f"custom function '{fn.name}' raised {message}", code=type(exc).__name__,
            details={"function": fn.name, "exception": type(exc).__name__},
        ) from exc
    _check_json(fn.name, result, "result")
    return result


async def _in_daemon_thread(name: str, target: Callable[..., Any], args: tuple[Any, ...],
                            kwargs: dict[str, Any], context: FunctionContext) -> Any:
    call = WORKERS.submit(functools.partial(target, *args, **kwargs), name)
    try:
        return await call.outcome  # cancelling the wait cancels the future: a late outcome is dropped
    except asyncio.CancelledError:
        if call.running:
            context.log.warning("custom function %s is still running after its call was abandoned (timeout or "
                                "cancellation); its result will be discarded", name)
        raise


def _is_async(target: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(getattr(target, "__call__", None))


def _import_target(name: str, operation: str) -> Callable[..., Any]:
    if not operation.startswith(PYTHON_PREFIX):
        raise WorkflowError(
            f"custom function '{name}': nothing is registered under this name or under operation "
            f"{operation!r}, and it is not a 'python:package.module:function' reference",
            code=FUNCTION_NOT_FOUND,
        )
    cached = _imported.get(operation)
    if cached is not None:
        return cached
    module_name, _, attribute_path = operation[len(PYTHON_PREFIX):].partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute_path.split("."):
            target = getattr(target, part)
    except ImportError as exc:
        raise WorkflowError(
            f"custom function '{name}': cannot import module {module_name!r}: {exc}", code=FUNCTION_NOT_FOUND,
        ) from None
    except AttributeError:
        raise WorkflowError(
            f"custom function '{name}': module {module_name!r} has no attribute {attribute_path!r}",
            code=FUNCTION_NOT_FOUND,
        ) from None
    if not callable(target):
        raise WorkflowError(f"custom function '{name}': {operation!r} is not callable", code=FUNCTION_NOT_FOUND)
    with _import_lock:
        _imported[operation] = target
    return target


def _check_json(name: str, value: Any, where: str) -> None:
    """Results become workflow data: only JSON values are allowed (tuples count as arrays)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_json(name, item, f"{where}[{index}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise WorkflowError(
                    f"custom function '{name}' returned a non-string key {key!r} at {where}", code=INVALID_RESULT,
                )
            _check_json(name, item, f"{where}.{key}")
        return
    raise WorkflowError(
        f"custom function '{name}' returned {type(value).__name__} at {where}; results must be JSON data "
        "(dict, list, str, int, float, bool, None)", code=INVALID_RESULT,
    )
