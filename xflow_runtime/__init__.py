"""xflow-runtime: run xFlow workflows (Serverless Workflow 0.8 plus AI agent states) in Python.

The public API is re-exported here and imported lazily, so ``import xflow_runtime`` stays cheap
(no litellm, no DBOS, no SQLAlchemy until something needs them).
"""

from __future__ import annotations

import importlib
from typing import Any

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


__all__ = ["__version__", *_EXPORTS]
