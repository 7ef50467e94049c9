"""PostgreSQL hybrid candidates in one round trip: the semantic list (scope-first exact search),
the keyword list and the rows of both, from one statement.

The scope's vectors are counted (bounded by ``exact_threshold + 1``, on the scope index) and
read only when there are at most ``exact_threshold``; otherwise the statement's semantic list is
empty and :func:`search_sql.semantic` takes the HNSW path (large scopes are rare; small ones are
the hot path and cost one round trip).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from xflow_runtime.memory.longterm import search_sql
from xflow_runtime.memory.longterm.records import Memory
from xflow_runtime.memory.longterm.scope import MemoryScope
from xflow_runtime.storage.longterm_models import vector_literal

_SCOPE = ("m.tenant_id = %(tenant)s AND m.agent_id = %(agent)s AND m.user_id = %(user)s "
          "AND m.kind = ANY(%(kinds)s)")
_TSV = "m.search_vector"  # stored generated column (migration 0002)

_SEMANTIC = f"""
counted AS (
  SELECT count(*) AS n FROM (SELECT 1 FROM xflow_memories m
    WHERE {_SCOPE} AND m.embedding_model = %(model)s AND m.embedding_dim = %(dim)s LIMIT %(cap)s) bounded),
scoped AS MATERIALIZED (
  SELECT m.id, m.embedding FROM xflow_memories m
  WHERE {_SCOPE} AND m.embedding_model = %(model)s AND m.embedding_dim = %(dim)s
    AND (SELECT n FROM counted) < %(cap)s),
nearest AS (
  SELECT id, embedding <=> %(q)s::vector AS distance FROM scoped ORDER BY distance, id LIMIT %(k)s),
semantic AS (
  SELECT id, 'semantic' AS list, row_number() OVER (ORDER BY distance, id) AS rank FROM nearest)"""

_KEYWORD = f"""
keyword AS (
  SELECT id, 'keyword' AS list, row_number() OVER (ORDER BY score DESC, id) AS rank FROM (
    SELECT m.id, ts_rank_cd({_TSV}, to_tsquery('simple', %(words)s)) AS score FROM xflow_memories m
    WHERE {_SCOPE} AND {_TSV} @@ to_tsquery('simple', %(words)s)
    ORDER BY score DESC, m.id LIMIT %(k)s) ranked)"""

_SELECT = """
SELECT h.list, h.rank, m.id, m.kind, m.title, m.content, m.tags
FROM ({lists}) h LEFT JOIN xflow_memories m ON m.id = h.id"""


@dataclass
class Candidates:
    lists: dict[str, list[str]]
    rows: dict[str, Memory]


def _statement(semantic: bool, keyword: bool) -> str:
    parts = ([_SEMANTIC] if semantic else []) + ([_KEYWORD] if keyword else [])
    selects = [f"SELECT id, list, rank FROM {name}"
               for name, on in (("semantic", semantic), ("keyword", keyword)) if on]
    if semantic:  # one extra row carries the bounded count of the scope's vectors
        selects.append("SELECT NULL, 'count', n FROM counted")
    return "WITH " + ",".join(parts) + _SELECT.format(lists=" UNION ALL ".join(selects))


_STATEMENTS = {(s, k): _statement(s, k) for s in (True, False) for k in (True, False) if s or k}


def candidates(connection: Connection, scope: MemoryScope, kinds: Sequence[str], query: str,
               model: str | None, vector: Sequence[float] | None, k: int, exact_threshold: int) -> Candidates:
    words = search_sql.query_words(query)
    semantic, keyword = vector is not None and model is not None, bool(words)
    lists: dict[str, list[str]] = {}
    rows: dict[str, Memory] = {}
    if not semantic and not keyword:
        return Candidates(lists, rows)
    params: dict[str, Any] = {"tenant": scope.tenant, "agent": scope.agent, "user": scope.user_id,
                              "kinds": list(kinds), "k": k}
    if semantic:
        params.update(model=model, dim=len(vector), cap=exact_threshold + 1,  # type: ignore[arg-type]
                      q=vector_literal(vector))  # type: ignore[arg-type]
    if keyword:
        params["words"] = " | ".join(f"'{word}'" for word in words)
    ranked: dict[str, list[tuple[int, str]]] = {}
    in_scope = 0
    for row in connection.exec_driver_sql(_STATEMENTS[(semantic, keyword)], params):
        if row.list == "count":
            in_scope = row.rank
            continue
        ranked.setdefault(row.list, []).append((row.rank, row.id))
        rows[row.id] = Memory(id=row.id, kind=row.kind, content=row.content, title=row.title,
                              tags=tuple(row.tags if isinstance(row.tags, list) else json.loads(row.tags or "[]")))
    too_many = semantic and in_scope > exact_threshold
    for name, entries in ranked.items():
        lists[name] = [memory_id for _, memory_id in sorted(entries)]
    if semantic:
        lists.setdefault("semantic", [])
    if too_many:  # a large scope: the HNSW path (verified complete) replaces the truncated list
        lists["semantic"] = [memory_id for memory_id, _ in search_sql.semantic_large_scope(
            connection, scope, kinds, model, vector, k)]  # type: ignore[arg-type]
    if not keyword:
        lists.pop("keyword", None)
    return Candidates(lists, rows)
