"""Expressions (jq, compiled once) and the data-merge rules shared by every state."""

from xflow_runtime.expressions.jq_expressions import (
    CACHE,
    PENDING,
    STANDARD_VARIABLES,
    JqExpression,
    compile_expression,
    interpolate,
    interpolate_async,
    is_expression,
    strip_expression,
)
from xflow_runtime.expressions.merge import get_path, merge, merge_at_path, set_path

__all__ = [
    "CACHE", "PENDING", "STANDARD_VARIABLES", "JqExpression", "compile_expression", "interpolate", "interpolate_async",
    "is_expression", "strip_expression", "get_path", "merge", "merge_at_path", "set_path",
]
