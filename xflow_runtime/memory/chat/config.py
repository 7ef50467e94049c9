"""The ``memory`` object of an ``aiagent`` state, read into settings and resolved into a scope.

``memory: {memoryId, memoryType, maxMessages, maxTokens, enabled, scope}``

* absent → history scoped to the workflow instance (``instance:<id>``), shared by the
  instance's agent states that have no ``memoryId``;
* ``memoryId`` → a literal, or an expression over the state data (``${ .sessionId }``),
  evaluated when the state runs; a value that is not a non-empty string/number is an error;
* ``scope`` → ``session`` (default), ``user`` (one rolling history per user; the memoryId is
  then only recorded on each message) or ``none``; ``enabled: false`` is the same as ``none``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from xflow_runtime.memory.chat.errors import ChatMemoryError
from xflow_runtime.memory.chat.scope import ChatScope, ScopeMode
from xflow_runtime.memory.chat.window import WindowKind, WindowPolicy

_KNOWN_KEYS = {"memoryId", "memoryType", "maxMessages", "maxTokens", "enabled", "scope"}


@dataclass(frozen=True)
class MemorySettings:
    """What a state's ``memory`` object asks for, compiled once with the plan."""

    mode: ScopeMode = ScopeMode.SESSION
    policy: WindowPolicy = WindowPolicy()
    memory_id: str | None = None  # literal, or the text of an expression
    memory_id_expression: Any = None  # compiled JqExpression when memory_id is ``${ … }``

    @classmethod
    def from_definition(cls, memory: Mapping[str, Any] | None) -> "MemorySettings":
        if memory is None:
            return cls()
        if not isinstance(memory, Mapping):
            raise ChatMemoryError("memory must be an object")
        unknown = set(memory) - _KNOWN_KEYS
        if unknown:
            raise ChatMemoryError(f"memory: unknown field(s) {sorted(unknown)}; expected "
                                  f"{sorted(_KNOWN_KEYS)}")
        enabled = memory.get("enabled", True)
        if not isinstance(enabled, bool):
            raise ChatMemoryError("memory.enabled must be true or false")
        try:
            mode = ScopeMode(memory.get("scope", "session"))
        except ValueError:
            raise ChatMemoryError(f"memory.scope {memory.get('scope')!r}: expected none, "
                                  "session or user") from None
        policy = WindowPolicy(kind=memory.get("memoryType", WindowKind.MESSAGE.value),
                              max_messages=memory.get("maxMessages"),
                              max_tokens=memory.get("maxTokens"))
        memory_id = memory.get("memoryId")
        expression = None
        if memory_id is not None:
            if not isinstance(memory_id, str) or not memory_id.strip():
                raise ChatMemoryError("memory.memoryId must be a non-empty string or expression")
            from xflow_runtime.expressions import compile_expression, is_expression

            if is_expression(memory_id):
                expression = compile_expression(memory_id)
        return cls(mode=ScopeMode.NONE if not enabled else mode, policy=policy,
                   memory_id=memory_id, memory_id_expression=expression)

    @property
    def enabled(self) -> bool:
        return self.mode is not ScopeMode.NONE

    def resolve_memory_id(self, data: Any, variables: Mapping[str, Any] | None = None) -> str | None:
        if self.memory_id_expression is None:
            return self.memory_id
        value = self.memory_id_expression.evaluate(data, variables)
        if isinstance(value, bool) or not isinstance(value, (str, int, float)) or value == "":
            raise ChatMemoryError(f"memory.memoryId {self.memory_id!r} evaluated to {value!r}; "
                                  "expected a non-empty string or number")
        return str(value)

    def scope(self, *, agent: str, instance_id: str, data: Any, tenant: str = "default",
              user: str | None = None, variables: Mapping[str, Any] | None = None) -> ChatScope:
        """The scope a state's LLM calls read and write in this instance."""
        if self.mode is ScopeMode.NONE:
            return ChatScope(agent=agent, tenant=tenant, user=user, mode=ScopeMode.NONE)
        memory_id = self.resolve_memory_id(data, variables)
        session = memory_id if memory_id is not None else f"instance:{instance_id}"
        return ChatScope(agent=agent, session=session, user=user, tenant=tenant, mode=self.mode)
