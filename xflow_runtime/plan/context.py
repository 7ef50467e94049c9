"""The compile context: the workflow's named definitions plus helpers shared by state compilers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from xflow_runtime.errors import DefinitionError, ExpressionError
from xflow_runtime.expressions import JqExpression, compile_expression
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

    # --- expressions ---------------------------------------------------------------------------
    def expression(self, text: Any, where: str, *, path: bool = False,
                   extra_variables: tuple[str, ...] = ()) -> JqExpression | None:
        """A field that is always an expression (``${ }`` optional). ``None`` stays ``None``."""
        if text is None:
            return None
        if not isinstance(text, str):
            raise invalid(where, f"expected an expression string, found {type(text).__name__}")
        try:
            return compile_expression(text, as_path=path, extra_variables=extra_variables)
        except ExpressionError as exc:
            raise invalid(where, str(exc)) from None

    def template(self, value: Any, where: str, *, extra_variables: tuple[str, ...] = ()) -> Template | None:
        """A value that is literal unless a string is a whole ``${ … }``."""
        if value is None:
            return None
        try:
            return compile_template(value, extra_variables=extra_variables)
        except ExpressionError as exc:
            raise invalid(where, str(exc)) from None

    def data(self, value: Any, where: str) -> Template | None:
        """String = expression, object = template (``produceEvents.data`` and friends)."""
        try:
            return compile_data(value)
        except ExpressionError as exc:
            raise invalid(where, str(exc)) from None

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
        if kind is not None and found.kind != kind:
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


def _known(items: Mapping[str, Any]) -> str:
    return ", ".join(sorted(items)) or "none defined"


def require(raw: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in raw or raw[key] is None:
        raise DefinitionError([f"{where}: '{key}' is required"])
    return raw[key]
