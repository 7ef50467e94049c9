"""``ChatMemory``: the public, async API of chat memory.

Resolve a window before every LLM call and store the turn after the step succeeded::

    memory = ChatMemory.open("sqlite:///./.xflow/xflow.db")      # or postgresql+psycopg://…
    history = await memory.load_window(scope, policy, model="gpt-4o")
    ... call the model with [system, *history, user, ...] ...
    await memory.append_turn(scope, [user, *assistant_and_tool_messages], model="gpt-4o")

Database work runs in worker threads (``asyncio.to_thread``), so the event loop is never
blocked. A ``ChatMemory`` is safe to share between tasks and threads.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generator, Sequence

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError, StatementError

from xflow_runtime.memory.chat import repository as repo
from xflow_runtime.memory.chat.errors import ChatMemoryError, ChatNotFound
from xflow_runtime.memory.chat.messages import validate_turn
from xflow_runtime.memory.chat.repository import ChatInfo
from xflow_runtime.memory.chat.scope import ChatScope
from xflow_runtime.memory.chat.tokens import TokenCounter
from xflow_runtime.memory.chat.window import WindowPolicy, select_window
from xflow_runtime.memory.longterm.privacy import check_not_erased
from xflow_runtime.storage.database import open_database, write_transaction

_log = logging.getLogger("xflow_runtime.memory.chat")
_TITLE_CHARS = 80


@dataclass(frozen=True)
class ChatWindow:
    """A resolved window: the messages (oldest first) and how they were chosen."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    tokens: int = 0
    encoding: str | None = None
    dropped_older: bool = False
    overflow: bool = False


@dataclass(frozen=True)
class AppendResult:
    chat_id: str
    first_sequence: int
    last_sequence: int


def _to_message(role: str, parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, **parts}


def _title(messages: Sequence[dict[str, Any]]) -> str | None:
    for message in messages:
        if message["role"] == "user" and isinstance(message.get("content"), str):
            text = " ".join(message["content"].split())
            return text[:_TITLE_CHARS] or None
    return None


def _first_batch(policy: WindowPolicy) -> int:
    if policy.message_limit is not None:
        return policy.message_limit + 1  # one past the limit tells us older messages exist
    return max(16, (policy.token_limit or 0) // 64 + 1)


class ChatMemory:
    """Chat histories in one database. Create with :meth:`open`; close with :meth:`close`."""

    def __init__(self, engine: Engine):
        self._engine = engine

    @classmethod
    def open(cls, url: str | None = None) -> "ChatMemory":
        """Open (and on first use create/migrate) the database at ``url``; default
        memory's place by the one rule of :mod:`xflow_runtime.settings` (``./.xflow/xflow.db``)."""
        return cls(open_database(url))

    @property
    def engine(self) -> Engine:
        return self._engine

    def close(self) -> None:
        self._engine.dispose()

    async def __aenter__(self) -> "ChatMemory":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    # -- the hot path -------------------------------------------------------------------------

    async def load_window(self, scope: ChatScope, policy: WindowPolicy, *,
                          model: str | None) -> list[dict[str, Any]]:
        """The history an LLM call should carry (OpenAI format, oldest first, no system message)."""
        return (await self.resolve_window(scope, policy, model=model)).messages

    async def resolve_window(self, scope: ChatScope, policy: WindowPolicy, *,
                             model: str | None) -> ChatWindow:
        """Like :meth:`load_window`, with the token total and whether anything was dropped."""
        return await asyncio.to_thread(self.resolve_window_sync, scope, policy, model=model)

    async def append_turn(self, scope: ChatScope, messages: Sequence[Any], *,
                          model: str | None, at: datetime | None = None) -> AppendResult | None:
        """Store one turn atomically (all its messages or none). ``None`` when stateless.
        ``at`` stamps the messages (importing an older conversation); default now."""
        return await asyncio.to_thread(self.append_turn_sync, scope, messages, model=model, at=at)

    def resolve_window_sync(self, scope: ChatScope, policy: WindowPolicy, *,
                            model: str | None) -> ChatWindow:
        key = scope.key()
        if key is None:
            return ChatWindow()
        counter = TokenCounter.for_model(model)
        read: list[repo.WindowRow] = []
        exact = counter.exact
        missing: dict[int, dict[str, int]] = {}

        with self._engine.connect() as connection:
            def stream() -> Generator[tuple[str, int], None, None]:
                for row in repo.newest_first(connection, key, _first_batch(policy), counter.encoding):
                    _, sequence, role, parts_json, raw, counts_json = row
                    if raw is None:  # stored under another model's encoding: count once, cache
                        raw = counter.raw_count(_to_message(role, json.loads(parts_json)))
                        missing[sequence] = {**json.loads(counts_json or "{}"), counter.encoding: raw}
                    read.append(row)
                    yield role, raw if exact else counter.scaled(raw)

            rows = stream()
            try:
                selection = select_window(rows, max_messages=policy.message_limit,
                                          max_tokens=policy.token_limit)
            finally:
                rows.close()  # closes the cursor now, not when the generator is collected
            connection.rollback()
        if missing:
            self._cache_counts(key, read[0][0], missing)
        if selection.overflow:
            _log.warning("chat memory %s/%s: the newest turn does not fit the window "
                         "(max_messages=%s, max_tokens=%s); the call carries no history",
                         key.agent, key.memory_id or f"user:{key.user}", policy.message_limit,
                         policy.token_limit)
        kept = read[selection.kept - 1::-1] if selection.kept else []
        # one decode for the whole window: a JSON array of the kept parts (half the cost of one each)
        parts = json.loads("[" + ",".join([r[3] for r in kept]) + "]")
        return ChatWindow(messages=[{"role": r[2], **p} for r, p in zip(kept, parts)],
                          tokens=selection.tokens, encoding=counter.encoding,
                          dropped_older=selection.dropped_older, overflow=selection.overflow)

    def _cache_counts(self, key: Any, chat_id: str, counts: dict[int, dict[str, int]]) -> None:
        """Store counts computed for a new encoding. Best effort: the window is already
        resolved, and a failure only means the next resolution counts these rows again."""
        try:
            with write_transaction(self._engine) as connection:
                repo.store_token_counts(connection, key, chat_id, counts)
        except SQLAlchemyError as exc:
            _log.info("chat memory: token counts not cached (%s)", type(exc).__name__)

    def append_turn_sync(self, scope: ChatScope, messages: Sequence[Any], *,
                         model: str | None, at: datetime | None = None) -> AppendResult | None:
        turn = validate_turn(messages)  # before the stateless check: bad input is always an error
        key = scope.key()
        if key is None:
            return None
        counter = TokenCounter.for_model(model)
        rows = [{"role": m["role"], "parts": {k: v for k, v in m.items() if k != "role"},
                 "token_counts": {counter.encoding: counter.raw_count(m)}} for m in turn]
        try:
            with write_transaction(self._engine) as connection:
                check_not_erased(connection, key.tenant, key.user, scope.erasure_epoch)
                chat_id, first = repo.reserve_sequences(connection, key, len(rows), _title(turn))
                repo.insert_messages(connection, key, chat_id, first, rows, at)
        except (StatementError, TypeError, ValueError) as exc:  # e.g. content that is not JSON
            cause = exc.orig if isinstance(exc, StatementError) else exc  # (rolled back)
            if not isinstance(cause, (TypeError, ValueError)):
                raise
            raise ChatMemoryError(f"could not store the turn: {cause}") from exc
        return AppendResult(chat_id, first, first + len(rows) - 1)

    # -- management ---------------------------------------------------------------------------

    async def list_chats(self, *, tenant: str = "default", user: str | None = None,
                         agent: str | None = None, limit: int | None = 100) -> list[ChatInfo]:
        """Chats of a tenant, most recently updated first, narrowed to a user and/or agent."""
        def run() -> list[ChatInfo]:
            with self._engine.connect() as connection:
                return repo.list_chats(connection, tenant, user, agent, limit)
        return await asyncio.to_thread(run)

    async def get_chat(self, chat_id: str, *, tenant: str = "default") -> ChatInfo:
        def run() -> ChatInfo:
            with self._engine.connect() as connection:
                chat = repo.get_chat(connection, tenant, chat_id)
            if chat is None:
                raise ChatNotFound(f"no chat {chat_id!r} in tenant {tenant!r}")
            return chat
        return await asyncio.to_thread(run)

    async def history(self, chat_id: str, *, tenant: str = "default") -> list[dict[str, Any]]:
        """Every message of a chat, oldest first, in OpenAI format."""
        def run() -> list[dict[str, Any]]:
            with self._engine.connect() as connection:
                chat = repo.get_chat(connection, tenant, chat_id)
                if chat is None:
                    raise ChatNotFound(f"no chat {chat_id!r} in tenant {tenant!r}")
                return [_to_message(r.role, r.parts) for r in repo.chat_messages(connection, chat)]
        return await asyncio.to_thread(run)

    async def delete_chat(self, chat_id: str, *, tenant: str = "default") -> int:
        """Delete a chat and its messages; return how many messages went."""
        def run() -> int:
            with write_transaction(self._engine) as connection:
                if repo.get_chat(connection, tenant, chat_id) is None:
                    raise ChatNotFound(f"no chat {chat_id!r} in tenant {tenant!r}")
                return repo.delete_chats(connection, tenant, [chat_id])
        return await asyncio.to_thread(run)

    async def clear(self, memory_id: str, *, tenant: str = "default", agent: str | None = None,
                    user: str | None = None) -> int:
        """Delete every chat stored under ``memory_id`` in the tenant (narrowed to an agent
        and/or user when given); return how many messages went."""
        def run() -> int:
            with write_transaction(self._engine) as connection:
                ids = repo.chat_ids_for_memory(connection, tenant, memory_id, agent, user)
                return repo.delete_chats(connection, tenant, ids)
        return await asyncio.to_thread(run)
