"""Where an agent's conversation history lives between turns (and between agent states).

Two stores behind one small interface (:class:`ConversationStore`):

- :class:`InstanceConversations` (default): kept with the running instance, so it lasts as long
  as the instance and is rebuilt exactly by a durable replay (every LLM answer it holds comes from
  a recorded step). A ``maxMessages`` window is applied at turn boundaries, so a tool call is
  never separated from its results.
- :class:`ChatMemoryConversations`: the persistent chat memory (``xflow_runtime.memory.chat``),
  used when the runtime provides one as ``context.services["chat_memory"]``. Loading and storing
  go through ``port.run_step``, so a replay neither reads a different window nor stores twice.

Scope: the state's ``memory`` settings resolved for the instance (``memoryId``, or
``instance:<id>`` when absent — shared by the instance's agent states without a ``memoryId``).
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

Message = dict[str, Any]


class ConversationStore(Protocol):
    async def load(self, scope: Any, policy: Any, *, model: str, step: str) -> list[Message]: ...

    async def append(self, scope: Any, messages: Sequence[Message], *, model: str, step: str) -> None: ...


def scope_key(scope: Any) -> Any:
    """A hashable identity of a chat scope (its storage key when it has one)."""
    return scope.key() if hasattr(scope, "key") else scope


class InstanceConversations:
    """History held in memory for one instance."""

    def __init__(self) -> None:
        self._turns: dict[Any, list[list[Message]]] = {}

    async def load(self, scope: Any, policy: Any, *, model: str, step: str) -> list[Message]:
        if _stateless(scope):
            return []
        turns = self._turns.get(scope_key(scope), [])
        limit = getattr(policy, "max_messages", None)
        kept: list[list[Message]] = []
        count = 0
        for turn in reversed(turns):  # newest first; whole turns only
            if limit is not None and count + len(turn) > limit and kept:
                break
            kept.append(turn)
            count += len(turn)
        return [message for turn in reversed(kept) for message in turn]

    async def append(self, scope: Any, messages: Sequence[Message], *, model: str, step: str) -> None:
        if not _stateless(scope):
            self._turns.setdefault(scope_key(scope), []).append([dict(message) for message in messages])


class ChatMemoryConversations:
    """History in the persistent chat memory, every access a recorded step."""

    def __init__(self, memory: Any, port: Any) -> None:
        self._memory = memory
        self._port = port

    async def load(self, scope: Any, policy: Any, *, model: str, step: str) -> list[Message]:
        return await self._port.run_step(step, lambda: self._memory.load_window(scope, policy, model=model))

    async def append(self, scope: Any, messages: Sequence[Message], *, model: str, step: str) -> None:
        async def store() -> None:
            await self._memory.append_turn(scope, list(messages), model=model)

        await self._port.run_step(step, store)


def _stateless(scope: Any) -> bool:
    return hasattr(scope, "key") and scope.key() is None


def conversations_for(run: Any) -> ConversationStore:
    """The store an instance's agent states use (created once per instance)."""
    existing = getattr(run, "_agent_conversations", None)
    if existing is not None:
        return existing
    memory = (getattr(run.context, "services", None) or {}).get("chat_memory")
    store: ConversationStore = ChatMemoryConversations(memory, run.port) if memory is not None else InstanceConversations()
    run._agent_conversations = store
    return store
