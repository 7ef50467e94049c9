"""``systemMessage`` / ``userMessage``: compiled once, rendered per call against the state data.

A message is one of (decided in ``specs/agent.md``):

- a whole ``${ … }`` → a jq expression (``$SECRETS``/``$CONST`` bound as everywhere); a
  non-string result is rendered as compact JSON;
- text containing ``{{``, ``{%`` or ``{#`` → a Jinja2 template rendered in
  :class:`jinja2.sandbox.ImmutableSandboxedEnvironment` with no loader, no ``os``, no
  environment, no secrets; the state data's keys are top-level names and ``data`` is the whole
  state data; undefined names are errors (``StrictUndefined``); objects, lists, booleans and
  null print as JSON;
- text with embedded ``${ … }`` pieces → each piece replaced by its value;
- anything else → literal text.

Rendering failures raise :class:`~xflow_runtime.errors.WorkflowError` with code
``TemplateError`` (``TemplateSecurityError`` for a sandbox violation), which ``onErrors`` can match.
A render is bounded like every evaluation (specs/limits.md): ``ExpressionTimeout`` past the time
budget, ``ExpressionTooLarge`` for a text beyond the result budget or an operation that would build
one (``"x" * n``, ``n ** m`` with a huge result).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

from xflow_runtime.error_codes import TEMPLATE_ERROR, TEMPLATE_SECURITY_ERROR
from xflow_runtime.errors import DefinitionError, ExpressionError, ExpressionTooLarge, WorkflowError
from xflow_runtime.expressions import JqExpression, compile_expression, interpolate, interpolate_async, is_expression
from xflow_runtime.expressions.bounded_thread import run_bounded
from xflow_runtime.expressions.limits import current_limits

PromptKind = Literal["literal", "jq", "interpolated", "jinja"]
_JINJA_MARKERS = re.compile(r"\{\{|\{%|\{#")
_EMBEDDED = re.compile(r"\$\{.+?\}", re.DOTALL)
#: The only globals a template sees. ``range`` is length-capped by the sandbox.
_SAFE_GLOBALS = ("range", "dict", "namespace")

_environment: Any = None


def sandbox() -> Any:
    """The process-wide sandboxed Jinja2 environment (created on first use)."""
    global _environment
    if _environment is None:
        from jinja2 import StrictUndefined

        env = _bounded_sandbox_class()(loader=None, autoescape=False, undefined=StrictUndefined,
                                            keep_trailing_newline=True, finalize=_as_prompt_text)
        env.globals = {name: env.globals[name] for name in _SAFE_GLOBALS if name in env.globals}
        env.filters["tojson"] = lambda value, indent=None: json.dumps(value, indent=indent, ensure_ascii=False)
        _environment = env
    return _environment


def _bounded_sandbox_class() -> Any:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class BoundedSandbox(ImmutableSandboxedEnvironment):
        """Refuses the single operations whose cost one bytecode cannot bound: repeating a text or
        list past the result budget, and powers with huge results (one C call each, so the time
        budget could not interrupt them)."""

        intercepted_binops = frozenset(["*", "**"])

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            limit = current_limits().max_result_bytes
            if operator == "*":
                sizes = [len(v) for v in (left, right) if isinstance(v, (str, list, tuple))]
                counts = [v for v in (left, right) if isinstance(v, int) and not isinstance(v, bool)]
                if sizes and counts and sizes[0] * max(counts[0], 0) > limit:
                    raise ExpressionTooLarge(f"template repeats a value beyond the result budget ({limit} bytes)")
            if operator == "**" and isinstance(right, (int, float)) and abs(right) > 1024 and \
                    isinstance(left, (int, float)) and abs(left) > 1:
                raise ExpressionTooLarge("template computes a power beyond the result budget")
            return super().call_binop(context, operator, left, right)

    return BoundedSandbox


def _as_prompt_text(value: Any) -> Any:
    # Objects, lists, booleans and null print as JSON (what an LLM reads best), not Python repr.
    if value is None or isinstance(value, (bool, dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return value


@dataclass(frozen=True)
class Prompt:
    kind: PromptKind
    text: str
    expression: JqExpression | None = field(default=None, compare=False)
    template: Any = field(default=None, compare=False, repr=False)  # a compiled jinja2.Template

    def render(self, data: Any, variables: Mapping[str, Any]) -> str:
        if self.kind == "literal":
            return self.text
        if self.kind == "jq":
            assert self.expression is not None
            value = _evaluate(lambda: self.expression.evaluate(data, variables), self.text)
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if self.kind == "interpolated":
            return _evaluate(lambda: interpolate(self.text, data, variables), self.text)
        return _render_jinja(self.template, data, self.text)

    async def render_async(self, data: Any, variables: Mapping[str, Any]) -> str:
        """:meth:`render` under the evaluation budget, without blocking the event loop."""
        if self.kind == "jq":
            assert self.expression is not None
            value = await _evaluate_async(self.expression.evaluate_async(data, variables), self.text)
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if self.kind == "interpolated":
            return await _evaluate_async(interpolate_async(self.text, data, variables), self.text)
        if self.kind == "jinja":
            rendered = await _evaluate_async(run_bounded(lambda: _render_jinja(self.template, data, self.text),
                                                         self.text), self.text)
            if len(rendered) > current_limits().max_result_bytes:
                raise _as_workflow_error(ExpressionTooLarge("template result exceeds the result budget",
                                                            expression=self.text))
            return rendered
        return self.text


def compile_prompt(text: Any, where: str) -> Prompt:
    """Compile a message field. Raises :class:`DefinitionError` for syntax errors."""
    if not isinstance(text, str):
        raise DefinitionError([f"{where}: expected a string (text, ${{ jq }} or a Jinja2 template), "
                               f"found {type(text).__name__}"])
    try:
        if is_expression(text):
            return Prompt("jq", text, expression=compile_expression(text))
        if _JINJA_MARKERS.search(text):
            return Prompt("jinja", text, template=_compile_jinja(text, where))
        if _EMBEDDED.search(text):
            for piece in _EMBEDDED.findall(text):
                compile_expression(piece)
            return Prompt("interpolated", text)
    except ExpressionError as error:
        raise DefinitionError([f"{where}: {error}"]) from None
    return Prompt("literal", text)


def _compile_jinja(text: str, where: str) -> Any:
    from jinja2 import TemplateSyntaxError

    try:
        return sandbox().from_string(text)
    except TemplateSyntaxError as error:
        raise DefinitionError([f"{where}: Jinja2 template line {error.lineno}: {error.message}"]) from None


def _render_jinja(template: Any, data: Any, text: str) -> str:
    from jinja2 import TemplateError
    from jinja2.exceptions import SecurityError

    names = {key: value for key, value in data.items() if isinstance(key, str) and key.isidentifier()} \
        if isinstance(data, Mapping) else {}
    names["data"] = data
    try:
        return template.render(names)
    except SecurityError as error:
        raise WorkflowError(f"template refused by the sandbox: {error}", code=TEMPLATE_SECURITY_ERROR) from None
    except TemplateError as error:
        raise WorkflowError(f"template failed: {error}", code=TEMPLATE_ERROR) from None
    except (TypeError, ValueError, ArithmeticError, LookupError) as error:
        raise WorkflowError(f"template failed: {type(error).__name__}: {error}", code=TEMPLATE_ERROR) from None


def _evaluate(run: Any, text: str) -> Any:
    try:
        return run()
    except ExpressionError as error:
        raise _as_workflow_error(error) from None


async def _evaluate_async(evaluation: Any, text: str) -> Any:
    try:
        return await evaluation
    except ExpressionError as error:
        raise _as_workflow_error(error) from None


def _as_workflow_error(error: ExpressionError) -> WorkflowError:
    """Keeps the specific code (``ExpressionTimeout``, ``ExpressionTooLarge``) for ``onErrors``."""
    return WorkflowError(f"message expression failed: {error}", code=type(error).__name__)
