"""PostgreSQL hybrid candidates in one round trip: the semantic list, the keyword list and the
rows of both, from one statement.

The scope's vectors are counted (bounded by ``exact_threshold + 1``, on the scope index). At most
``exact_threshold``: they are read and ranked exactly (scope first). More: the same statement
takes the model's HNSW index with an iterative scan instead (the other branch is a one-time
filter that is never executed). The scan's settings are session settings of every connection
(:func:`configure_engine`), so a search at any scope size is one round trip; only an HNSW scan
that returned fewer than k rows (never seen, but pgvector does not promise) costs a second, exact
one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection, Engine, event

from xflow_runtime.memory.longterm import prepared, scope_index, search_sql
from xflow_runtime.memory.longterm.records import Memory
from xflow_runtime.memory.longterm.scope import MemoryScope
from xflow_runtime.memory.longterm.sql_text import quoted, quoted_for_driver
from xflow_runtime.storage.longterm_models import vector_literal

_SCOPE = ("m.tenant_id = %(tenant)s AND m.agent_id = %(agent)s AND m.user_id = %(user)s "
          "AND m.kind = ANY(%(kinds)s)")
_TSV = "m.search_vector"  # stored generated column (migration 0002)
# The words plus one lexeme naming the scope, as GIN-indexed by migration 0009 (the expression must
# read exactly as the index's): the keyword list is the GIN intersection of the scope's lexeme with
# the words' (fast scan skips through the scope's long posting list), never a bitmap of the scope.
_SCOPED_TSV = ("(m.search_vector || array_to_tsvector(ARRAY[md5(m.tenant_id || chr(31) || m.agent_id "
               "|| chr(31) || m.user_id)]))")

# The model and dimension of the HNSW branch are literals ({model}, {dim}, filled per model) so the
# planner matches the model's partial HNSW index; the branch not taken is a one-time filter.
_SEMANTIC = f"""
counted AS (
  SELECT count(*) AS n FROM (SELECT 1 FROM xflow_memories m
    WHERE {_SCOPE} AND m.embedding_model = %(model)s AND m.embedding_dim = %(dim)s LIMIT %(cap)s) bounded),
scoped AS MATERIALIZED (
  SELECT m.id, m.embedding FROM xflow_memories m
  WHERE {_SCOPE} AND m.embedding_model = %(model)s AND m.embedding_dim = %(dim)s
    AND (SELECT n FROM counted) < %(cap)s),
approximate AS (
  SELECT m.id, (m.embedding::vector({{dim}})) <=> %(q)s::vector({{dim}}) AS distance FROM xflow_memories m
  WHERE {_SCOPE} AND m.embedding_model = {{model}} AND m.embedding_dim = {{dim}}
    AND (SELECT n FROM counted) >= %(cap)s
  ORDER BY distance LIMIT %(k)s),
nearest AS (
  SELECT id, embedding <=> %(q)s::vector AS distance FROM scoped
  UNION ALL SELECT id, distance FROM approximate
  ORDER BY distance, id LIMIT %(k)s),
semantic AS (
  SELECT id, 'semantic' AS list, row_number() OVER (ORDER BY distance, id) AS rank FROM nearest)"""

# A scope with its own valid HNSW index (``scope_index``), searched by a statement PostgreSQL plans
# once per connection (planning was ~0.6 ms of ~5 ms at 100,000 rows): it is a prepared statement
# of the session (``prepared``), and the server keeps its generic plan after five runs because it
# costs what the custom ones cost: everything a plan could depend on is a literal (the scope and model, equal to the
# index predicate; the kinds; k), and the words and the vector reach the plan only as InitPlans
# (``(SELECT …)``), so no estimate depends on them. The keyword list re-checks the scope above an
# ``OFFSET 0`` fence: a generic plan would otherwise AND the GIN bitmap with a bitmap of the
# user's rows (100,000 entries, 4 ms). The graph is over half-precision vectors; the rows it
# returns are re-sorted by their exact float4 distance. Each list carries its rows' columns, so no
# second lookup by primary key. No count: a short answer → exact search.
_INDEXED = """
approximate AS (
  SELECT g.id, g.kind, g.title, g.content, g.tags,
         (g.embedding::vector({dim})) <=> (SELECT %(q)s::vector({dim})) AS distance FROM (
    SELECT m.id, m.kind, m.title, m.content, m.tags, m.embedding FROM xflow_memories m
    WHERE {predicate} AND m.kind = ANY({kinds})
    ORDER BY (m.embedding::halfvec({dim})) <=> (SELECT %(q)s::halfvec({dim})) LIMIT {k}) g),
semantic AS (
  SELECT id, kind, title, content, tags, 'semantic' AS list, row_number() OVER (ORDER BY distance, id) AS rank
  FROM approximate)"""

_INDEXED_KEYWORD = f"""
keyword AS (
  SELECT id, kind, title, content, tags, 'keyword' AS list, row_number() OVER (ORDER BY score DESC, id) AS rank
  FROM (
    SELECT g.id, g.kind, g.title, g.content, g.tags, g.score FROM (
      SELECT m.id, m.tenant_id, m.agent_id, m.user_id, m.kind, m.title, m.content, m.tags,
             ts_rank({_TSV}, (SELECT to_tsquery('simple', %(words)s))) AS score FROM xflow_memories m
      WHERE {_SCOPED_TSV} @@ (SELECT to_tsquery('simple', %(words)s) && {{token}}::tsquery) OFFSET 0) g
    WHERE {{scope}} AND g.kind = ANY({{kinds}})
    ORDER BY g.score DESC, g.id LIMIT {{k}}) ranked)"""

# The keyword list of a scope that also has its own keyword index (``scope_index``, very large
# scopes): the words' posting lists of the scope's rows alone, the scope written as the index
# predicate; no fence needed (no other index of the table matches the scope and the words).
_OWN_KEYWORD = f"""
keyword AS (
  SELECT id, kind, title, content, tags, 'keyword' AS list, row_number() OVER (ORDER BY score DESC, id) AS rank
  FROM (
    SELECT m.id, m.kind, m.title, m.content, m.tags,
           ts_rank({_TSV}, (SELECT to_tsquery('simple', %(words)s))) AS score FROM xflow_memories m
    WHERE {{predicate}} AND {_TSV} @@ (SELECT to_tsquery('simple', %(words)s)) AND m.kind = ANY({{kinds}})
    ORDER BY score DESC, m.id LIMIT {{k}}) ranked)"""

_INDEXED_SELECT = "\nSELECT list, rank, id, kind, title, content, tags FROM {name}"

# Keyword rank: ``ts_rank`` (frequency of each query word, with diminishing returns for repeats,
# averaged over the words), not ``ts_rank_cd``: for an OR of words the cover density is 0.1 × the
# number of occurrences (a word said three times = three different words once), and it allocated
# 32 KB per query item per row ranked (a 6-word query at 100,000 rows: 6 ms). specs/memory-longterm.md.
_KEYWORD = f"""
keyword AS (
  SELECT id, 'keyword' AS list, row_number() OVER (ORDER BY score DESC, id) AS rank FROM (
    SELECT m.id, ts_rank({_TSV}, to_tsquery('simple', %(words)s)) AS score FROM xflow_memories m
    WHERE {_SCOPE} AND {_SCOPED_TSV} @@ (to_tsquery('simple', %(words)s) && %(scope_token)s::tsquery)
    ORDER BY score DESC, m.id LIMIT %(k)s) ranked)"""

_SELECT = """
SELECT h.list, h.rank, m.id, m.kind, m.title, m.content, m.tags
FROM ({lists}) h LEFT JOIN xflow_memories m ON m.id = h.id"""


@dataclass
class Candidates:
    lists: dict[str, list[str]]
    rows: dict[str, Memory]


def _statement(semantic: bool, keyword: bool, model: str | None = None, dim: int | None = None,
               indexed: str | None = None, scope: MemoryScope | None = None,
               kinds: Sequence[str] | None = None, k: int | None = None, own_keyword_index: bool = False) -> str:
    """``indexed``: the predicate of the scope's own graph (then no count: the scope is large; the
    kinds and k are literals when given, ``scope`` is needed for its keyword list);
    ``own_keyword_index``: the scope has its own keyword index too."""
    if semantic and indexed is not None:
        return _indexed_statement(indexed, int(dim or 0), scope if keyword else None,
                                  None if kinds is None else tuple(kinds), k, own_keyword_index)
    parts = [_KEYWORD] if keyword else []
    if semantic:
        parts.insert(0, _SEMANTIC.format(model=quoted(model or ""), dim=int(dim or 0)))
    selects = [f"SELECT id, list, rank FROM {name}"
               for name, on in (("semantic", semantic), ("keyword", keyword)) if on]
    if semantic and indexed is None:  # one extra row carries the bounded count of the scope's vectors
        selects.append("SELECT NULL, 'count', n FROM counted")
    return "WITH " + ",".join(parts) + _SELECT.format(lists=" UNION ALL ".join(selects))


@lru_cache(maxsize=1024)
def _indexed_statement(predicate: str, dim: int, scope: MemoryScope | None, kinds: tuple[str, ...] | None,
                       k: int | None, own_keyword_index: bool = False) -> str:
    """The statement of a scope with its own graph (``scope``: with its keyword list, through the
    scope's own keyword index when it has one). Literals are quoted and their ``%`` doubled (pyformat)."""
    kinds_sql = ("%(kinds)s" if kinds is None else "ARRAY[" + ",".join(
        quoted_for_driver(kind) for kind in kinds) + "]::text[]")
    k_sql = "%(k)s" if k is None else str(int(k))
    parts = [_INDEXED.format(predicate=predicate.replace("%", "%%"), dim=dim, kinds=kinds_sql, k=k_sql)]
    selects = [_INDEXED_SELECT.format(name="semantic")]
    if scope is not None and own_keyword_index:
        parts.append(_OWN_KEYWORD.format(predicate=scope_index.keyword_predicate(
            scope.tenant, scope.agent, scope.user_id, alias="m").replace("%", "%%"), kinds=kinds_sql, k=k_sql))
        selects.append(_INDEXED_SELECT.format(name="keyword"))
    elif scope is not None:
        literal = quoted
        where = (f"g.tenant_id = {literal(scope.tenant)} AND g.agent_id = {literal(scope.agent)} "
                 f"AND g.user_id = {literal(scope.user_id)}")
        parts.append(_INDEXED_KEYWORD.format(token=literal(scope_token(scope)), scope=where.replace("%", "%%"),
                                             kinds=kinds_sql, k=k_sql))
        selects.append(_INDEXED_SELECT.format(name="keyword"))
    return "WITH " + ",".join(parts) + " UNION ALL".join(selects)


def forget_statements() -> None:
    """Drop the cached statements of indexed scopes (after an erasure: their text names the user)."""
    _indexed_statement.cache_clear()


def scope_token(scope: MemoryScope) -> str:
    """The scope's lexeme in the keyword index (migration 0009): md5 of tenant, agent, user."""
    return hashlib.md5(f"{scope.tenant}\x1f{scope.agent}\x1f{scope.user_id}".encode(),
                       usedforsecurity=False).hexdigest()


_STATEMENTS: dict[tuple[bool, bool, str | None, int | None], str] = {}


def _statement_for(semantic: bool, keyword: bool, model: str | None, dim: int | None) -> str:
    key = (semantic, keyword, model, dim) if semantic else (False, keyword, None, None)
    statement = _STATEMENTS.get(key)
    if statement is None:
        statement = _STATEMENTS.setdefault(key, _statement(*key))
    return statement


def configure_engine(engine: Engine, k: int) -> None:
    """Every PostgreSQL connection of ``engine`` gets the HNSW scan settings the semantic list
    needs (iterative scan, so a filtered scan returns k rows; ``ef_search`` from k): set once per
    connection, at its first checkout (so connections the migrations opened before this engine was
    configured get them too), not per search. Other statements are not affected (no other query
    scans HNSW). psycopg's own automatic preparing is turned off on these connections
    (``prepared``: it would drop the session's prepared searches at a rollback)."""
    if engine.dialect.name != "postgresql":
        return
    settings = f"SET hnsw.iterative_scan = relaxed_order; SET hnsw.ef_search = {max(40, 2 * int(k))}"

    @event.listens_for(engine, "checkout")
    def _hnsw_settings(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        if record.info.get(_CONFIGURED):
            return
        if hasattr(dbapi_connection, "prepare_threshold"):  # psycopg
            dbapi_connection.prepare_threshold = None
        with dbapi_connection.cursor() as cursor:
            cursor.execute(settings)
        dbapi_connection.commit()
        record.info[_CONFIGURED] = True


_CONFIGURED = "xflow_search_settings"


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
    if semantic and vector is not None:  # (semantic implies a vector: said again for the type checker)
        params.update(model=model, dim=len(vector), cap=exact_threshold + 1,
                      q=vector_literal(vector))
    if keyword:
        params["words"] = " | ".join(f"'{word}'" for word in words)
        params["scope_token"] = scope_token(scope)
    ranked: dict[str, list[tuple[int, str]]] = {}
    in_scope = 0
    indexed = False
    valid = scope_index.valid_indexes(connection) if semantic else frozenset()
    if semantic and vector is not None and model is not None and scope_index.index_name(
            scope.tenant, scope.agent, scope.user_id, model, len(vector)) in valid:
        indexed = True
        statement = _statement(semantic, keyword, model, len(vector), indexed=scope_index.scope_predicate(
            scope.tenant, scope.agent, scope.user_id, model, len(vector), alias="m"), scope=scope,
            kinds=kinds, k=k, own_keyword_index=scope_index.keyword_index_name(
                scope.tenant, scope.agent, scope.user_id) in valid)
        result = prepared.execute(connection, statement, {"q": params["q"], "words": params.get("words", "")},
                                  ("q", "words"))
    else:
        statement = _statement_for(semantic, keyword, model, len(vector) if semantic else None)  # type: ignore[arg-type]
        result = connection.exec_driver_sql(statement, params)
    for row in result:
        if row.list == "count":
            in_scope = row.rank
            continue
        ranked.setdefault(row.list, []).append((row.rank, row.id))
        rows[row.id] = Memory(id=row.id, kind=row.kind, content=row.content, title=row.title,
                              tags=tuple(row.tags if isinstance(row.tags, list) else json.loads(row.tags or "[]")))
    for name, entries in ranked.items():
        lists[name] = [memory_id for _, memory_id in sorted(entries)]
    if semantic:
        lists.setdefault("semantic", [])
    if semantic and indexed and len(lists["semantic"]) < k:  # the scope's index came back short
        lists["semantic"] = [memory_id for memory_id, _ in search_sql.semantic_exact(
            connection, scope, kinds, model, vector, k)]  # type: ignore[arg-type]
    elif semantic and in_scope > exact_threshold and len(lists["semantic"]) < k:  # HNSW came back short
        lists["semantic"] = [memory_id for memory_id, _ in search_sql.semantic_large_scope(
            connection, scope, kinds, model, vector, k)]  # type: ignore[arg-type]
    if not keyword:
        lists.pop("keyword", None)
    return Candidates(lists, rows)
