"""Errors of chat memory that a user can see."""

from __future__ import annotations

from xflow_runtime.errors import XFlowError


class ChatMemoryError(XFlowError):
    """Chat memory was configured or used wrongly (bad scope, bad window, malformed turn)."""


class ChatNotFound(ChatMemoryError):
    """No chat with this id exists in the tenant."""
