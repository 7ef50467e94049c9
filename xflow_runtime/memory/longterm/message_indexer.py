"""Embeds chat messages in the background, off the reply path (like fact extraction).

``kick(scope)`` after a turn is stored returns at once; one task per event loop embeds the
scope's pending messages (their contextual text, once per ``LongTermOptions.message_contexts``:
one embedding call more per message for each extra context, all off the reply path) in batches. Nothing is queued in a table: a
message without a vector row *is* the work, so a crash or a failed embedding call loses nothing
— the next kick for that scope (or ``xflow memory reindex``) picks the messages up again.
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy import Engine

from xflow_runtime.memory.longterm import message_index
from xflow_runtime.memory.longterm.background import PerLoopTask
from xflow_runtime.memory.longterm.embedder import Embedder
from xflow_runtime.memory.longterm.scope import MemoryScope
from xflow_runtime.storage.database import write_transaction

_log = logging.getLogger("xflow_runtime.memory.longterm")
BATCH = 64


class MessageIndexer:
    def __init__(self, engine: Engine, embedder: Embedder):
        self._engine = engine
        self._embedder = embedder
        self._contexts = embedder.options.message_contexts
        self._waiting: dict[asyncio.AbstractEventLoop, set[MemoryScope]] = {}
        self._worker = PerLoopTask("xflow-message-indexing", self._drain)

    def kick(self, scope: MemoryScope) -> None:
        """Index the scope's pending messages soon (no-op without an embedding model or user)."""
        if self._embedder.space is None or not scope.user:
            return
        self._waiting.setdefault(asyncio.get_running_loop(), set()).add(scope)
        self._worker.kick()

    async def wait_idle(self) -> None:
        await self._worker.wait_idle()

    async def close(self) -> None:
        await self._worker.close()
        self._waiting.clear()

    async def _drain(self) -> None:
        waiting = self._waiting.setdefault(asyncio.get_running_loop(), set())
        while waiting:
            scope = waiting.pop()
            try:
                await self.index(scope)
            except Exception:  # a broken index must never reach a conversation
                _log.exception("indexing chat messages failed")

    async def index(self, scope: MemoryScope) -> int:
        """Embed every pending message of ``scope`` in each context now; returns how many rows
        were written (a message counts once per context). Stops at the first failed embedding
        call (logged by the embedder; retried on the next kick)."""
        done = 0
        for context in self._contexts:
            written, complete = await self._index_context(scope, context)
            done += written
            if not complete:
                break
        return done

    async def _index_context(self, scope: MemoryScope, context: str) -> tuple[int, bool]:
        done = 0
        while True:
            batch = await asyncio.to_thread(self._pending, scope, context)
            if not batch:
                return done, True
            with_text = [message for message in batch if message.text is not None]
            embedded = await self._embedder.embed([m.text or "" for m in with_text], "document") \
                if with_text else None
            if with_text and embedded is None:
                return done, False
            by_key = dict(zip(((m.chat_id, m.sequence) for m in with_text), embedded.vectors if embedded else []))
            vectors = [by_key.get((m.chat_id, m.sequence)) for m in batch]
            done += await asyncio.to_thread(self._store, scope, batch, embedded.model if embedded else None, vectors)

    def _pending(self, scope: MemoryScope, context: str) -> list[message_index.PendingMessage]:
        with self._engine.connect() as connection:
            return message_index.pending(connection, scope, BATCH, context)

    def _store(self, scope: MemoryScope, batch: list[message_index.PendingMessage], model: str | None,
               vectors: list[list[float] | None]) -> int:
        with write_transaction(self._engine) as connection:
            return message_index.store(connection, scope, batch, model, vectors)
