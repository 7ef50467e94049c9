"""Per-scope HNSW indexes of large scopes (PostgreSQL): which scopes have one, building and
dropping them.

A scope (tenant, agent, user, embedding model, dimension) with more than
``LongTermOptions.scope_index_threshold`` vectors gets its own partial HNSW index, so its
nearest-neighbour scan walks a graph of its own rows only (a global index filtered by scope walks
past other users' rows: ~10,500 buffers at a 20,000-row scope). See ``specs/performance.md`` §3.

* **The catalogue is the registry.** An index is named from hashes of the scope (never its text):
  ``ix_xflow_mem_scope_<sha256(tenant, user)[:16]>_<sha256(agent, model, dim)[:12]>``, so the
  search computes the name it would have, erasure finds every index of a user by prefix, and
  validity is PostgreSQL's own ``pg_index.indisvalid`` — a second table could only disagree with
  it (an interrupted ``CREATE INDEX CONCURRENTLY`` leaves an invalid index and no row).
* **Built off the request path** by :func:`maintain` (``xflow memory index-scopes``, and every 10
  minutes by the processes that run work: ``engine/index_schedule.py``), with
  ``CREATE INDEX CONCURRENTLY``: writes go on while it builds, and the search keeps the
  exact/global path until the index is valid.
* **The search reads the catalogue at most every** ``REFRESH_S`` **seconds per process**
  (:func:`valid_indexes`). A stale answer only costs speed: the statement for an indexed scope is
  complete whatever index the planner takes (a short HNSW answer falls back to exact search).
* **Erasure drops the user's indexes** right after its transaction commits (:func:`drop_for_user`,
  ``CONCURRENTLY``): the index predicate holds the user id in the catalogue.
* **The graph holds half-precision vectors** (:data:`OPCLASS`: an expression index over
  ``embedding::halfvec(dim)``): half the pages of a float4 graph (112 MB instead of 195 MB at
  100,000 rows of 384 dimensions), so a scan touches half the memory; the search re-sorts the rows
  the graph returns by their exact float4 distance. Dimensions up to 4,000 (float4 graphs: 2,000).
  The kind of graph is part of the name's hash (:data:`GRAPH`): an index of another kind (the
  float4 indexes before #20) is not the search's, and :func:`maintain` replaces it.
* **A very large scope also gets its own keyword index**: above ``keyword_threshold`` rows
  (``LongTermOptions.keyword_index_threshold``, 20,000) of one (tenant, agent, user), a partial
  GIN index over its rows' words (:func:`keyword_index_name`), so the keyword list reads the
  words' posting lists of that scope alone instead of intersecting them with the scope's lexeme
  in the shared index (migration 0009), whose posting list holds every row of the scope (100,000
  entries: ~0.4 ms of a search). Not below that: every partial index of the table costs planning
  time to the searches of small scopes (``specs/performance.md`` §3).
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError

from xflow_runtime.memory.longterm.config import DEFAULT_KEYWORD_INDEX_THRESHOLD
from xflow_runtime.memory.longterm.sql_text import quoted
from xflow_runtime.storage.database import error_without_data

_log = logging.getLogger("xflow_runtime.memory.longterm")
PREFIX = "ix_xflow_mem_scope_"
#: how long a process trusts its list of valid scope indexes (seconds)
REFRESH_S = 10.0
#: a scope's index is dropped only below this share of the threshold (no build/drop flapping)
DROP_BELOW = 0.5
_LOCK = 7865436020  # advisory lock of a maintenance run (ensure_vector_index uses …019)

_VALID = text(
    "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
    "WHERE i.indrelid = 'xflow_memories'::regclass AND i.indisvalid AND i.indisready "
    "AND c.relname LIKE :prefix")
_ALL = text(
    "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
    "WHERE i.indrelid = 'xflow_memories'::regclass AND c.relname LIKE :prefix")


def _like(prefix: str) -> str:
    return prefix.replace("_", r"\_") + "%"


def user_prefix(tenant: str, user: str) -> str:
    return PREFIX + hashlib.sha256(f"{tenant}\x00{user}".encode()).hexdigest()[:16] + "_"


#: what the scope's graph indexes and how (``{dim}``: the scope's dimension); the search's ORDER BY
#: reads the same expression (``search_pg``)
GRAPH = "halfvec"
OPCLASS = "(embedding::halfvec({dim})) halfvec_cosine_ops"


#: a scope's keyword index: GIN over the words of its rows (``search_vector``, migration 0002)
KEYWORD = "gin:search_vector"


def index_name(tenant: str, agent: str, user: str, model: str, dim: int) -> str:
    """The scope's graph index name: hashes only (no user text in an identifier), 48 characters."""
    rest = hashlib.sha256(f"{agent}\x00{model}\x00{int(dim)}\x00{GRAPH}".encode()).hexdigest()[:12]
    return user_prefix(tenant, user) + rest


def keyword_index_name(tenant: str, agent: str, user: str) -> str:
    """The scope's keyword index name (same prefix as its graphs: erasure finds both)."""
    return user_prefix(tenant, user) + hashlib.sha256(f"{agent}\x00{KEYWORD}".encode()).hexdigest()[:12]


def keyword_predicate(tenant: str, agent: str, user: str, alias: str = "") -> str:
    """The keyword index's predicate (and the search's, written the same way so the planner can
    prove the one from the other): literals, quoted."""
    a = f"{alias}." if alias else ""
    return f"{a}tenant_id = {quoted(tenant)} AND {a}agent_id = {quoted(agent)} AND {a}user_id = {quoted(user)}"


def scope_predicate(tenant: str, agent: str, user: str, model: str, dim: int, alias: str = "") -> str:
    """The graph index's predicate (and the search's): the keyword predicate and the model."""
    a = f"{alias}." if alias else ""
    return (f"{keyword_predicate(tenant, agent, user, alias)} AND {a}embedding_model = {quoted(model)} "
            f"AND {a}embedding_dim = {int(dim)}")


@dataclass
class _Cache:
    until: float = 0.0
    names: frozenset[str] = field(default_factory=frozenset)


_caches: dict[str, _Cache] = {}


def valid_indexes(connection: Connection) -> frozenset[str]:
    """Names of the valid scope indexes, from the catalogue, read at most every ``REFRESH_S``
    seconds per database (one small catalogue query; most searches read none)."""
    cache = _caches.setdefault(str(connection.engine.url), _Cache())
    now = time.monotonic()
    if now >= cache.until:
        cache.names = frozenset(connection.execute(_VALID, {"prefix": _like(PREFIX)}).scalars())
        cache.until = now + REFRESH_S
    return cache.names


def forget(engine: Engine) -> None:
    """Drop this process's cached list (after this process built or dropped an index)."""
    _caches.pop(str(engine.url), None)


def drop_for_user(engine: Engine, tenant: str, user: str) -> int:
    """Drop every scope index of ``user`` in ``tenant`` (every agent and model) with ``DROP INDEX
    CONCURRENTLY``, after the erasure's transaction committed: returns how many. Not inside that
    transaction: a plain ``DROP INDEX`` there would lock the whole table until commit and could
    deadlock with a fact writer holding the table and waiting for the user's subject row. If this
    fails, the rows are gone and the next :func:`maintain` drops the index (its scope is empty)."""
    if engine.dialect.name != "postgresql":
        return 0
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        names = connection.execute(_ALL, {"prefix": _like(user_prefix(tenant, user))}).scalars().all()
        for name in names:
            connection.exec_driver_sql(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')
    if names:
        forget(engine)
        # the pool's idle sessions may hold the user's search as a prepared statement (``prepared``;
        # its text names the user): they are closed (checked-out ones close when returned)
        engine.dispose()
    return len(names)


@dataclass
class Maintenance:
    built: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    planned: list[str] = field(default_factory=list)  # dry run: what would be built
    failed: list[str] = field(default_factory=list)  # builds the server refused (logged; the next run tries again)
    busy: bool = False  # another maintenance run holds the lock: nothing done

    def as_dict(self) -> dict[str, Any]:
        return {"built": self.built, "dropped": self.dropped, "kept": self.kept, "planned": self.planned,
                "failed": self.failed, "busy": self.busy}


_LARGE_SCOPES = text(
    "SELECT tenant_id, agent_id, user_id, embedding_model, embedding_dim, count(*) AS n FROM xflow_memories "
    "WHERE embedding_model IS NOT NULL AND embedding_dim IS NOT NULL "
    "GROUP BY tenant_id, agent_id, user_id, embedding_model, embedding_dim HAVING count(*) > :floor")
_LARGE_WORD_SCOPES = text(
    "SELECT tenant_id, agent_id, user_id, count(*) AS n FROM xflow_memories "
    "GROUP BY tenant_id, agent_id, user_id HAVING count(*) > :floor")


@dataclass(frozen=True)
class _Wanted:
    """An index a scope of ``rows`` rows may have: built above ``threshold``, kept above
    ``DROP_BELOW × threshold``."""
    rows: int
    threshold: int
    method: str  # USING … (…)
    predicate: str


def maintain(engine: Engine, threshold: int, *, keyword_threshold: int = DEFAULT_KEYWORD_INDEX_THRESHOLD,
             dry_run: bool = False, maintenance_work_mem: str | None = None) -> Maintenance:
    """Build the missing graph of every scope above ``threshold`` vectors and the missing keyword
    index of every scope above ``keyword_threshold`` rows (``CREATE INDEX CONCURRENTLY``, one at a
    time), rebuild invalid ones (an interrupted build), drop indexes of scopes that fell below
    ``DROP_BELOW ×`` their threshold or no longer exist. PostgreSQL only; safe to run while the
    runtime serves, and from several processes: one runs, the others return ``busy`` (a session
    advisory lock)."""
    done = Maintenance()
    if engine.dialect.name != "postgresql":
        return done
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        # one run at a time: a second would take the first's build in progress (invalid) for an
        # interrupted one and drop it
        if not connection.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": _LOCK}).scalar():
            done.busy = True
            return done
        try:
            _maintain(connection, _scopes(connection, threshold, keyword_threshold), dry_run,
                      maintenance_work_mem, done)
        finally:  # (a pooled connection: leave its session as found)
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _LOCK})
            connection.exec_driver_sql("RESET maintenance_work_mem")
    if done.built or done.dropped:
        forget(engine)
    return done


def _scopes(connection: Connection, threshold: int, keyword_threshold: int) -> dict[str, _Wanted]:
    """Every index a scope large enough to keep one may have, by name."""
    found: dict[str, _Wanted] = {}
    for row in connection.execute(_LARGE_SCOPES, {"floor": int(threshold * DROP_BELOW)}):
        dim = int(row.embedding_dim)
        found[index_name(row.tenant_id, row.agent_id, row.user_id, row.embedding_model, dim)] = _Wanted(
            row.n, threshold, f"hnsw ({OPCLASS.format(dim=dim)})",
            scope_predicate(row.tenant_id, row.agent_id, row.user_id, row.embedding_model, dim))
    for row in connection.execute(_LARGE_WORD_SCOPES, {"floor": int(keyword_threshold * DROP_BELOW)}):
        found[keyword_index_name(row.tenant_id, row.agent_id, row.user_id)] = _Wanted(
            row.n, keyword_threshold, "gin (search_vector)",
            keyword_predicate(row.tenant_id, row.agent_id, row.user_id))
    return found


def _maintain(connection: Connection, scopes: dict[str, _Wanted], dry_run: bool, maintenance_work_mem: str | None,
              done: Maintenance) -> None:
    if maintenance_work_mem:
        connection.execute(text("SELECT set_config('maintenance_work_mem', :m, false)"),
                           {"m": maintenance_work_mem})
    existing = {row.relname: row.indisvalid for row in connection.execute(_ALL, {"prefix": _like(PREFIX)})}
    # between DROP_BELOW × threshold and threshold: kept if built, not built
    wanted = {name: scope for name, scope in scopes.items() if scope.rows > scope.threshold}
    for name, valid in sorted(existing.items()):
        if name in scopes and valid:
            done.kept.append(name)
            continue
        done.dropped.append(name)
        if not dry_run:
            connection.exec_driver_sql(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')
    for name, scope in sorted(wanted.items()):
        if existing.get(name):
            continue
        if dry_run:
            done.planned.append(name)
            continue
        try:
            connection.exec_driver_sql(
                f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{name}" ON xflow_memories USING {scope.method} '
                f"WHERE {scope.predicate}".replace("%", "%%"))
        except DBAPIError as error:  # one scope that cannot be built keeps none of the others waiting
            _log.warning("scope index %s could not be built (tried again at the next run): %s", name,
                         error_without_data(error))
            connection.exec_driver_sql(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')  # what a failed build leaves
            done.failed.append(name)
            continue
        # the user may have been erased since the scopes were listed (the erasure's drop found no
        # index then): the index of an emptied scope goes at once, not at the next run
        left = connection.exec_driver_sql(
            f"SELECT count(*) FROM (SELECT 1 FROM xflow_memories WHERE {scope.predicate} LIMIT 1) s"
            .replace("%", "%%")).scalar()
        if not left:
            connection.exec_driver_sql(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')
            done.dropped.append(name)
            continue
        done.built.append(name)
