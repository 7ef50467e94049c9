"""OpenAI-format chat messages: normalisation and turn validation (pure, no I/O).

A stored message keeps exactly the keys every provider understands through litellm:
``role``, ``content`` (a string, ``None`` or a list of content parts), ``tool_calls``
(``[{"id", "type": "function", "function": {"name", "arguments": str}}]``), ``tool_call_id`` and
``name``. Other keys are not stored. System messages are never stored: the state supplies its
system message on every call, outside the window.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from xflow_runtime.memory.chat.errors import ChatMemoryError

STORED_ROLES = ("user", "assistant", "tool")
_KEYS = ("content", "tool_calls", "tool_call_id", "name")


def _as_mapping(message: Any) -> Mapping[str, Any]:
    if isinstance(message, Mapping):
        return message
    dump = getattr(message, "model_dump", None)  # litellm / pydantic message objects
    if callable(dump):
        return dump(exclude_none=True)
    raise ChatMemoryError(f"a chat message must be a mapping, got {type(message).__name__}")


def _normalise_tool_call(call: Any, position: str) -> dict[str, Any]:
    call = _as_mapping(call)
    function = call.get("function")
    if not isinstance(function, Mapping) or not call.get("id") or not function.get("name"):
        raise ChatMemoryError(f"{position}: a tool call needs an id and a function name")
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"id": str(call["id"]), "type": "function",
            "function": {"name": str(function["name"]), "arguments": arguments}}


def normalise_message(message: Any, position: str = "message") -> dict[str, Any]:
    """Return the stored form of one message, or raise :class:`ChatMemoryError`."""
    message = _as_mapping(message)
    role = message.get("role")
    if role not in STORED_ROLES:
        raise ChatMemoryError(f"{position}: role {role!r} cannot be stored in chat memory "
                              f"(expected one of {', '.join(STORED_ROLES)}; system messages are "
                              "never stored)")
    out: dict[str, Any] = {"role": role}
    content = message.get("content")
    if content is not None and not isinstance(content, (str, list)):
        raise ChatMemoryError(f"{position}: content must be a string, a list of parts or null")
    out["content"] = content
    if role == "assistant" and message.get("tool_calls"):
        out["tool_calls"] = [_normalise_tool_call(c, position) for c in message["tool_calls"]]
    if role == "tool":
        if not message.get("tool_call_id"):
            raise ChatMemoryError(f"{position}: a tool message needs a tool_call_id")
        out["tool_call_id"] = str(message["tool_call_id"])
    if message.get("name"):
        out["name"] = str(message["name"])
    return out


def validate_turn(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Normalise a turn and check its tool-call structure.

    Rules, so that any suffix of stored history starting at a user message is valid for every
    provider: the results of an assistant message's tool calls follow it directly (any order),
    one per call id, before any other message; a tool result never appears anywhere else.
    """
    normalised = [normalise_message(m, f"message {i}") for i, m in enumerate(messages)]
    if not normalised:
        raise ChatMemoryError("a turn needs at least one message")
    pending: set[str] = set()
    for i, message in enumerate(normalised):
        if message["role"] == "tool":
            call_id = message["tool_call_id"]
            if call_id not in pending:
                raise ChatMemoryError(f"message {i}: tool result {call_id!r} does not answer a "
                                      "call of the assistant message before it")
            pending.discard(call_id)
            continue
        if pending:
            raise ChatMemoryError(f"message {i}: tool call(s) {sorted(pending)} have no result "
                                  "before the next message")
        if message["role"] == "assistant" and message.get("tool_calls"):
            ids = [c["id"] for c in message["tool_calls"]]
            if len(set(ids)) != len(ids):
                raise ChatMemoryError(f"message {i}: duplicate tool call ids {ids}")
            pending = set(ids)
    if pending:
        raise ChatMemoryError(f"tool call(s) {sorted(pending)} have no result in the turn")
    return normalised


def is_valid_window(messages: Sequence[Mapping[str, Any]]) -> bool:
    """True when a message list can open a provider request after the system message."""
    if not messages:
        return True
    if messages[0]["role"] != "user":
        return False
    pending: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            if message.get("tool_call_id") not in pending:
                return False
            pending.discard(message["tool_call_id"])
            continue
        if pending:
            return False
        if message["role"] == "assistant" and message.get("tool_calls"):
            pending = {c["id"] for c in message["tool_calls"]}
    return not pending
