"""Public exception hierarchy.

Every error a user can see derives from :class:`XFlowError`. The CLI maps these to exit codes
and prints their message; anything else reaching the top level is a bug in xflow-runtime.
"""

from __future__ import annotations

from typing import Any

# Runtime error codes, re-exported here for existing importers; the catalogue is error_codes.py.
from xflow_runtime.error_codes import ERROR_MESSAGE as ERROR_MESSAGE
from xflow_runtime.error_codes import NO_CONDITION_MATCHED as NO_CONDITION_MATCHED


class XFlowError(Exception):
    """Base class of every error xflow-runtime raises on purpose."""


class DefinitionError(XFlowError):
    """A workflow document is invalid. ``diagnostics`` lists every problem found."""

    def __init__(self, diagnostics: list[Any]):
        self.diagnostics = diagnostics
        errors = [d for d in diagnostics if getattr(d, "severity", "error") == "error"]
        head = "\n".join(str(d) for d in errors[:20])
        more = f"\n… and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__(f"{len(errors)} error(s) in workflow definition:\n{head}{more}")


class ExpressionError(XFlowError):
    """A jq expression failed to compile or to evaluate."""

    def __init__(self, message: str, *, expression: str | None = None):
        self.expression = expression
        super().__init__(message if expression is None else f"{message} (in expression: {expression})")


class ExpressionSyntaxError(ExpressionError):
    """A jq expression does not compile."""


class ExpressionTimeout(ExpressionError):
    """An evaluation (jq expression or template) did not finish within its time budget
    (specs/limits.md). Its class name is the code ``onErrors`` and ``retries`` match."""


class ExpressionTooLarge(ExpressionError):
    """An evaluation's result, or the memory it needed, exceeded its budget (specs/limits.md)."""




class WorkflowError(XFlowError):
    """A runtime error inside a workflow instance that ``onErrors`` can match.

    ``name`` matches an error definition's ``name``; ``code`` matches its ``code``
    (an exception class name, an HTTP status such as ``"503"``, or a documented runtime code
    such as ``"timeout"``).
    """

    def __init__(self, message: str, *, name: str | None = None, code: str | None = None,
                 status: int | None = None, details: Any = None):
        super().__init__(message)
        self.name = name
        self.code = code
        self.status = status
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "code": self.code, "status": self.status, "message": str(self)}


class WorkflowFailed(XFlowError):
    """An instance ended because of an error no ``onErrors`` handled."""

    def __init__(self, instance_id: str, error: dict[str, Any]):
        self.instance_id = instance_id
        self.error = error
        super().__init__(f"workflow instance {instance_id} failed: {error.get('message')}")
