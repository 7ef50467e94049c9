"""Keyset pages of chats and of memories/facts, newest first by (created_at, id).

Neither key changes after a row is written (a chat's ``updated_at`` does on every turn, which is
why the management list ordered by it cannot be paged): a page starts strictly after the last
(created_at, id) of the previous one, so rows inserted meanwhile never shift the pages — no row
is skipped or shown twice. Rows created after the first page was read sort before it and are
not shown. Synchronous SQL on an open connection; every statement is scoped by tenant at least.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
import typing
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection, Table, and_, or_, select

from xflow_runtime.memory.chat import repository as chats
from xflow_runtime.memory.chat.repository import ChatInfo
from xflow_runtime.memory.longterm import repository as memories
from xflow_runtime.memory.longterm.records import Memory, MemoryKind
from xflow_runtime.memory.longterm.scope import MemoryScope
from xflow_runtime.storage.models import Chat

Item = TypeVar("Item")
_chats = typing.cast(Table, Chat.__table__)  # a declarative model\'s table (typed FromClause)


@dataclass(frozen=True)
class PageKey:
    """Where a page ends: the (created_at, id) of its last row."""

    created_at: datetime
    id: str


@dataclass(frozen=True)
class KeysetPage(Generic[Item]):
    items: list[Item]
    next: PageKey | None  # None: this was the last page


def _after(columns: Any, key: PageKey | None) -> list[Any]:
    if key is None:
        return []
    return [or_(columns.created_at < key.created_at,
                and_(columns.created_at == key.created_at, columns.id < key.id))]


def _page(items: list[Item], limit: int, key_of: Any) -> KeysetPage[Item]:
    if len(items) <= limit:
        return KeysetPage(items, None)
    kept = items[:limit]
    created_at, item_id = key_of(kept[-1])
    return KeysetPage(kept, PageKey(created_at, item_id))


def chat_page(connection: Connection, tenant: str, *, user: str | None, agent: str | None,
              after: PageKey | None, limit: int) -> KeysetPage[ChatInfo]:
    """Chats of a tenant (narrowed to a user and/or an agent), newest first."""
    query = select(_chats).where(_chats.c.tenant_id == tenant, *_after(_chats.c, after))
    if user is not None:
        query = query.where(_chats.c.user_id == user)
    if agent is not None:
        query = query.where(_chats.c.agent_id == agent)
    rows = connection.execute(query.order_by(_chats.c.created_at.desc(), _chats.c.id.desc()).limit(limit + 1))
    return _page([chats._info(row) for row in rows], limit, lambda chat: (chat.created_at, chat.id))


def memory_page(connection: Connection, scope: MemoryScope, kind: MemoryKind, *, after: PageKey | None,
                limit: int) -> KeysetPage[Memory]:
    """Memories or facts of one scope, newest first."""
    columns = memories.memories.c
    rows = connection.execute(
        select(*memories.MEMORY_COLUMNS).where(*memories.scope_filter(scope), columns.kind == kind,
                                               *_after(columns, after))
        .order_by(columns.created_at.desc(), columns.id.desc()).limit(limit + 1)).all()
    found = [(memories.to_memory(row), row.created_at) for row in rows]
    page = _page(found, limit, lambda pair: (pair[1], pair[0].id))
    return KeysetPage([memory for memory, _ in page.items], page.next)
