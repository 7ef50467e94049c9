"""Errors of long-term memory that a user (or the model, through a tool result) can see."""

from __future__ import annotations

from xflow_runtime.errors import XFlowError


class LongTermMemoryError(XFlowError):
    """Long-term memory was configured or used wrongly (bad scope, bad arguments)."""


class MemoryNotFound(LongTermMemoryError):
    """No memory with this id exists in the scope."""


class MemoryConflict(LongTermMemoryError):
    """A memory with this title already exists in the scope (strict create)."""
