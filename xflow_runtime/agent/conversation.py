"""Where an agent's conversation history lives between turns (and between agent states).

Two stores behind one small interface (:class:`ConversationStore`):

- :class:`InstanceConversations` (default): kept with the running instance, so it lasts as long
  as the instance and is rebuilt exactly by a durable replay (every LLM answer it holds comes from
  a recorded step). The window is chosen exactly as chat memory chooses it
  (:func:`xflow_runtime.memory.chat.window.select_window` over
  :class:`~xflow_runtime.memory.chat.tokens.TokenCounter` counts): ``maxMessages``/``maxTokens``,
  starting at a user message, tool calls kept with their results, and an empty window when even
  the newest turn does not fit.
- :class:`ChatMemoryConversations`: the persistent chat memory (``xflow_runtime.memory.chat``),
  used for scopes with a ``memoryId`` (or ``scope: user``) when the runtime provides one as
  ``context.services.chat_memory``. Loading and storing
  go through ``port.run_step``, so a replay neither reads a different window nor stores twice.

Scope: the state's ``memory`` settings resolved for the instance (``memoryId``, or
``instance:<id>`` when absent — shared by the instance's agent states without a ``memoryId``).
"""

from __future__ import annotations

import logging
from typing import Any, Protocol, Sequence

from xflow_runtime.interpreter.state_run import CacheKey, StateRun

Message = dict[str, Any]
_log = logging.getLogger("xflow_runtime.agent")


class ConversationStore(Protocol):
    async def load(self, scope: Any, policy: Any, *, model: str, step: str) -> list[Message]: ...

    async def append(self, scope: Any, messages: Sequence[Message], *, model: str, step: str) -> None: ...


def scope_key(scope: Any) -> Any:
    """A hashable identity of a chat scope (its storage key when it has one)."""
    return scope.key() if hasattr(scope, "key") else scope


class InstanceConversations:
    """History held in memory for one instance: per scope, its messages oldest first, each with
    its token counts by encoding (counted once, like chat memory's cached counts)."""

    def __init__(self) -> None:
        self._messages: dict[Any, list[tuple[Message, dict[str, int]]]] = {}

    async def load(self, scope: Any, policy: Any, *, model: str, step: str) -> list[Message]:
        if _stateless(scope):
            return []
        from xflow_runtime.memory.chat.window import select_window

        stored = self._messages.get(scope_key(scope), [])
        if policy is None:  # no policy: the whole history
            return [dict(message) for message, _ in stored]
        token_limit = policy.token_limit
        counter = _counter(model) if token_limit is not None else None

        def newest_first() -> Any:
            for message, counts in reversed(stored):
                if counter is None:  # no token budget: never load a tokenizer
                    yield message["role"], 0
                    continue
                raw = counts.get(counter.encoding)
                if raw is None:
                    raw = counts[counter.encoding] = counter.raw_count(message)
                yield message["role"], counter.scaled(raw)

        selection = select_window(newest_first(), max_messages=policy.message_limit, max_tokens=token_limit)
        if selection.overflow:
            _log.warning("agent history %s: the newest turn does not fit the window (max_messages=%s, "
                         "max_tokens=%s); the call carries no history", scope_key(scope),
                         policy.message_limit, token_limit)
        kept = stored[len(stored) - selection.kept:] if selection.kept else []
        return [dict(message) for message, _ in kept]

    async def append(self, scope: Any, messages: Sequence[Message], *, model: str, step: str) -> None:
        if not _stateless(scope):
            from xflow_runtime.memory.chat.messages import validate_turn

            # Stored in chat memory's normalised form, so both stores hold (and window) the same.
            turn = validate_turn(messages)
            self._messages.setdefault(scope_key(scope), []).extend((message, {}) for message in turn)


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


def _counter(model: str) -> Any:
    from xflow_runtime.memory.chat.tokens import TokenCounter

    return TokenCounter.for_model(model)


def _stateless(scope: Any) -> bool:
    return hasattr(scope, "key") and scope.key() is None


#: The instance's stores (one per instance and kind, in its cache).
_CONVERSATIONS: CacheKey[ConversationStore] = CacheKey("agent conversations")
_CHAT_MEMORY: CacheKey[ConversationStore] = CacheKey("agent chat memory")


def conversations_for(run: StateRun, *, persistent: bool) -> ConversationStore:
    """The store of an instance's (``run``: the top-level instance) agent states, created once
    per instance and kind. ``persistent`` scopes (a ``memoryId``, or ``scope: user``) use the
    runtime's chat memory when it provides one; the instance's own history never does: it lives
    and dies with the instance, and a durable replay rebuilds it from the recorded LLM steps."""
    if not persistent:
        return run.cached(_CONVERSATIONS, InstanceConversations)

    def make() -> ConversationStore:
        memory = run.services.chat_memory
        if memory is None:  # no chat memory: every scope lives in the instance's one store
            return conversations_for(run, persistent=False)
        return ChatMemoryConversations(memory, run.port)

    return run.cached(_CHAT_MEMORY, make)
