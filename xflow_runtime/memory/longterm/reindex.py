"""Re-embedding a tenant's data under the current embedding configuration (``xflow memory reindex``).

Rows whose vector is missing or was made in another space (another model, other query/document
modes: ``embedding_modes.space_key``) are embedded again, memories and facts as
``context_text.memory_text``, chat messages as ``context_text.message_text``. ``force`` re-embeds
everything (after a change of the contextual format). Stored content never changes. The work
goes in batches, each in its own transaction, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine, or_, select, update

from xflow_runtime.memory.longterm import message_index, search_sql
from xflow_runtime.memory.longterm.context_text import memory_text
from xflow_runtime.memory.longterm.embedder import Embedder
from xflow_runtime.memory.longterm.errors import LongTermMemoryError
from xflow_runtime.memory.longterm.message_indexer import MessageIndexer
from xflow_runtime.memory.longterm.repository import memories, vector_values
from xflow_runtime.storage.database import write_transaction

BATCH = 64
_c = memories.c


@dataclass(frozen=True)
class ReindexReport:
    tenant: str
    space: str
    memories: int  # memories and facts re-embedded
    messages: int  # message vectors (re-)indexed: one per chat message and context kind

    def to_dict(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "space": self.space, "memories": self.memories, "messages": self.messages}


def _stale(connection: Any, tenant: str, space: str, after: str, force: bool) -> list[Any]:
    query = select(_c.id, _c.kind, _c.title, _c.content).where(_c.tenant_id == tenant, _c.id > after)
    if not force:
        query = query.where(or_(_c.embedding_model.is_(None), _c.embedding_model != space))
    return connection.execute(query.order_by(_c.id).limit(BATCH)).all()


async def reindex_tenant(engine: Engine, embedder: Embedder, indexer: MessageIndexer, tenant: str, *,
                         force: bool = False) -> ReindexReport:
    space = embedder.space
    if space is None:
        raise LongTermMemoryError("re-indexing needs an embedding model")

    def read(after: str) -> list[Any]:
        with engine.connect() as connection:
            return _stale(connection, tenant, space, after, force)

    def write(rows: list[Any], embedded: Any) -> None:
        with write_transaction(engine) as connection:
            if connection.dialect.name == "postgresql":
                search_sql.ensure_vector_index(connection, embedded.model, embedded.dimensions)
            for index, row in enumerate(rows):
                connection.execute(update(memories).where(_c.tenant_id == tenant, _c.id == row.id)
                                   .values(**vector_values(embedded, index)))

    done, after = 0, ""
    while rows := await asyncio.to_thread(read, after):
        embedded = await embedder.embed([memory_text(r.title if r.kind == "memory" else None, r.content)
                                         for r in rows], "document")
        if embedded is None:
            raise LongTermMemoryError(f"the embedding call failed after {done} memories; run reindex again")
        await asyncio.to_thread(write, rows, embedded)
        done, after = done + len(rows), rows[-1].id

    def forget_messages() -> list[Any]:
        with write_transaction(engine) as connection:
            message_index.drop_other_spaces(connection, tenant, None if force else space,
                                            embedder.options.message_contexts)
            return message_index.scopes_with_messages(connection, tenant)

    messages = 0
    for scope in await asyncio.to_thread(forget_messages):
        messages += await indexer.index(scope)
        if await asyncio.to_thread(_has_pending, engine, scope, embedder.options.message_contexts):
            raise LongTermMemoryError(f"the embedding call failed after {messages} messages; run reindex again")
    return ReindexReport(tenant, space, done, messages)


def _has_pending(engine: Engine, scope: Any, contexts: Sequence[str]) -> bool:
    with engine.connect() as connection:
        return any(message_index.pending(connection, scope, 1, context) for context in contexts)
