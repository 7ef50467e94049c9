"""Argument trees compiled once: literal unless a string is a whole ``${ … }`` expression.

``functionRef.arguments``, ``contextAttributes``, object-form event ``data`` and ``continueAs.data``
are trees of literals with expressions at some leaves. :func:`compile_template` walks the tree once
and returns the cheapest evaluator: a constant when nothing in it is an expression.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Mapping

from xflow_runtime.expressions import JqExpression
from xflow_runtime.expressions.language import compile_in, is_marked_in


class Template:
    """Evaluates to a JSON value given the data and the expression variables."""

    __slots__ = ()

    def render(self, data: Any, variables: Mapping[str, Any]) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    async def render_async(self, data: Any, variables: Mapping[str, Any]) -> Any:
        """:meth:`render` for coroutines: expressions that need libjq are awaited (specs/limits.md)."""
        return self.render(data, variables)


@dataclass(frozen=True, slots=True)
class Constant(Template):
    value: Any

    def render(self, data: Any, variables: Mapping[str, Any]) -> Any:
        # A container goes to user code (functions, event sinks): give it a private copy so a
        # callee that mutates its arguments cannot change the shared, compiled plan.
        if isinstance(self.value, (dict, list)):
            return copy.deepcopy(self.value)
        return self.value


@dataclass(frozen=True, slots=True)
class ExpressionTemplate(Template):
    expression: JqExpression

    def render(self, data: Any, variables: Mapping[str, Any]) -> Any:
        return self.expression.evaluate(data, variables)

    async def render_async(self, data: Any, variables: Mapping[str, Any]) -> Any:
        return await self.expression.evaluate_async(data, variables)


@dataclass(frozen=True, slots=True)
class ObjectTemplate(Template):
    items: tuple[tuple[str, Template], ...]

    def render(self, data: Any, variables: Mapping[str, Any]) -> Any:
        return {key: item.render(data, variables) for key, item in self.items}

    async def render_async(self, data: Any, variables: Mapping[str, Any]) -> Any:
        return {key: await item.render_async(data, variables) for key, item in self.items}


@dataclass(frozen=True, slots=True)
class ArrayTemplate(Template):
    items: tuple[Template, ...]

    def render(self, data: Any, variables: Mapping[str, Any]) -> Any:
        return [item.render(data, variables) for item in self.items]

    async def render_async(self, data: Any, variables: Mapping[str, Any]) -> Any:
        return [await item.render_async(data, variables) for item in self.items]


def compile_template(value: Any, *, extra_variables: tuple[str, ...] = (), language: str = "jq") -> Template:
    """Compile ``value``; strings are expressions only when written ``${ … }`` (in a JSONPath
    workflow also ``{{ … }}`` and a bare ``$…`` path that parses, as SonataFlow reads them)."""
    if isinstance(value, str):
        if is_marked_in(language, value):
            return ExpressionTemplate(compile_in(language, value, extra_variables=extra_variables))
        return Constant(value)
    if isinstance(value, dict):
        items = tuple((key, compile_template(item, extra_variables=extra_variables, language=language))
                      for key, item in value.items())
        if all(isinstance(item, Constant) for _, item in items):
            return Constant(value)
        return ObjectTemplate(items)
    if isinstance(value, list):
        elements = tuple(compile_template(item, extra_variables=extra_variables, language=language)
                         for item in value)
        if all(isinstance(item, Constant) for item in elements):
            return Constant(value)
        return ArrayTemplate(elements)
    return Constant(value)


def compile_data(value: Any, *, extra_variables: tuple[str, ...] = (), language: str = "jq") -> Template | None:
    """``produceEvents.data`` / ``eventRef.data`` / ``continueAs.data``: a string is always an
    expression (``${ }`` optional); an object is a template (literal unless ``${ }``)."""
    if value is None:
        return None
    if isinstance(value, str):
        return ExpressionTemplate(compile_in(language, value, extra_variables=extra_variables))
    return compile_template(value, extra_variables=extra_variables, language=language)
