"""xflow-runtime: run xFlow workflows (Serverless Workflow 0.8 plus AI agent states) in Python.

The public API is re-exported here and imported lazily, so ``import xflow_runtime`` stays cheap
(no litellm, no DBOS, no SQLAlchemy until something needs them). A type checker reads the same
names from the ``TYPE_CHECKING`` block below, which mirrors ``_EXPORTS`` (a test keeps them equal).
Everything not listed here or in a subpackage's ``__all__`` is internal (specs/architecture.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xflow_runtime.definition import Diagnostic, LoadedWorkflow, load_workflow
    from xflow_runtime.engine.inprocess import run_workflow
    from xflow_runtime.errors import DefinitionError, ExpressionError, WorkflowError, WorkflowFailed, XFlowError
    from xflow_runtime.expressions.limits import EvaluationLimits
    from xflow_runtime.functions import FunctionContext, FunctionRegistry, HttpSettings
    from xflow_runtime.interpreter import ExecutionResult
    from xflow_runtime.memory.chat import ChatMemory, ChatScope, WindowPolicy
    from xflow_runtime.memory.longterm import LongTermMemory, LongTermOptions, MemoryScope
    from xflow_runtime.plan import WorkflowPlan, compile_plan
    from xflow_runtime.privacy.erasure import UserErasureReceipt, erase_user
    from xflow_runtime.privacy.export import export_user
    from xflow_runtime.runtime import InstanceHandle, Runtime, UnknownInstance, run_sync

__version__ = "0.1.0"

# name → module that defines it. Extend as public API lands.
_EXPORTS: dict[str, str] = {
    "XFlowError": "xflow_runtime.errors",
    "DefinitionError": "xflow_runtime.errors",
    "ExpressionError": "xflow_runtime.errors",
    "WorkflowError": "xflow_runtime.errors",
    "WorkflowFailed": "xflow_runtime.errors",
    "compile_plan": "xflow_runtime.plan",
    "WorkflowPlan": "xflow_runtime.plan",
    "run_workflow": "xflow_runtime.engine.inprocess",
    "ExecutionResult": "xflow_runtime.interpreter",
    "FunctionContext": "xflow_runtime.functions",
    "FunctionRegistry": "xflow_runtime.functions",
    "HttpSettings": "xflow_runtime.functions",
    "load_workflow": "xflow_runtime.definition",
    "LoadedWorkflow": "xflow_runtime.definition",
    "Diagnostic": "xflow_runtime.definition",
    "Runtime": "xflow_runtime.runtime",
    "EvaluationLimits": "xflow_runtime.expressions.limits",
    "InstanceHandle": "xflow_runtime.runtime",
    "UnknownInstance": "xflow_runtime.runtime",
    "run_sync": "xflow_runtime.runtime",
    "ChatMemory": "xflow_runtime.memory.chat",
    "ChatScope": "xflow_runtime.memory.chat",
    "WindowPolicy": "xflow_runtime.memory.chat",
    "LongTermMemory": "xflow_runtime.memory.longterm",
    "LongTermOptions": "xflow_runtime.memory.longterm",
    "MemoryScope": "xflow_runtime.memory.longterm",
    "erase_user": "xflow_runtime.privacy.erasure",
    "export_user": "xflow_runtime.privacy.export",
    "UserErasureReceipt": "xflow_runtime.privacy.erasure",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'xflow_runtime' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "ChatMemory", "ChatScope", "DefinitionError", "Diagnostic", "EvaluationLimits", "ExecutionResult",
    "ExpressionError", "FunctionContext", "FunctionRegistry", "HttpSettings", "InstanceHandle", "LoadedWorkflow",
    "LongTermMemory", "LongTermOptions", "MemoryScope", "Runtime", "UnknownInstance", "UserErasureReceipt",
    "WindowPolicy", "WorkflowError", "WorkflowFailed", "WorkflowPlan", "XFlowError", "__version__", "compile_plan",
    "erase_user", "export_user", "load_workflow", "run_sync", "run_workflow",
]
