"""Lint rule: chat memory settings of agent states are consistent (XF123 errors, XF124 warnings).

``message_window`` (the default type) keeps the newest ``maxMessages`` messages, ``token_window``
the newest whole messages that fit ``maxTokens``. Each type needs its own sizing field (no silent
default: how much history a model sees is a cost and privacy decision), unless memory is switched
off (``enabled: false`` or ``scope: none``). The schema says the same; the loader keeps one
diagnostic per pointer, so this rule speaks only when a schema does not. The memory component
applies every explicit limit whatever the type (specs/memory.md §1.3), so a lone limit of the other
type is legal but usually means the other type was intended: a warning (XF124).
"""

from __future__ import annotations

from typing import Any

from xflow_runtime.definition.source_map import join_pointer
from xflow_runtime.definition.walk import Reporter, states

_SIZING = {"message_window": "maxMessages", "token_window": "maxTokens"}


def check_memory(document: dict[str, Any], report: Reporter) -> None:
    for state, pointer in states(document):
        memory = state.get("memory")
        if not isinstance(memory, dict):
            continue
        at = lambda *tokens: join_pointer(pointer, "memory", *tokens)  # noqa: E731
        memory_type = memory.get("memoryType", "message_window")
        for field in ("maxMessages", "maxTokens"):
            if field in memory and not _positive_int(memory[field]):
                report(at(field), f"{field} must be a positive integer, found {memory[field]!r}", "XF123")
        if not isinstance(memory_type, str) or memory_type not in _SIZING:
            continue  # the schema reports unknown memory types
        own = _SIZING[memory_type]
        other = next(f for t, f in _SIZING.items() if t != memory_type)
        switched_off = memory.get("enabled") is False or memory.get("scope") == "none"
        if own not in memory and not switched_off:
            report(join_pointer(pointer, "memory"), f"memoryType {memory_type} needs {own}", "XF123")
        if other in memory and own not in memory:
            other_type = next(t for t, f in _SIZING.items() if f == other)
            report(at(other), f"{other} is given without {own} while memoryType is {memory_type}; did you mean "
                   f"memoryType {other_type}?", "XF124", severity="warning", prefer_key=True)


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
