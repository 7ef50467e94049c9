"""Chat memory: the history an ``aiagent`` state's LLM calls carry.

Public API::

    from xflow_runtime.memory.chat import ChatMemory, ChatScope, WindowPolicy

    memory = ChatMemory.open(url)                                    # SQLite or PostgreSQL
    scope = ChatScope(agent="support-bot", session="s-42", user="u-1", tenant="acme")
    policy = WindowPolicy("token_window", max_tokens=2000)
    history = await memory.load_window(scope, policy, model="gpt-4o")
    await memory.append_turn(scope, turn_messages, model="gpt-4o")

``MemorySettings.from_definition(state["memory"])`` reads a state's ``memory`` object and
``settings.scope(...)`` resolves it for an instance. See ``specs/memory.md``.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ChatMemory": "memory", "ChatWindow": "memory", "AppendResult": "memory",
    "ChatInfo": "repository",
    "ChatScope": "scope", "ScopeMode": "scope",
    "WindowPolicy": "window", "WindowKind": "window", "Selection": "window",
    "select_window": "window", "DEFAULT_MAX_MESSAGES": "window", "DEFAULT_MAX_TOKENS": "window",
    "MemorySettings": "config",
    "TokenCounter": "tokens",
    "ChatMemoryError": "errors", "ChatNotFound": "errors",
    "validate_turn": "messages", "is_valid_window": "messages",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'xflow_runtime.memory.chat' has no attribute {name!r}")
    return getattr(importlib.import_module(f"xflow_runtime.memory.chat.{module}"), name)


__all__ = sorted(_EXPORTS)
