"""The compiled plan: frozen dataclasses for every part of a workflow, every ``${ }`` compiled once.

``compile_plan(document)`` turns a loaded workflow document into a :class:`WorkflowPlan`. State
types beyond SW 0.8 register a compiler with :func:`register_state_compiler`.
"""

from xflow_runtime.plan.compile import compile_plan, compile_state
from xflow_runtime.plan.context import CompileContext
from xflow_runtime.plan.durations import parse_duration
from xflow_runtime.plan.registry import register_state_compiler
from xflow_runtime.plan.states import WorkflowPlan

__all__ = ["compile_plan", "compile_state", "CompileContext", "parse_duration", "register_state_compiler",
           "WorkflowPlan"]
