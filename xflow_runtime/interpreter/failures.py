"""Runtime failures and how they match error definitions (``onErrors``, retryable lists).

Every exception raised inside a state becomes a :class:`Failure`. A definition matches a failure
when (specs/semantics.md, "Errors"):

- its ``name`` equals the failure's ``name``; or
- its ``code`` is ``/regex/`` (``/regex/i``: case-insensitive) and the regex is found in the message; or
- its ``code`` equals the failure's ``code``, its HTTP ``status`` (``"503"``), the class name of the
  exception or of any base class (``ValueError``, ``builtins.ValueError``, ``Exception``), or a Java
  alias of one of those (``java.lang.IllegalArgumentException`` for ``ValueError``…).
"""

from __future__ import annotations

from typing import Any, Iterable

from xflow_runtime.error_codes import TIMEOUT
from xflow_runtime.errors import WorkflowError
from xflow_runtime.plan.model import ErrorDef


_JAVA_ALIASES: dict[str, tuple[str, ...]] = {
    "java.lang.Exception": ("Exception",),
    "java.lang.RuntimeException": ("Exception",),
    "java.lang.Throwable": ("BaseException", "Exception"),
    "java.lang.IllegalArgumentException": ("ValueError",),
    "java.lang.IllegalStateException": ("RuntimeError",),
    "java.lang.NullPointerException": ("TypeError", "AttributeError"),
    "java.lang.ArithmeticException": ("ArithmeticError",),
    "java.lang.IndexOutOfBoundsException": ("IndexError",),
    "java.lang.UnsupportedOperationException": ("NotImplementedError",),
    "java.io.IOException": ("OSError",),
    "java.net.ConnectException": ("ConnectionError",),
    "java.util.NoSuchElementException": ("KeyError", "LookupError"),
    "java.util.concurrent.TimeoutException": (TIMEOUT, "TimeoutError"),
}

_MISSING = object()


class Failure(Exception):
    """An error inside a workflow instance, in the form ``onErrors`` matches against.

    ``data`` is the state data when the failure happened (set by the code that knows it), which is
    what an ``onErrors`` transition passes on.
    """

    def __init__(self, message: str, *, name: str | None = None, code: str | None = None,
                 status: int | None = None, types: tuple[str, ...] = (), details: Any = None):
        super().__init__(message)
        self.message = message
        self.name = name
        self.code = code
        self.status = status
        self.types = types
        self.details = details
        self.data: Any = _MISSING
        self.state: str | None = None

    @classmethod
    def from_exception(cls, exc: BaseException) -> "Failure":
        if isinstance(exc, Failure):
            return exc
        # an error read back from a durable record keeps the class names of the original
        types = getattr(exc, "recorded_types", None) or _type_names(type(exc))
        if isinstance(exc, WorkflowError):
            return cls(str(exc), name=exc.name, code=exc.code, status=exc.status, types=types, details=exc.details)
        code = type(exc).__name__
        return cls(str(exc) or code, code=code, types=types)

    @classmethod
    def timeout(cls, what: str, seconds: float) -> "Failure":
        return cls(f"{what} timed out after {seconds:g} s", name=TIMEOUT, code=TIMEOUT,
                   types=("TimeoutError", TIMEOUT))

    @property
    def has_data(self) -> bool:
        return self.data is not _MISSING

    def with_data(self, data: Any) -> "Failure":
        if self.data is _MISSING:
            self.data = data
        return self

    def matches(self, definition: ErrorDef) -> bool:
        if self.name is not None and definition.name == self.name:
            return True
        code = definition.code
        if code is None:
            return False
        if definition.code_pattern is not None:
            return definition.code_pattern.search(self.message) is not None
        if code == self.code or (self.status is not None and code == str(self.status)):
            return True
        return code in self.types or any(alias in self.types for alias in _JAVA_ALIASES.get(code, ()))

    def matches_any(self, definitions: Iterable[ErrorDef]) -> bool:
        return any(self.matches(definition) for definition in definitions)

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = {"name": self.name, "code": self.code, "status": self.status,
                                  "message": self.message}
        if self.state is not None:
            result["state"] = self.state
        if self.details is not None:
            result["details"] = self.details
        return result


def _type_names(kind: type) -> tuple[str, ...]:
    names: list[str] = []
    for klass in kind.__mro__:
        if klass is object:
            continue
        names.append(klass.__name__)
        names.append(f"{klass.__module__}.{klass.__qualname__}")
    return tuple(names)
