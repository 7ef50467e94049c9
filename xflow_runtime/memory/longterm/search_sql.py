"""Ranked candidate lists for hybrid search, per dialect (synchronous, scoped, deterministic).

* semantic — cosine over the scope's vectors *of one embedding model and dimension* (vectors of
  other models are never compared). PostgreSQL: scope-first exact search when the scope holds at
  most ``exact_threshold`` vectors; above it the model's HNSW index with
  ``hnsw.iterative_scan = relaxed_order`` (so a selective scope filter cannot starve the scan),
  re-sorted exactly, and checked: fewer than ``min(k, vectors in scope)`` rows → exact search.
  SQLite: the scope's vectors are read and scored in-process (numpy).
* keyword — PostgreSQL FTS (``simple`` configuration, OR of the query's words; memories by
  ``ts_rank``, chat messages by ``ts_rank_cd``) or SQLite FTS5 (``bm25``), over memories and over
  the user's chat messages. The query's
  English function words (``STOP_WORDS``) are left out unless nothing else is left: with OR
  semantics "what", "did", "her" match most turns of a conversation and filled the keyword list
  with turns the question does not name (``specs/memory-longterm.md``, ablation).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, text

from xflow_runtime.memory.longterm.scope import MemoryScope
from xflow_runtime.memory.longterm.sql_text import quoted
from xflow_runtime.storage.longterm_models import vector_literal

_WORD = re.compile(r"\w+")
MAX_QUERY_WORDS = 32
_SCOPE = "m.tenant_id = :tenant AND m.agent_id = :agent AND m.user_id = :user"


#: English function words (question words, pronouns, auxiliaries, articles, prepositions): the
#: classic stop list of keyword search, kept short; words of other languages are kept as asked.
STOP_WORDS = frozenset(
    "a about after again all am an and any are as at be been before being both but by can could "
    "did do does doing during each few for from had has have having he her here hers herself him "
    "himself his how i if in into is it its itself just me more most my myself no nor not now of "
    "off on once only or other our ours ourselves out over own same she should so some such than "
    "that the their theirs them themselves then there these they this those through to too under "
    "until up very was we were what when where which while who whom why will with would you your "
    "yours yourself yourselves".split())


def query_words(query: str) -> list[str]:
    """The distinct words of ``query`` (casefolded, at most ``MAX_QUERY_WORDS``) without
    ``STOP_WORDS`` — all of them when only stop words are there ("who is she?")."""
    words: list[str] = []
    for word in _WORD.findall(query.casefold()):
        if word not in words:
            words.append(word)
    content = [word for word in words if word not in STOP_WORDS]
    return (content or words)[:MAX_QUERY_WORDS]


def _params(scope: MemoryScope, **extra: Any) -> dict[str, Any]:
    return {"tenant": scope.tenant, "agent": scope.agent, "user": scope.user_id, **extra}


def _kinds_sql(kinds: Sequence[str]) -> str:
    return "m.kind IN (" + ", ".join(f"'{kind}'" for kind in kinds if kind in ("memory", "fact")) + ")"


# ------------------------------------------------------------------------------ semantic


def semantic(connection: Connection, scope: MemoryScope, kinds: Sequence[str], model: str,
             vector: Sequence[float], k: int, exact_threshold: int) -> list[tuple[str, float]]:
    """Up to ``k`` (id, cosine similarity), most similar first, ties by id."""
    if connection.dialect.name == "postgresql":
        return _semantic_postgres(connection, scope, kinds, model, vector, k, exact_threshold)
    return _semantic_in_process(connection, scope, kinds, model, vector, k)


def _semantic_in_process(connection: Connection, scope: MemoryScope, kinds: Sequence[str], model: str,
                         vector: Sequence[float], k: int) -> list[tuple[str, float]]:
    import numpy

    rows = connection.execute(text(
        f"SELECT m.id, m.embedding FROM xflow_memories m WHERE {_SCOPE} AND {_kinds_sql(kinds)} "
        "AND m.embedding_model = :model AND m.embedding_dim = :dim"),
        _params(scope, model=model, dim=len(vector))).all()
    if not rows:
        return []
    matrix = numpy.frombuffer(b"".join(row.embedding for row in rows), dtype=numpy.float32)
    similarities = matrix.reshape(len(rows), len(vector)) @ numpy.asarray(vector, dtype=numpy.float32)
    scored = sorted(((-float(similarity), row.id) for similarity, row in zip(similarities, rows)))
    return [(memory_id, -negative) for negative, memory_id in scored[:k]]


def _semantic_postgres(connection: Connection, scope: MemoryScope, kinds: Sequence[str], model: str,
                       vector: Sequence[float], k: int, exact_threshold: int) -> list[tuple[str, float]]:
    dim = len(vector)
    where = f"{_SCOPE} AND {_kinds_sql(kinds)} AND m.embedding_model = :model AND m.embedding_dim = :dim"
    params = _params(scope, model=model, dim=dim, q=vector_literal(vector), k=k)
    in_scope = connection.execute(text(
        f"SELECT count(*) FROM (SELECT 1 FROM xflow_memories m WHERE {where} LIMIT :cap) s"),
        {**params, "cap": exact_threshold + 1}).scalar_one()
    if in_scope == 0:
        return []
    if in_scope > exact_threshold:
        return semantic_large_scope(connection, scope, kinds, model, vector, k)
    return _exact_postgres(connection, where, params)


def _exact_postgres(connection: Connection, where: str, params: dict[str, Any]) -> list[tuple[str, float]]:
    # Scope first, then distance: the CTE is materialised, so no index can drop rows.
    return [(row.id, 1.0 - row.distance) for row in connection.execute(text(
        f"WITH scoped AS MATERIALIZED (SELECT m.id, m.embedding FROM xflow_memories m WHERE {where}) "
        "SELECT id, embedding <=> CAST(:q AS vector) AS distance FROM scoped "
        "ORDER BY distance, id LIMIT :k"), params)]


def semantic_large_scope(connection: Connection, scope: MemoryScope, kinds: Sequence[str], model: str,
                         vector: Sequence[float], k: int) -> list[tuple[str, float]]:
    """A scope known to hold more than ``k`` vectors: the HNSW path, verified complete (exact
    search when it returned fewer than ``k`` rows). PostgreSQL only."""
    dim = len(vector)
    params = _params(scope, model=model, dim=dim, q=vector_literal(vector), k=k)
    rows = _approximate_postgres(connection, scope, kinds, model, dim, params)
    if len(rows) >= k:
        return rows
    where = f"{_SCOPE} AND {_kinds_sql(kinds)} AND m.embedding_model = :model AND m.embedding_dim = :dim"
    return _exact_postgres(connection, where, params)


def semantic_exact(connection: Connection, scope: MemoryScope, kinds: Sequence[str], model: str,
                   vector: Sequence[float], k: int) -> list[tuple[str, float]]:
    """Exact search of the scope, whatever its size (PostgreSQL; a fallback)."""
    where = f"{_SCOPE} AND {_kinds_sql(kinds)} AND m.embedding_model = :model AND m.embedding_dim = :dim"
    return _exact_postgres(connection, where, _params(scope, model=model, dim=len(vector),
                                                      q=vector_literal(vector), k=k))


def _approximate_postgres(connection: Connection, scope: MemoryScope, kinds: Sequence[str], model: str,
                          dim: int, params: dict[str, Any]) -> list[tuple[str, float]]:
    # The model and dimension are literals so the planner can match the per-model partial index.
    expression = f"(m.embedding::vector({dim}))"
    where = (f"{_SCOPE} AND {_kinds_sql(kinds)} AND m.embedding_model = {quoted(model)} "
             f"AND m.embedding_dim = {dim}")
    connection.execute(text("SET LOCAL hnsw.iterative_scan = relaxed_order"))
    connection.execute(text(f"SET LOCAL hnsw.ef_search = {max(40, 2 * int(params['k']))}"))
    rows = connection.execute(text(
        f"SELECT id, distance FROM (SELECT m.id, {expression} <=> CAST(:q AS vector({dim})) AS distance "
        f"FROM xflow_memories m WHERE {where} ORDER BY distance LIMIT :k) s ORDER BY distance, id"),
        params).all()
    return [(row.id, 1.0 - row.distance) for row in rows]


_indexed: set[tuple[str, str, int]] = set()


def ensure_vector_index(connection: Connection, model: str, dim: int) -> None:
    """Create the HNSW index for one embedding model (PostgreSQL; idempotent)."""
    import hashlib

    cache_key = (str(connection.engine.url), model, dim)
    if cache_key in _indexed:
        return
    name = "ix_xflow_memories_hnsw_" + hashlib.sha1(f"{model}\x00{dim}".encode()).hexdigest()[:12]
    connection.execute(text("SELECT pg_advisory_xact_lock(7865436019)"))
    connection.execute(text(
        f"CREATE INDEX IF NOT EXISTS {name} ON xflow_memories USING hnsw "
        f"((embedding::vector({dim})) vector_cosine_ops) "
        f"WHERE embedding_model = {quoted(model)} AND embedding_dim = {int(dim)}"))
    _indexed.add(cache_key)  # (set before commit: a rolled-back creation is retried next process)


# ------------------------------------------------------------------------------ keyword

_PG_MEMORY_TEXT = "m.search_vector"  # stored generated column (migration 0002)
_PG_MESSAGE_TEXT = "to_tsvector('simple', coalesce(m.parts->>'content', ''))"


def keyword_memories(connection: Connection, scope: MemoryScope, kinds: Sequence[str], query: str,
                     k: int, offset: int = 0) -> list[str]:
    """Ids of memories matching any word of ``query``, best first, ties by id."""
    words = query_words(query)
    if not words:
        return []
    if connection.dialect.name == "postgresql":
        tsquery = " | ".join(f"'{word}'" for word in words)
        sql = (f"SELECT m.id FROM xflow_memories m WHERE {_SCOPE} AND {_kinds_sql(kinds)} "
               f"AND {_PG_MEMORY_TEXT} @@ to_tsquery('simple', :q) "
               f"ORDER BY ts_rank({_PG_MEMORY_TEXT}, to_tsquery('simple', :q)) DESC, m.id "
               "LIMIT :k OFFSET :offset")
    else:
        tsquery = " OR ".join(f'"{word}"' for word in words)
        sql = (f"SELECT m.id FROM xflow_memories_fts JOIN xflow_memories m ON m.row_key = xflow_memories_fts.rowid "
               f"WHERE xflow_memories_fts MATCH :q AND {_SCOPE} AND {_kinds_sql(kinds)} "
               "ORDER BY bm25(xflow_memories_fts), m.id LIMIT :k OFFSET :offset")
    return list(connection.execute(text(sql), _params(scope, q=tsquery, k=k, offset=offset)).scalars())


def keyword_messages(connection: Connection, scope: MemoryScope, query: str, k: int) -> list[tuple[str, str]]:
    """``(chat_id:sequence, text)`` of the user's user/assistant chat messages with this agent
    matching any word, best first. Only for a scope with a user: anonymous chats belong to no one."""
    words = query_words(query)
    if not words or not scope.user:
        return []
    chats = ("SELECT c.id FROM xflow_chats c WHERE c.tenant_id = :tenant AND c.agent_id = :agent "
             "AND c.user_id = :user")
    if connection.dialect.name == "postgresql":
        tsquery = " | ".join(f"'{word}'" for word in words)
        sql = (f"SELECT m.chat_id, m.sequence, m.parts->>'content' AS text FROM xflow_chat_messages m "
               f"WHERE m.chat_id IN ({chats}) AND {_SCOPE} AND m.role IN ('user', 'assistant') "
               f"AND {_PG_MESSAGE_TEXT} @@ to_tsquery('simple', :q) "
               f"ORDER BY ts_rank_cd({_PG_MESSAGE_TEXT}, to_tsquery('simple', :q)) DESC, m.chat_id, m.sequence "
               "LIMIT :k")
    else:
        tsquery = " OR ".join(f'"{word}"' for word in words)
        sql = ("SELECT m.chat_id, m.sequence, xflow_chat_messages_fts.text AS text FROM xflow_chat_messages_fts "
               "JOIN xflow_chat_messages m ON m.chat_id = xflow_chat_messages_fts.chat_id "
               "AND m.sequence = xflow_chat_messages_fts.sequence "
               f"WHERE xflow_chat_messages_fts MATCH :q AND m.chat_id IN ({chats}) AND {_SCOPE} "
               "AND m.role IN ('user', 'assistant') "
               "ORDER BY bm25(xflow_chat_messages_fts), m.chat_id, m.sequence LIMIT :k")
    rows = connection.execute(text(sql), _params(scope, q=tsquery, k=k)).all()
    return [(f"{row.chat_id}:{row.sequence}", row.text or "") for row in rows]
