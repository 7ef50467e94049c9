"""The workflow's ``expressionLang`` decides which engine compiles its expressions.

``jq`` (the 0.8 default, and what any other value is read as) or ``jsonpath`` (SonataFlow's
second language). Both compile once and give objects with the same interface
(``evaluate``, ``evaluate_all``, ``evaluate_condition``, ``path``).
"""

from __future__ import annotations

from typing import Any, Iterable

from xflow_runtime.expressions.jq_expressions import JqExpression, compile_expression, is_expression

JSONPATH = "jsonpath"


def compile_in(language: str, text: str, *, extra_variables: Iterable[str] = (), as_path: bool = False) -> Any:
    """Compile ``text`` (``${ }`` optional) in ``language``; a jq or a JSONPath expression."""
    if language == JSONPATH:
        from xflow_runtime.expressions.jsonpath_expressions import compile_jsonpath

        return compile_jsonpath(text, extra_variables=extra_variables, as_path=as_path)
    return compile_expression(text, extra_variables=extra_variables, as_path=as_path)


def is_marked_in(language: str, value: Any) -> bool:
    """Whether a literal-unless-marked string is an expression in ``language``."""
    if language == JSONPATH:
        from xflow_runtime.expressions.jsonpath_expressions import is_jsonpath_expression

        return is_jsonpath_expression(value)
    return is_expression(value)


__all__ = ["JSONPATH", "JqExpression", "compile_in", "is_marked_in"]
