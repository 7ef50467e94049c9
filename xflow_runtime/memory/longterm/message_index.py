"""SQL for the chat-message vectors (synchronous, scoped): what is still to embed, storing
vectors, and the semantic list over a user's chat archive.

A message is *pending* in a context (``context_text.MESSAGE_CONTEXTS``) while it has no row of
that context in ``xflow_message_embeddings`` (one row per message and context); only user and
assistant messages of chats with an end user are indexed (anonymous chats belong to nobody and
are never searched). A message without text gets a row without a vector, so it is not pending.
Every query is filtered by (tenant, agent, user).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
import typing
from typing import Any

from sqlalchemy import Connection, Table, delete, select, text, tuple_

from xflow_runtime.memory.longterm.context_text import message_in_context, speaker
from xflow_runtime.memory.longterm.scope import MemoryScope
from xflow_runtime.storage.longterm_models import MessageEmbeddingRow, vector_literal
from xflow_runtime.storage.models import ChatMessage, utcnow

vectors = typing.cast(Table, MessageEmbeddingRow.__table__)  # a declarative model\'s table (typed FromClause)
_m = ChatMessage.__table__.c
LOOKBACK = 50  # messages read before the first pending one of a chat, to find the turn it answers
_SCOPE = "m.tenant_id = :tenant AND m.agent_id = :agent AND m.user_id = :user"


@dataclass(frozen=True)
class PendingMessage:
    chat_id: str
    sequence: int
    text: str | None  # the contextual text to embed; None: nothing to embed
    context: str = "full"  # the context kind ``text`` was built in (part of the row's key)


def content_text(parts: Any) -> str:
    """The text of a stored message (a string, or the text parts of a content list)."""
    if isinstance(parts, str):
        parts = json.loads(parts)
    content = (parts or {}).get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content
                         if isinstance(part, dict) and part.get("type") == "text")
    return ""


def _params(scope: MemoryScope, **extra: Any) -> dict[str, Any]:
    return {"tenant": scope.tenant, "agent": scope.agent, "user": scope.user_id, **extra}


def _scope_filter(scope: MemoryScope) -> list[Any]:
    return [_m.tenant_id == scope.tenant, _m.agent_id == scope.agent, _m.user_id == scope.user_id]


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def pending(connection: Connection, scope: MemoryScope, limit: int, context: str = "full") -> list[PendingMessage]:
    """Up to ``limit`` messages of the scope's chats not yet indexed in ``context``
    (``context_text.MESSAGE_CONTEXTS``), with their text to embed in that context."""
    if not scope.user:
        return []
    keys = connection.execute(text(
        "SELECT m.chat_id, m.sequence FROM xflow_chat_messages m "
        "LEFT JOIN xflow_message_embeddings e ON e.chat_id = m.chat_id AND e.sequence = m.sequence "
        "AND e.context = :context "
        f"WHERE {_SCOPE} AND m.role IN ('user', 'assistant') AND e.chat_id IS NULL "
        "ORDER BY m.chat_id, m.sequence LIMIT :limit"), _params(scope, limit=limit, context=context)).all()
    wanted: dict[str, set[int]] = {}
    for key in keys:
        wanted.setdefault(key.chat_id, set()).add(key.sequence)
    found: list[PendingMessage] = []
    for chat_id, sequences in wanted.items():
        rows = connection.execute(
            select(_m.sequence, _m.role, _m.parts, _m.created_at)
            .where(_m.chat_id == chat_id, *_scope_filter(scope), _m.role.in_(("user", "assistant")),
                   _m.sequence.between(min(sequences) - LOOKBACK, max(sequences)))
            .order_by(_m.sequence)).all()
        answered: tuple[str, str] | None = None
        for row in rows:
            parts = row.parts or {}
            said = content_text(parts).strip()
            who = speaker(row.role, parts.get("name"))
            if row.sequence in sequences:
                found.append(PendingMessage(chat_id, row.sequence, message_in_context(
                    said, context, said_on=_aware(row.created_at), who=who, answers=answered) if said else None, context))
            if said:
                answered = (who, said)
    return found


def store(connection: Connection, scope: MemoryScope, messages: Sequence[PendingMessage],
          model: str | None, embeddings: Sequence[Sequence[float] | None]) -> int:
    """Insert one row per message and its context (its vector, or none); rows already there are
    left alone."""
    now = utcnow()
    rows = [{"chat_id": message.chat_id, "sequence": message.sequence, "tenant_id": scope.tenant,
             "agent_id": scope.agent, "user_id": scope.user_id, "context": message.context, "embedding": list(vector) if vector else None,
             "embedding_model": model if vector else None, "embedding_dim": len(vector) if vector else None,
             "created_at": now} for message, vector in zip(messages, embeddings)]
    if not rows:
        return 0
    from sqlalchemy.dialects import postgresql, sqlite

    insert = postgresql.insert if connection.dialect.name == "postgresql" else sqlite.insert
    connection.execute(insert(vectors).on_conflict_do_nothing(), rows)
    return len(rows)


def drop_other_spaces(connection: Connection, tenant: str, model: str | None,
                      contexts: Sequence[str] | None = None) -> int:
    """Forget the tenant's message vectors not in space ``model`` (they become pending again),
    and those of a context kind not in ``contexts`` (no longer searched)."""
    query = delete(vectors).where(vectors.c.tenant_id == tenant)
    if model is not None:
        stale = (vectors.c.embedding_model != model) | (vectors.c.embedding_model.is_(None))
        if contexts is not None:
            stale = stale | vectors.c.context.not_in(list(contexts))
        query = query.where(stale)
    return connection.execute(query).rowcount or 0


def scopes_with_messages(connection: Connection, tenant: str) -> list[MemoryScope]:
    """The (agent, user) pairs of a tenant that have chats with an end user (for re-indexing)."""
    rows = connection.execute(text(
        "SELECT DISTINCT agent_id, user_id FROM xflow_chats WHERE tenant_id = :tenant AND user_id <> '' "
        "ORDER BY agent_id, user_id"), {"tenant": tenant}).all()
    return [MemoryScope(tenant, row.agent_id, row.user_id) for row in rows]


#: centring needs enough vectors for their mean to be the scope's common direction, not one message
CENTRE_MIN_VECTORS = 8


def semantic(connection: Connection, scope: MemoryScope, model: str, vector: Sequence[float],
             k: int, centre: bool = True, context: str = "full") -> list[str]:
    """Keys (``chat_id:sequence``) of the scope's ``k`` nearest messages among their vectors of
    ``context`` (vectors of different contexts are never compared), exact, ties by key.

    ``centre``: cosine after subtracting the mean of the scope's vectors from every vector and
    from the query (when the scope holds at least ``CENTRE_MIN_VECTORS``). A small embedding
    model puts every turn of a conversation in one narrow cone ("anisotropy"): raw cosines sit
    close together and the turns most like an average turn (chit-chat) come near the top of
    every question. Removing the common direction (Mu & Viswanath, "All-but-the-Top", ICLR
    2018; the centring step of BERT-whitening) ranks by what sets a turn apart. Measured in
    ``specs/memory-longterm.md`` (ablation)."""
    if not scope.user:
        return []
    params = _params(scope, model=model, dim=len(vector), context=context)
    where = f"{_SCOPE} AND m.embedding_model = :model AND m.embedding_dim = :dim AND m.context = :context"
    if connection.dialect.name == "postgresql":
        distance = "embedding <=> CAST(:q AS vector)"
        if centre:  # pgvector: avg() of vectors and vector subtraction; the mean read in the same scan
            distance = (f"CASE WHEN centre.n >= {CENTRE_MIN_VECTORS} THEN (embedding - centre.mu) <=> "
                        f"(CAST(:q AS vector) - centre.mu) ELSE {distance} END")
        rows = connection.execute(text(
            f"WITH scoped AS MATERIALIZED (SELECT m.chat_id, m.sequence, m.embedding "
            f"FROM xflow_message_embeddings m WHERE {where}), "
            "centre AS (SELECT avg(embedding) AS mu, count(*) AS n FROM scoped) "
            f"SELECT chat_id, sequence FROM scoped, centre ORDER BY {distance}, chat_id, sequence "
            "LIMIT :k"), {**params, "q": vector_literal(vector), "k": k}).all()
        return [f"{row.chat_id}:{row.sequence}" for row in rows]
    import numpy

    rows = connection.execute(text(
        f"SELECT m.chat_id, m.sequence, m.embedding FROM xflow_message_embeddings m WHERE {where} "
        "ORDER BY m.chat_id, m.sequence"), params).all()  # in key order: a stable sort then breaks ties by key
    if not rows:
        return []
    matrix = numpy.frombuffer(b"".join(row.embedding for row in rows), dtype=numpy.float32).reshape(
        len(rows), len(vector))
    query = numpy.asarray(vector, dtype=numpy.float32)
    if centre and len(rows) >= CENTRE_MIN_VECTORS:
        mean = matrix.mean(axis=0)
        matrix, query = matrix - mean, query - mean
        lengths = numpy.linalg.norm(matrix, axis=1)
        matrix = matrix / numpy.where(lengths > 0, lengths, 1.0)[:, None]  # a vector at the mean scores 0
    scores = matrix @ query
    best = numpy.argsort(-scores, kind="stable")[:k]  # numpy, not a Python sort of every row: lists run 50 deep
    return [f"{rows[i].chat_id}:{rows[i].sequence}" for i in best.tolist()]


def _rows(connection: Connection, scope: MemoryScope, keys: Sequence[str]) -> list[Any]:
    pairs = [(key.rsplit(":", 1)[0], int(key.rsplit(":", 1)[1])) for key in keys]
    if not pairs or not scope.user:
        return []
    return list(connection.execute(select(_m.chat_id, _m.sequence, _m.parts).where(
        *_scope_filter(scope), tuple_(_m.chat_id, _m.sequence).in_(pairs))).all())


def _parts(row: Any) -> dict[str, Any]:
    parts = json.loads(row.parts) if isinstance(row.parts, str) else row.parts
    return parts if isinstance(parts, dict) else {}


def texts(connection: Connection, scope: MemoryScope, keys: Sequence[str]) -> dict[str, str]:
    """The stored text of messages of the scope, by key."""
    return {f"{row.chat_id}:{row.sequence}": content_text(row.parts) for row in _rows(connection, scope, keys)}


def texts_and_speakers(connection: Connection, scope: MemoryScope,
                       keys: Sequence[str]) -> dict[str, tuple[str, str]]:
    """(stored text, the speaker's ``name`` or "") of messages of the scope, by key."""
    found: dict[str, tuple[str, str]] = {}
    for row in _rows(connection, scope, keys):
        name = _parts(row).get("name")
        found[f"{row.chat_id}:{row.sequence}"] = (content_text(row.parts), name.strip() if isinstance(name, str) else "")
    return found
