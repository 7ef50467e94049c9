"""Per-scope HNSW indexes of large scopes (PostgreSQL, ``scope_index``): named by hashes only,
built by the maintenance step, taken by the search's plan, dropped with the user on erasure."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.memory.longterm.conftest import EMBEDDING_MODEL, options_for
from tests.memory.longterm.test_search import _bulk
from xflow_runtime.memory.longterm import (LongTermMemory, LongTermOptions, MemoryScope, repository, scope_index,
                                          search_pg)
from xflow_runtime.memory.longterm.embedder import normalise
from xflow_runtime.privacy import erase_user
from xflow_runtime.storage.database import write_transaction
from xflow_runtime.storage.longterm_models import vector_literal
from xflow_runtime.testing import ScriptedModelServer
from xflow_runtime.testing.wire import hashed_embedding

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[3]
BIG, SMALL = "big o'ne\\il", "small"  # a quote and a backslash: literals in predicates


def _texts(size: int, owner: str) -> list[str]:
    return [f"{owner} note {i} about topic {i % 9}" for i in range(size)]


def _predicates(connection: object) -> list[str]:
    return list(connection.exec_driver_sql(  # type: ignore[attr-defined]
        "SELECT coalesce(pg_get_expr(i.indpred, i.indrelid), '') || ' ' || c.relname FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'xflow_memories'::regclass").scalars())


def test_index_names_carry_no_user_text_and_differ_per_scope() -> None:
    name = scope_index.index_name("acme", "support", "ann@example.com", EMBEDDING_MODEL, 64)
    assert name.startswith(scope_index.user_prefix("acme", "ann@example.com")) and len(name) <= 63
    words = scope_index.keyword_index_name("acme", "support", "ann@example.com")
    assert words.startswith(scope_index.user_prefix("acme", "ann@example.com")) and len(words) == len(name)
    assert words != name and "ann" not in words.removeprefix(scope_index.PREFIX)
    assert "ann" not in name.removeprefix(scope_index.PREFIX) and name.replace("_", "").isalnum()
    others = {scope_index.index_name("acme", "support", "ann@example.com", EMBEDDING_MODEL, 32),
              scope_index.index_name("acme", "sales", "ann@example.com", EMBEDDING_MODEL, 64),
              scope_index.index_name("acme", "support", "bob", EMBEDDING_MODEL, 64),
              scope_index.index_name("other", "support", "ann@example.com", EMBEDDING_MODEL, 64)}
    assert name not in others and len(others) == 4


async def test_maintenance_builds_large_scopes_only_and_the_search_plan_takes_the_scope_index(
        fresh_postgres_url: str, model_server: ScriptedModelServer) -> None:
    async with LongTermMemory.open(fresh_postgres_url, options_for(model_server, exact_search_threshold=40,
                                                                    scope_index_threshold=40)) as memory:
        _bulk(memory, MemoryScope("acme", "support", BIG), _texts(120, "big"))
        _bulk(memory, MemoryScope("acme", "support", SMALL), _texts(30, "small"))
        assert scope_index.maintain(memory.engine, 40, dry_run=True).planned == [
            scope_index.index_name("acme", "support", BIG, EMBEDDING_MODEL, 64)]
        done = scope_index.maintain(memory.engine, 40)
        name = scope_index.index_name("acme", "support", BIG, EMBEDDING_MODEL, 64)
        assert done.built == [name] and not done.dropped
        assert scope_index.maintain(memory.engine, 40).kept == [name]  # idempotent
        vector = normalise(hashed_embedding("topic 3", 64))
        with memory.engine.connect() as connection:
            connection.exec_driver_sql("ANALYZE xflow_memories")
            assert name in scope_index.valid_indexes(connection)
            statement = search_pg._statement(True, False, EMBEDDING_MODEL, 64, indexed=scope_index.scope_predicate(
                "acme", "support", BIG, EMBEDDING_MODEL, 64, alias="m").replace("%", "%%"))
            params = {"tenant": "acme", "agent": "support", "user": BIG, "kinds": ["fact"], "k": 20,
                      "q": vector_literal(vector), "words": "'topic' | '3'",
                      "scope_token": search_pg.scope_token(MemoryScope("acme", "support", BIG))}
            for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):  # a tiny table: show
                connection.exec_driver_sql(f"SET LOCAL {setting} = off")  # the index fits the statement
            plan = "\n".join(connection.exec_driver_sql("EXPLAIN " + statement, params).scalars())
            connection.rollback()
            connection.exec_driver_sql("SET LOCAL enable_seqscan = off")
            keyword = "\n".join(connection.exec_driver_sql(
                f"EXPLAIN SELECT m.id FROM xflow_memories m WHERE {search_pg._SCOPED_TSV} @@ "
                "(to_tsquery('simple', %(words)s) && %(scope_token)s::tsquery)", params).scalars())
            connection.rollback()
        assert name in plan, plan  # the semantic list walks the scope's own graph
        assert "ix_xflow_memories_scope_fts" in keyword, keyword  # the keyword list: GIN of scope ∧ words


async def test_an_interrupted_build_is_rebuilt_and_a_shrunk_scope_loses_its_index(
        fresh_postgres_url: str, model_server: ScriptedModelServer) -> None:
    async with LongTermMemory.open(fresh_postgres_url, options_for(model_server)) as memory:
        _bulk(memory, MemoryScope("acme", "support", BIG), _texts(120, "big"))
        name = scope_index.index_name("acme", "support", BIG, EMBEDDING_MODEL, 64)
        with memory.engine.connect() as connection:  # what a CREATE INDEX CONCURRENTLY that failed leaves
            connection.exec_driver_sql(f'CREATE INDEX "{name}" ON xflow_memories (id) WHERE false')
            connection.exec_driver_sql("UPDATE pg_index SET indisvalid = false "
                                       f"WHERE indexrelid = '\"{name}\"'::regclass")
            connection.commit()
            assert name not in scope_index.valid_indexes(connection)
        with memory.engine.connect() as other:  # another run in progress: this one does nothing
            other.exec_driver_sql(f"SELECT pg_advisory_lock({scope_index._LOCK})")
            assert scope_index.maintain(memory.engine, 100).as_dict() == {
                "built": [], "dropped": [], "kept": [], "planned": [], "failed": [], "busy": True}
            other.exec_driver_sql(f"SELECT pg_advisory_unlock({scope_index._LOCK})")
        done = scope_index.maintain(memory.engine, 100, maintenance_work_mem="64MB")
        assert done.dropped == [name] and done.built == [name] and not done.busy
        with write_transaction(memory.engine) as connection:
            connection.exec_driver_sql("DELETE FROM xflow_memories WHERE id IN (SELECT id FROM xflow_memories "
                                       "ORDER BY id LIMIT 40)")
        assert scope_index.maintain(memory.engine, 100).kept == [name]  # 80 > 100 × DROP_BELOW: kept
        with write_transaction(memory.engine) as connection:
            connection.exec_driver_sql("DELETE FROM xflow_memories WHERE id IN (SELECT id FROM xflow_memories "
                                       "ORDER BY id LIMIT 60)")
        assert scope_index.maintain(memory.engine, 100).dropped == [name]


async def test_a_scope_whose_index_cannot_be_built_keeps_none_of_the_others_waiting(
        fresh_postgres_url: str, model_server: ScriptedModelServer, caplog: pytest.LogCaptureFixture) -> None:
    # the failing scope's name sorts first, so the others are built after its failure
    wide = next(f"wide-{i}" for i in range(1000) if scope_index.index_name("acme", "support", f"wide-{i}", EMBEDDING_MODEL,
                                                                           4100) < scope_index.user_prefix("acme", BIG))
    async with LongTermMemory.open(fresh_postgres_url, options_for(model_server)) as memory:
        _bulk(memory, MemoryScope("acme", "support", BIG), _texts(60, "big"))
        with write_transaction(memory.engine) as connection:  # a model of 4,100 dimensions: over HNSW's limit
            connection.execute(repository.memories.insert(), [repository.new_row(
                MemoryScope("acme", "support", wide), "fact", f"wide note {i}", category="general", importance=5,
                embedding=[1.0] * 4100, embedding_model=EMBEDDING_MODEL, embedding_dim=4100) for i in range(60)])
        with caplog.at_level(logging.WARNING, logger="xflow_runtime.memory.longterm"):
            done = scope_index.maintain(memory.engine, 50)
        failing = scope_index.index_name("acme", "support", wide, EMBEDDING_MODEL, 4100)
        assert done.failed == [failing] and done.built == [scope_index.index_name("acme", "support", BIG,
                                                                                  EMBEDDING_MODEL, 64)]
        with memory.engine.connect() as connection:  # nothing of the failed build is left behind
            assert connection.exec_driver_sql("SELECT to_regclass(%(name)s)", {"name": f'"{failing}"'}).scalar() is None
        assert failing in caplog.text and "4000" in caplog.text and "wide" not in caplog.text


async def test_erasure_drops_the_users_scope_indexes_and_leaves_no_user_text_in_the_catalogue(
        fresh_postgres_url: str, model_server: ScriptedModelServer) -> None:
    async with LongTermMemory.open(fresh_postgres_url, options_for(model_server)) as memory:
        for agent in ("support", "sales"):
            _bulk(memory, MemoryScope("acme", agent, BIG), _texts(60, f"big {agent}"))
        _bulk(memory, MemoryScope("acme", "support", "carol"), _texts(60, "carol"))
        _bulk(memory, MemoryScope("acme", "support", "keeper"), _texts(60, "keeper"))
        assert len(scope_index.maintain(memory.engine, 50, keyword_threshold=50).built) == 8  # graph + words
        with memory.engine.connect() as connection:
            assert sum("o''ne\\il" in p for p in _predicates(connection)) == 4
        await memory.erase_user("acme", BIG)  # this store only
        await erase_user("carol", tenant="acme", database_url=fresh_postgres_url)  # every store (GDPR)
        with memory.engine.connect() as connection:
            predicates = _predicates(connection)
            assert not [p for p in predicates if "ne\\il" in p or "carol" in p], predicates
            assert scope_index.valid_indexes(connection) == {
                scope_index.index_name("acme", "support", "keeper", EMBEDDING_MODEL, 64),
                scope_index.keyword_index_name("acme", "support", "keeper")}


def test_the_command_builds_the_indexes_and_reports_json(fresh_postgres_url: str) -> None:
    engine_memory = LongTermMemory.open(fresh_postgres_url)
    try:
        _bulk(engine_memory, MemoryScope("default", "support", BIG), _texts(30, "big"))
    finally:
        engine_memory.close()
    command = [sys.executable, "-m", "xflow_runtime.cli.main", "memory", "index-scopes", "--db",
               fresh_postgres_url, "--threshold", "20", "--json"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["built"] == [scope_index.index_name("default", "support", BIG, EMBEDDING_MODEL, 64)]
    assert report["keyword_threshold"] == LongTermOptions().keyword_index_threshold
    words = subprocess.run(command + ["--keyword-threshold", "25"], capture_output=True, text=True, env=env,
                           cwd=ROOT, timeout=120)
    assert words.returncode == 0, words.stderr
    assert json.loads(words.stdout)["built"] == [scope_index.keyword_index_name("default", "support", BIG)]
    again = subprocess.run(command[:-3] + ["--threshold", "0"], capture_output=True, text=True, env=env,
                           cwd=ROOT, timeout=120)
    assert again.returncode == 2 or again.returncode == 1 and "threshold" in again.stderr
