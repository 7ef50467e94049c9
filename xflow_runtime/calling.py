"""How a Python callable receives a workflow function's arguments: one rule, read from the
callable's signature alone, used by ``run_workflow(functions=…)``, ``Runtime(functions=…)`` and
``python:pkg.mod:fn`` operations alike (specs/functions.md §3).

- no parameters → called with nothing;
- exactly one positional parameter (``def f(data)``, ``lambda args: …``), or only ``*args`` →
  the arguments value whole, whatever it is (an object, a list, a string, ``None``);
- anything else (two or more parameters, keyword-only ones, ``**kwargs``) → the members of the
  arguments object as keyword arguments (``None`` → none); any other value is an
  ``InvalidArguments`` error.

A callable whose signature cannot be read (some builtins) gets the value whole.
"""

from __future__ import annotations

import inspect
from enum import Enum
from functools import lru_cache
from typing import Any, Callable

from xflow_runtime.error_codes import INVALID_ARGUMENTS
from xflow_runtime.errors import WorkflowError



class Convention(Enum):
    NOTHING = "nothing"
    WHOLE = "whole"
    KEYWORDS = "keywords"


def convention_of(function: Callable[..., Any]) -> Convention:
    try:
        return _cached_convention(function)
    except TypeError:  # unhashable callable
        return _convention(function)


@lru_cache(maxsize=1024)
def _cached_convention(function: Callable[..., Any]) -> Convention:
    return _convention(function)


def _convention(function: Callable[..., Any]) -> Convention:
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return Convention.WHOLE
    kinds = [p.kind for p in parameters]
    positional = [k for k in kinds if k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    keyword_only = inspect.Parameter.KEYWORD_ONLY in kinds
    var_keyword = inspect.Parameter.VAR_KEYWORD in kinds
    if not parameters:
        return Convention.NOTHING
    if keyword_only or var_keyword or len(positional) >= 2:
        return Convention.KEYWORDS
    return Convention.WHOLE


def call_arguments(function: Callable[..., Any], name: str, arguments: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``(args, kwargs)`` to call ``function`` (the workflow function ``name``) with ``arguments``."""
    convention = convention_of(function)
    if convention is Convention.NOTHING:
        return (), {}
    if convention is Convention.WHOLE:
        return (arguments,), {}
    if arguments is None:
        return (), {}
    if isinstance(arguments, dict) and all(isinstance(key, str) for key in arguments):
        return (), dict(arguments)
    raise WorkflowError(f"function '{name}' takes keyword arguments (its signature has several or keyword-only "
                        f"parameters), so its arguments must be an object, not {type(arguments).__name__}",
                        code=INVALID_ARGUMENTS, details={"function": name})
