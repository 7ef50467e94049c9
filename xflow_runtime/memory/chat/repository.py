"""SQL for chat memory (synchronous; ``ChatMemory`` runs it in worker threads).

Runtime statements (window, append) are filtered by the full scope (tenant, agent, user,
memoryId); management statements by tenant at least. None selects by an id alone.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
import typing
from typing import Any

from sqlalchemy import Connection, Row, Table, delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite

from xflow_runtime.memory.chat.scope import ChatKey
from xflow_runtime.storage.models import Chat, ChatMessage, utcnow

_chats = typing.cast(Table, Chat.__table__)  # a declarative model\'s table (typed FromClause)
_messages = typing.cast(Table, ChatMessage.__table__)  # a declarative model\'s table (typed FromClause)
_MAX_BATCH = 4096


@dataclass(frozen=True)
class ChatInfo:
    id: str
    tenant: str
    agent: str
    user: str | None
    memory_id: str
    title: str | None
    metadata: dict[str, Any]
    message_count: int
    created_at: datetime
    updated_at: datetime


def _scope_filter(key: ChatKey) -> list[Any]:
    return [_chats.c.tenant_id == key.tenant, _chats.c.agent_id == key.agent,
            _chats.c.user_id == key.user, _chats.c.memory_id == key.memory_id]


def reserve_sequences(connection: Connection, key: ChatKey, count: int,
                      title: str | None) -> tuple[str, int]:
    """Bump the chat's counter by ``count`` and return ``(chat id, first reserved sequence)``.

    The UPDATE takes the chat row's lock until the transaction ends, so concurrent writers of
    one chat queue here and their sequences never interleave; a rollback returns the numbers.
    The chat is created (``INSERT … ON CONFLICT DO NOTHING``) the first time only.
    """
    now = utcnow()
    bump = (update(_chats).where(*_scope_filter(key))
            .values(last_sequence=_chats.c.last_sequence + count, updated_at=now)
            .returning(_chats.c.id, _chats.c.last_sequence))
    row = connection.execute(bump).first()
    if row is None:
        insert = postgresql.insert if connection.dialect.name == "postgresql" else sqlite.insert
        connection.execute(insert(_chats).values(
            id=uuid.uuid4().hex, tenant_id=key.tenant, agent_id=key.agent, user_id=key.user,
            memory_id=key.memory_id, title=title, metadata={}, last_sequence=0, created_at=now,
            updated_at=now,
        ).on_conflict_do_nothing())
        row = connection.execute(bump).one()
    return row.id, row.last_sequence - count + 1


def insert_messages(connection: Connection, key: ChatKey, chat_id: str, first_sequence: int,
                    rows: Sequence[dict[str, Any]], at: datetime | None = None) -> None:
    """Insert ``rows`` (role, parts, token_counts) as one turn from ``first_sequence`` on,
    stamped ``at`` (default now)."""
    turn_id = uuid.uuid4().hex
    now = at or utcnow()
    connection.execute(_messages.insert(), [
        {"chat_id": chat_id, "sequence": first_sequence + i, "turn_id": turn_id,
         "tenant_id": key.tenant, "agent_id": key.agent, "user_id": key.user,
         "session_id": key.session, "position_in_turn": i, "created_at": now, **row}
        for i, row in enumerate(rows)])


#: The window read, written out per dialect and run on the DB-API cursor of the pooled
#: connection: SQLAlchemy's statement execution and row objects cost as much as the read itself
#: (~0.3 ms of ~0.8 ms for a 4,000-token window), and this statement never changes. The chat is
#: found by scope in a subquery; messages are filtered by scope again (every runtime query
#: carries the full scope). The row's count under the encoding is taken out of the JSON in SQL
#: and everything else comes back as text: a window decodes only the parts of the messages it
#: keeps (and the stored counts of a row only when that encoding is missing from them).
#: Columns: chat_id, sequence, role, parts (JSON text), tokens (int or None), token_counts (JSON text).
_WINDOW_SQL = {
    "sqlite": (
        "SELECT chat_id, sequence, role, parts, CAST(json_extract(token_counts, ?) AS INTEGER), "
        "token_counts FROM xflow_chat_messages "
        "WHERE chat_id = (SELECT id FROM xflow_chats WHERE tenant_id = ? AND agent_id = ? "
        "AND user_id = ? AND memory_id = ?) AND tenant_id = ? AND agent_id = ? AND user_id = ?"
        "{before} ORDER BY sequence DESC LIMIT ?", " AND sequence < ?"),
    "postgresql": (
        "SELECT chat_id, sequence, role, CAST(parts AS TEXT), CAST(token_counts ->> %s AS INTEGER), "
        "CAST(token_counts AS TEXT) FROM xflow_chat_messages "
        "WHERE chat_id = (SELECT id FROM xflow_chats WHERE tenant_id = %s AND agent_id = %s "
        "AND user_id = %s AND memory_id = %s) AND tenant_id = %s AND agent_id = %s AND user_id = %s"
        "{before} ORDER BY sequence DESC LIMIT %s", " AND sequence < %s"),
}
_WINDOW_STATEMENTS = {dialect: (sql.format(before=""), sql.format(before=before))
                      for dialect, (sql, before) in _WINDOW_SQL.items()}

#: a window row: (chat_id, sequence, role, parts JSON, tokens under the encoding or None, counts JSON)
WindowRow = tuple[str, int, str, str, int | None, str | None]


def _json_key(dialect: str, encoding: str) -> str:
    # SQLite's json_extract takes a path; the name is quoted so any encoding name is one key
    return f'$."{encoding}"' if dialect == "sqlite" else encoding


def newest_first(connection: Connection, key: ChatKey, first_batch: int,
                 encoding: str) -> Iterator[WindowRow]:
    """The chat's messages newest first, read lazily in growing batches over the
    (chat_id, sequence) primary key; ``row[4]`` is the count under ``encoding`` (``None``
    when not stored yet)."""
    dialect = connection.dialect.name
    first, later = _WINDOW_STATEMENTS[dialect]
    scope = (_json_key(dialect, encoding), key.tenant, key.agent, key.user, key.memory_id,
             key.tenant, key.agent, key.user)
    batch = max(1, min(first_batch, _MAX_BATCH))
    cursor = connection.connection.cursor()
    try:
        cursor.execute(first, (*scope, batch))
        while True:
            rows = cursor.fetchall()
            yield from rows
            if len(rows) < batch:
                return
            batch = min(batch * 2, _MAX_BATCH)
            cursor.execute(later, (*scope, rows[-1][1], batch))
    finally:
        cursor.close()


def store_token_counts(connection: Connection, key: ChatKey, chat_id: str,
                       counts: dict[int, dict[str, int]]) -> None:
    for sequence, token_counts in counts.items():
        connection.execute(update(_messages).where(
            _messages.c.chat_id == chat_id, _messages.c.sequence == sequence,
            _messages.c.tenant_id == key.tenant, _messages.c.agent_id == key.agent,
            _messages.c.user_id == key.user).values(token_counts=token_counts))


def _aware(moment: datetime) -> datetime:
    """SQLite returns the stored UTC timestamps without their zone; PostgreSQL with it."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def _info(row: Row[Any]) -> ChatInfo:
    return ChatInfo(id=row.id, tenant=row.tenant_id, agent=row.agent_id, user=row.user_id or None,
                    memory_id=row.memory_id, title=row.title, metadata=row.metadata or {},
                    message_count=row.last_sequence, created_at=_aware(row.created_at),
                    updated_at=_aware(row.updated_at))


def list_chats(connection: Connection, tenant: str, user: str | None, agent: str | None,
               limit: int | None) -> list[ChatInfo]:
    query = select(_chats).where(_chats.c.tenant_id == tenant)
    if user is not None:
        query = query.where(_chats.c.user_id == user)
    if agent is not None:
        query = query.where(_chats.c.agent_id == agent)
    query = query.order_by(_chats.c.updated_at.desc(), _chats.c.id).limit(limit)
    return [_info(row) for row in connection.execute(query)]


def get_chat(connection: Connection, tenant: str, chat_id: str) -> ChatInfo | None:
    row = connection.execute(select(_chats).where(_chats.c.tenant_id == tenant,
                                                  _chats.c.id == chat_id)).first()
    return None if row is None else _info(row)


def chat_messages(connection: Connection, chat: ChatInfo) -> list[Row[Any]]:
    return list(connection.execute(
        select(_messages.c.sequence, _messages.c.role, _messages.c.parts, _messages.c.session_id,
               _messages.c.created_at)
        .where(_messages.c.chat_id == chat.id, _messages.c.tenant_id == chat.tenant)
        .order_by(_messages.c.sequence)))


def delete_chats(connection: Connection, tenant: str, chat_ids: Sequence[str]) -> int:
    """Delete chats and their messages (explicitly, not only through the FK cascade, so a
    database opened without foreign keys enforced is cleaned too). Returns messages deleted."""
    if not chat_ids:
        return 0
    deleted = connection.execute(delete(_messages).where(_messages.c.tenant_id == tenant,
                                                         _messages.c.chat_id.in_(chat_ids)))
    connection.execute(delete(_chats).where(_chats.c.tenant_id == tenant, _chats.c.id.in_(chat_ids)))
    return deleted.rowcount or 0


def chat_ids_for_memory(connection: Connection, tenant: str, memory_id: str, agent: str | None,
                        user: str | None) -> list[str]:
    query = select(_chats.c.id).where(_chats.c.tenant_id == tenant, _chats.c.memory_id == memory_id)
    if agent is not None:
        query = query.where(_chats.c.agent_id == agent)
    if user is not None:
        query = query.where(_chats.c.user_id == user)
    return list(connection.execute(query).scalars())


def count_messages(connection: Connection, tenant: str) -> int:
    return connection.execute(select(func.count()).select_from(_messages)
                              .where(_messages.c.tenant_id == tenant)).scalar_one()
