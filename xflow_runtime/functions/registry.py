"""Python callables an embedding application provides for ``custom`` functions.

A callable is registered under a function *name* (``functions[].name``) or an *operation*
string (``functions[].operation``, e.g. ``python:billing.charge:run`` or any runtime-defined
text). Lookup tries the name first, then the operation; the registry always wins over importing
a ``python:`` operation, so tests and embedders can substitute an implementation.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class FunctionRegistry:
    """A thread-safe mapping from function names / operation strings to callables."""

    def __init__(self) -> None:
        self._callables: dict[str, Callable[..., Any]] = {}
        self._lock = threading.Lock()

    def register(self, key: str, function: Callable[..., Any] | None = None) -> Any:
        """Register ``function`` under ``key``; without ``function``, act as a decorator.

        Registering a key twice replaces the earlier callable.
        """
        if not isinstance(key, str) or not key:
            raise ValueError("a registry key must be a non-empty string (a function name or an operation)")
        if function is None:
            def decorator(target: F) -> F:
                self.register(key, target)
                return target

            return decorator
        if not callable(function):
            raise TypeError(f"registry entry {key!r} must be callable, got {type(function).__name__}")
        with self._lock:
            self._callables[key] = function
        return function

    def unregister(self, key: str) -> None:
        with self._lock:
            self._callables.pop(key, None)

    def lookup(self, name: str, operation: str) -> Callable[..., Any] | None:
        """The callable registered under ``name``, else under ``operation``, else ``None``."""
        return self._callables.get(name) or self._callables.get(operation)

    def __contains__(self, key: object) -> bool:
        return key in self._callables

    def __len__(self) -> int:
        return len(self._callables)
