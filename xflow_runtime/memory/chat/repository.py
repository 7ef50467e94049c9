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

from sqlalchemy import Connection, Row, Table, Text, bindparam, cast, delete, func, select, update
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


def _window_statements(encoding: str) -> tuple[Any, Any]:
    """The window read for one encoding, built once (statement construction costs more than the
    read itself). The chat is found by scope in a subquery; messages are filtered by scope
    again. The row's count under ``encoding`` is taken out of the JSON in SQL and everything
    else comes back as text: a window decodes only the parts of the messages it keeps (and the
    stored counts of a row only when that encoding is missing from them)."""
    chat_id = select(_chats.c.id).where(
        _chats.c.tenant_id == bindparam("tenant"), _chats.c.agent_id == bindparam("agent"),
        _chats.c.user_id == bindparam("user"), _chats.c.memory_id == bindparam("memory_id"),
    ).scalar_subquery()
    newest = (select(_messages.c.chat_id, _messages.c.sequence, _messages.c.role,
                     cast(_messages.c.parts, Text).label("parts_json"),
                     _messages.c.token_counts[encoding].as_integer().label("tokens"),
                     cast(_messages.c.token_counts, Text).label("counts_json"))
              .where(_messages.c.chat_id == chat_id, _messages.c.tenant_id == bindparam("tenant"),
                     _messages.c.agent_id == bindparam("agent"),
                     _messages.c.user_id == bindparam("user"))
              .order_by(_messages.c.sequence.desc()).limit(bindparam("batch")))
    return newest, newest.where(_messages.c.sequence < bindparam("before"))


_WINDOW_STATEMENTS: dict[str, tuple[Any, Any]] = {}


def newest_first(connection: Connection, key: ChatKey, first_batch: int, encoding: str) -> Iterator[Row[Any]]:
    """The chat's messages newest first, read lazily in growing batches over the
    (chat_id, sequence) primary key; ``row.tokens`` is the count under ``encoding`` (``None``
    when not stored yet)."""
    statements = _WINDOW_STATEMENTS.get(encoding)
    if statements is None:
        statements = _WINDOW_STATEMENTS.setdefault(encoding, _window_statements(encoding))
    params: dict[str, Any] = {"tenant": key.tenant, "agent": key.agent, "user": key.user,
                              "memory_id": key.memory_id,
                              "batch": max(1, min(first_batch, _MAX_BATCH))}
    statement = statements[0]
    while True:
        rows = connection.execute(statement, params).all()
        yield from rows
        if len(rows) < params["batch"]:
            return
        statement = statements[1]
        params["before"] = rows[-1].sequence
        params["batch"] = min(params["batch"] * 2, _MAX_BATCH)


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
