"""The interpreter: executes a compiled plan deterministically over the engine port.

``execute(plan, input, port=…, context=…)`` runs one instance; ``register_state_handler`` adds
state types. ``run_workflow`` (in-process engine, virtual clock) is re-exported for convenience::

    from xflow_runtime.plan import compile_plan
    from xflow_runtime.interpreter import run_workflow

    plan = compile_plan(document)                       # once; immutable, shared by instances
    result = await run_workflow(plan, {"name": "Ann"},
                                functions={"greet": lambda args: {"greeting": f"Hi {args['name']}"}})
    result.status, result.output, result.error

Semantics are specified in ``specs/semantics.md``; expressions in ``specs/expressions.md``.
"""

from __future__ import annotations

from typing import Any

from xflow_runtime.interpreter.context import ExecutionContext, FunctionInvoker, WorkflowRegistry
from xflow_runtime.interpreter.events import EVENT_TOPIC
from xflow_runtime.interpreter.execute import ExecutionResult, execute
from xflow_runtime.error_codes import TIMEOUT
from xflow_runtime.interpreter.failures import Failure
from xflow_runtime.interpreter.records import RecordKind
from xflow_runtime.interpreter.registry import StateHandler, register_state_handler
from xflow_runtime.interpreter.services import Identity, InstanceServices
from xflow_runtime.interpreter.state_run import CacheKey, StateRun

__all__ = ["EVENT_TOPIC", "TIMEOUT", "CacheKey", "ExecutionContext", "ExecutionResult", "Failure", "FunctionInvoker",
           "Identity", "InstanceServices", "RecordKind", "StateHandler", "StateRun", "WorkflowRegistry", "execute",
           "register_state_handler", "run_workflow", "run_workflow_sync"]


def __getattr__(name: str) -> Any:
    if name in ("run_workflow", "run_workflow_sync"):
        from xflow_runtime.engine import inprocess

        return getattr(inprocess, name)
    raise AttributeError(name)
