"""SQL for memories and facts (synchronous; :class:`LongTermMemory` runs it in worker threads).

Every statement is filtered by the full scope (tenant, agent, user), never by an id alone.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Sequence
import typing
from typing import Any, Unpack

from sqlalchemy import Connection, Row, Table, delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite

from xflow_runtime.memory.longterm.embedder import Embedded
from xflow_runtime.memory.longterm.errors import MemoryConflict
from xflow_runtime.memory.longterm.records import Memory, MemoryKind
from xflow_runtime.memory.longterm.scope import MemoryScope
from xflow_runtime.storage.longterm_models import LongTermMemoryRow
from xflow_runtime.storage.models import utcnow

memories = typing.cast(Table, LongTermMemoryRow.__table__)  # a declarative model\'s table (typed FromClause)
_c = memories.c
MEMORY_COLUMNS = (_c.id, _c.kind, _c.title, _c.content, _c.tags, _c.category, _c.importance, _c.source,
            _c.embedding_model, _c.created_at, _c.updated_at)
MAX_TITLE = 200


def title_key(title: str) -> str:
    """Titles match case-insensitively and ignoring runs of whitespace."""
    return " ".join(title.split()).casefold()[:MAX_TITLE]


def scope_filter(scope: MemoryScope, table: Any = memories) -> list[Any]:
    return [table.c.tenant_id == scope.tenant, table.c.agent_id == scope.agent,
            table.c.user_id == scope.user_id]


def to_memory(row: Row[Unpack[tuple[Any, ...]]]) -> Memory:
    return Memory(id=row.id, kind=row.kind, content=row.content, title=row.title,
                  tags=tuple(row.tags or ()), category=row.category, importance=row.importance,
                  source=row.source, embedding_model=row.embedding_model,
                  created_at=row.created_at, updated_at=row.updated_at)


def _insert(connection: Connection) -> Any:
    return (postgresql.insert if connection.dialect.name == "postgresql" else sqlite.insert)(memories)


def vector_values(embedded: Embedded | None, index: int = 0) -> dict[str, Any]:
    if embedded is None:
        return {"embedding": None, "embedding_model": None, "embedding_dim": None}
    return {"embedding": embedded.vectors[index], "embedding_model": embedded.model,
            "embedding_dim": embedded.dimensions}


def new_row(scope: MemoryScope, kind: MemoryKind, content: str, **values: Any) -> dict[str, Any]:
    now = utcnow()
    return {"id": uuid.uuid4().hex[:16], "row_key": secrets.randbits(62), "tenant_id": scope.tenant,
            "agent_id": scope.agent, "user_id": scope.user_id, "kind": kind, "content": content,
            "tags": [], "created_at": now, "updated_at": now, **values}


def upsert_by_title(connection: Connection, scope: MemoryScope, title: str, content: str,
                    tags: Sequence[str], embedded: Embedded | None) -> tuple[Memory, bool]:
    """Create the memory or update the one with the same title, atomically (``ON CONFLICT``:
    concurrent writers of one title leave one row, last writer's content)."""
    row = new_row(scope, "memory", content, title=title, title_key=title_key(title), tags=list(tags),
                  **vector_values(embedded))
    statement = _insert(connection).values(**row)
    statement = statement.on_conflict_do_update(
        index_elements=["tenant_id", "agent_id", "user_id", "kind", "title_key"],
        set_={"title": statement.excluded.title, "content": statement.excluded.content,
              "tags": statement.excluded.tags, "embedding": statement.excluded.embedding,
              "embedding_model": statement.excluded.embedding_model,
              "embedding_dim": statement.excluded.embedding_dim, "updated_at": statement.excluded.updated_at},
    ).returning(*MEMORY_COLUMNS)
    stored = connection.execute(statement).one()
    return to_memory(stored), stored.id == row["id"]


def create(connection: Connection, scope: MemoryScope, title: str, content: str, tags: Sequence[str],
           embedded: Embedded | None) -> Memory:
    row = new_row(scope, "memory", content, title=title, title_key=title_key(title), tags=list(tags),
                  **vector_values(embedded))
    stored = connection.execute(_insert(connection).values(**row).on_conflict_do_nothing()
                                .returning(*MEMORY_COLUMNS)).first()
    if stored is None:
        raise MemoryConflict(f"a memory titled {title!r} already exists in this scope")
    return to_memory(stored)


def get(connection: Connection, scope: MemoryScope, memory_id: str) -> Memory | None:
    row = connection.execute(select(*MEMORY_COLUMNS).where(*scope_filter(scope), _c.id == memory_id)).first()
    return None if row is None else to_memory(row)


def get_many(connection: Connection, scope: MemoryScope, ids: Sequence[str]) -> dict[str, Memory]:
    if not ids:
        return {}
    rows = connection.execute(select(*MEMORY_COLUMNS).where(*scope_filter(scope), _c.id.in_(list(ids))))
    return {row.id: to_memory(row) for row in rows}


def update_memory(connection: Connection, scope: MemoryScope, memory_id: str, values: dict[str, Any]) -> Memory | None:
    """Update an agent memory's title/content/tags (and vector). ``None``: no such memory. A new
    title that another memory of the scope already has raises :class:`MemoryConflict`."""
    if "title" in values:
        clash = connection.execute(select(_c.id).where(
            *scope_filter(scope), _c.kind == "memory", _c.title_key == title_key(values["title"]),
            _c.id != memory_id)).first()
        if clash is not None:
            raise MemoryConflict(f"a memory titled {values['title']!r} already exists in this scope")
        values = {**values, "title_key": title_key(values["title"])}
    row = connection.execute(update(memories).where(*scope_filter(scope), _c.id == memory_id)
                             .values(**values, updated_at=utcnow()).returning(*MEMORY_COLUMNS)).first()
    return None if row is None else to_memory(row)


def delete_memory(connection: Connection, scope: MemoryScope, memory_id: str) -> bool:
    result = connection.execute(delete(memories).where(*scope_filter(scope), _c.id == memory_id))
    return (result.rowcount or 0) > 0


def recent(connection: Connection, scope: MemoryScope, kind: MemoryKind, count: int) -> list[Memory]:
    """The ``count`` most recently created of a kind, listed oldest first (stable under updates)."""
    if count <= 0:
        return []
    rows = connection.execute(select(*MEMORY_COLUMNS).where(*scope_filter(scope), _c.kind == kind)
                              .order_by(_c.created_at.desc(), _c.id.desc()).limit(count)).all()
    return [to_memory(row) for row in reversed(rows)]


def page(connection: Connection, scope: MemoryScope, kind: MemoryKind | None, offset: int,
         limit: int) -> tuple[list[Memory], bool]:
    """Newest first; also says whether more rows follow."""
    query = select(*MEMORY_COLUMNS).where(*scope_filter(scope))
    if kind is not None:
        query = query.where(_c.kind == kind)
    rows = connection.execute(query.order_by(_c.created_at.desc(), _c.id.desc())
                              .offset(offset).limit(limit + 1)).all()
    return [to_memory(row) for row in rows[:limit]], len(rows) > limit


def count(connection: Connection, scope: MemoryScope, kind: MemoryKind | None = None) -> int:
    query = select(func.count()).select_from(memories).where(*scope_filter(scope))
    if kind is not None:
        query = query.where(_c.kind == kind)
    return connection.execute(query).scalar_one()


def same_fact(connection: Connection, scope: MemoryScope, content: str) -> str | None:
    """A fact of the scope with the same text (case and spacing aside): dedup without vectors."""
    wanted = " ".join(content.split()).casefold()
    rows = connection.execute(select(_c.id, _c.content).where(*scope_filter(scope), _c.kind == "fact")
                              .order_by(_c.created_at, _c.id))
    for row in rows:
        if " ".join(row.content.split()).casefold() == wanted:
            return row.id
    return None


def insert_fact(connection: Connection, scope: MemoryScope, content: str, category: str, importance: int,
                source: str | None, embedded: Embedded | None, index: int) -> str:
    row = new_row(scope, "fact", content, category=category, importance=importance, source=source,
                  **vector_values(embedded, index))
    connection.execute(memories.insert().values(**row))
    return row["id"]


def refresh_fact(connection: Connection, scope: MemoryScope, fact_id: str, content: str, category: str,
                 importance: int, embedded: Embedded | None, index: int) -> None:
    """Update a near-duplicate in place: content, vector, category, importance and updated_at
    change; created_at (and so its place in the injected block) stays."""
    connection.execute(update(memories).where(*scope_filter(scope), _c.id == fact_id).values(
        content=content, category=category, importance=importance, updated_at=utcnow(),
        **vector_values(embedded, index)))
