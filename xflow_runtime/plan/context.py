"""The compile context: the workflow's named definitions plus helpers shared by state compilers."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from xflow_runtime.errors import DefinitionError, ExpressionError
from xflow_runtime.expressions import JqExpression
from xflow_runtime.expressions.language import compile_in
from xflow_runtime.plan.definitions import invalid
from xflow_runtime.plan.functions import FunctionDef
from xflow_runtime.plan.model import ErrorDef, EventDef, RetryDef, Timeouts
from xflow_runtime.plan.templates import Template, compile_data, compile_template


@dataclass
class CompileContext:
    """Everything a state compiler may look up. Extension compilers (``aiagent``) get one too."""

    functions: dict[str, FunctionDef]
    events: dict[str, EventDef]
    errors: dict[str, ErrorDef]
    retries: dict[str, RetryDef]
    timeouts: Timeouts
    state_names: frozenset[str]
    base_dir: str | None = None
    source_name: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    #: JSON pointer of the state being compiled, for messages (e.g. ``/states/2``).
    where: str = ""
    #: The workflow's ``expressionLang`` (``jq`` or ``jsonpath``).
    expression_lang: str = "jq"
    #: Variables in scope besides $CONST/$SECRETS/$WORKFLOW (a foreach's ``iterationParam``).
    variables: tuple[str, ...] = ()

    # --- expressions ---------------------------------------------------------------------------
    def expression(self, text: Any, where: str, *, path: bool = False,
                   extra_variables: tuple[str, ...] = ()) -> JqExpression | None:
        """A field that is always an expression (``${ }`` optional). ``None`` stays ``None``."""
        if text is None:
            return None
        if not isinstance(text, str):
            raise invalid(where, f"expected an expression string, found {type(text).__name__}")
        text = self._function_reference(text, where)
        try:
            compiled: JqExpression = compile_in(self.expression_lang, text, as_path=path,  # jq or JSONPath:
                                                extra_variables=extra_variables + self.variables)  # one interface
            return compiled
        except ExpressionError as exc:
            raise invalid(where, str(exc)) from None

    def required_expression(self, text: Any, where: str, *, path: bool = False) -> JqExpression:
        """Like :meth:`expression` for a field that must be present."""
        if text is None:
            raise invalid(where, "an expression is required here")
        compiled = self.expression(text, where, path=path)
        assert compiled is not None  # noqa: S101 - expression() only returns None for None
        return compiled

    def template(self, value: Any, where: str, *, extra_variables: tuple[str, ...] = ()) -> Template | None:
        """A value that is literal unless a string is a whole ``${ … }``."""
        if value is None:
            return None
        value = self._resolve_references(value, where)
        try:
            return compile_template(value, extra_variables=extra_variables + self.variables,
                                    language=self.expression_lang)
        except ExpressionError as exc:
            raise invalid(where, str(exc)) from None

    def data(self, value: Any, where: str) -> Template | None:
        """String = expression, object = template (``produceEvents.data`` and friends)."""
        value = self._resolve_references(value, where)
        try:
            return compile_data(value, extra_variables=self.variables, language=self.expression_lang)
        except ExpressionError as exc:
            raise invalid(where, str(exc)) from None

    def _function_reference(self, text: str, where: str) -> str:
        """``${ fn:name }`` stands for the ``operation`` of the expression function ``name``."""
        match = _FN_REFERENCE.match(text)
        if match is None:
            return text
        function = self.function(match.group("name"), where)
        if function.type != "expression" or not isinstance(function.operation, str):
            raise invalid(where, f"'fn:{function.name}' must name a function of type expression, "
                                 f"found type {function.type}")
        return function.operation

    def _resolve_references(self, value: Any, where: str) -> Any:
        if isinstance(value, str):
            return f"${{ {self._function_reference(value, where)} }}" if _FN_REFERENCE.match(value) else value
        if isinstance(value, dict):
            return {key: self._resolve_references(item, where) for key, item in value.items()}
        if isinstance(value, list):
            return [self._resolve_references(item, where) for item in value]
        return value

    # --- references ----------------------------------------------------------------------------
    def function(self, name: Any, where: str) -> FunctionDef:
        found = self.functions.get(name) if isinstance(name, str) else None
        if found is None:
            raise invalid(where, f"function {name!r} is not defined (known: {_known(self.functions)})")
        return found

    def event(self, name: Any, where: str, kind: str | None = None) -> EventDef:
        found = self.events.get(name) if isinstance(name, str) else None
        if found is None:
            raise invalid(where, f"event {name!r} is not defined (known: {_known(self.events)})")
        # A consumed event may be produced (SonataFlow); the loader reports it (XF143, an error when strict).
        if kind is not None and found.kind != kind and not (kind == "produced" and found.kind == "consumed"):
            raise invalid(where, f"event {name!r} is kind '{found.kind}' but is used as '{kind}'")
        return found

    def error(self, name: Any, where: str) -> ErrorDef:
        found = self.errors.get(name) if isinstance(name, str) else None
        if found is None:
            raise invalid(where, f"error {name!r} is not defined (known: {_known(self.errors)})")
        return found

    def retry(self, name: Any, where: str) -> RetryDef:
        found = self.retries.get(name) if isinstance(name, str) else None
        if found is None:
            raise invalid(where, f"retry {name!r} is not defined (known: {_known(self.retries)})")
        return found

    def state_name(self, name: Any, where: str) -> str:
        if not isinstance(name, str) or name not in self.state_names:
            raise invalid(where, f"state {name!r} does not exist")
        return name


_FN_REFERENCE = re.compile(r"^\s*(?:\$\{\s*)?fn:\s*(?P<name>[^{}]+?)\s*(?:\})?\s*$")


def _known(items: Mapping[str, Any]) -> str:
    return ", ".join(sorted(items)) or "none defined"


def require(raw: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in raw or raw[key] is None:
        raise DefinitionError([f"{where}: '{key}' is required"])
    return raw[key]
