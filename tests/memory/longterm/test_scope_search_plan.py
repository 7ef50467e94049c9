"""The search of a scope with its own index (PostgreSQL, #20): a half-precision graph whose rows
are re-sorted by exact distance, a statement planned once per connection (and still answered
when the session loses it), and the keyword rank (``ts_rank``) shared by both search paths."""

from __future__ import annotations

import hashlib
import logging

import pytest

from tests.memory.longterm.conftest import EMBEDDING_MODEL, options_for
from tests.memory.longterm.test_search import _bulk
from xflow_runtime.memory.longterm import LongTermMemory, MemoryScope, prepared, scope_index, search_pg
from xflow_runtime.memory.longterm.embedder import normalise
from xflow_runtime.memory.longterm.sql_text import quoted_for_driver
from xflow_runtime.storage.longterm_models import vector_literal
from xflow_runtime.testing import ScriptedModelServer
from xflow_runtime.testing.wire import hashed_embedding

pytestmark = pytest.mark.postgres

BIG = "big o'neil %s"
SCOPE = MemoryScope("acme", "support", BIG)
QUERY = "topic 3"
WORDS = "'topic' | '3'"  # the query's words as the search sends them


def _filler(size: int) -> list[str]:
    return [f"note {i} about topic {i % 9}" for i in range(size)]


def _indexed_memory(url: str, server: ScriptedModelServer, texts: list[str]) -> LongTermMemory:
    memory = LongTermMemory.open(url, options_for(server, exact_search_threshold=40, scope_index_threshold=40))
    _bulk(memory, SCOPE, texts)
    _bulk(memory, MemoryScope("acme", "support", "crowd"), _filler(30))
    assert scope_index.maintain(memory.engine, 40).built == [
        scope_index.index_name("acme", "support", BIG, EMBEDDING_MODEL, 64)]
    with memory.engine.connect() as connection:
        connection.exec_driver_sql("ANALYZE xflow_memories")
        connection.commit()
    return memory


def test_scope_graphs_hold_half_precision_vectors_and_the_semantic_list_is_in_exact_distance_order(
        fresh_postgres_url: str, model_server: ScriptedModelServer) -> None:
    memory = _indexed_memory(fresh_postgres_url, model_server, _filler(150))
    try:
        name = scope_index.index_name("acme", "support", BIG, EMBEDDING_MODEL, 64)
        vector = normalise(hashed_embedding(QUERY, 64))
        with memory.engine.connect() as connection:
            definition = connection.exec_driver_sql(f"SELECT pg_get_indexdef('\"{name}\"'::regclass)").scalar_one()
            found = search_pg.candidates(connection, SCOPE, ("fact",), QUERY, EMBEDDING_MODEL, vector, 20, 40)
            semantic = found.lists["semantic"]
            distances = dict(connection.exec_driver_sql(
                "SELECT id, embedding <=> %(q)s::vector FROM xflow_memories WHERE id = ANY(%(ids)s)",
                {"q": vector_literal(vector), "ids": semantic}).all())
        assert "halfvec(64)" in definition and "halfvec_cosine_ops" in definition, definition
        assert len(semantic) == 20
        assert semantic == sorted(semantic, key=lambda memory_id: (distances[memory_id], memory_id))
    finally:
        memory.close()


def test_maintenance_replaces_a_float4_scope_graph_with_a_half_precision_one(
        fresh_postgres_url: str, model_server: ScriptedModelServer) -> None:
    memory = LongTermMemory.open(fresh_postgres_url, options_for(model_server))
    try:
        _bulk(memory, SCOPE, _filler(60))
        # the name and graph an index-scopes run before #20 made
        before = (scope_index.user_prefix("acme", BIG)
                  + hashlib.sha256(f"support\x00{EMBEDDING_MODEL}\x0064".encode()).hexdigest()[:12])
        predicate = scope_index.scope_predicate("acme", "support", BIG, EMBEDDING_MODEL, 64)
        with memory.engine.connect() as connection:
            connection.exec_driver_sql(f'CREATE INDEX "{before}" ON xflow_memories USING hnsw '
                                       f"((embedding::vector(64)) vector_cosine_ops) WHERE {predicate}"
                                       .replace("%", "%%"))
            connection.commit()
        done = scope_index.maintain(memory.engine, 50)
        assert done.dropped == [before]
        assert done.built == [scope_index.index_name("acme", "support", BIG, EMBEDDING_MODEL, 64)]
    finally:
        memory.close()


def _prepared_plans(connection: object) -> list[tuple[int, int]]:
    return [tuple(row) for row in connection.exec_driver_sql(  # type: ignore[attr-defined]
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name LIKE 'xflow\\_q\\_%%'")]


def test_a_large_scope_search_is_planned_once_per_connection(
        fresh_postgres_url: str, model_server: ScriptedModelServer) -> None:
    memory = _indexed_memory(fresh_postgres_url, model_server, _filler(150))
    try:
        vector = normalise(hashed_embedding(QUERY, 64))
        with memory.engine.connect() as connection:
            for _ in range(8):  # as LongTermMemory._read does: each search ends with a rollback
                found = search_pg.candidates(connection, SCOPE, ("fact",), QUERY, EMBEDDING_MODEL, vector, 20, 40)
                connection.rollback()
            plans = _prepared_plans(connection)
            statement = search_pg._statement(True, True, EMBEDDING_MODEL, 64, indexed=scope_index.scope_predicate(
                "acme", "support", BIG, EMBEDDING_MODEL, 64, alias="m"), scope=SCOPE, kinds=("fact",), k=20)
            unprepared: dict[str, list[str]] = {}
            for row in connection.exec_driver_sql(statement, {"q": vector_literal(vector), "words": "'topic' | '3'"}):
                unprepared.setdefault(row.list, []).append((row.rank, row.id))  # type: ignore[arg-type]
        assert len(plans) == 1 and plans[0][0] >= 1, plans  # one statement, its generic plan reused
        assert found.lists == {name: [i for _, i in sorted(entries)]  # type: ignore[misc]
                               for name, entries in unprepared.items()}
        assert len(found.lists["semantic"]) == 20 and found.lists["keyword"]
    finally:
        memory.close()


def test_a_very_large_scopes_keyword_list_reads_its_own_keyword_index_in_the_kept_plan(
        fresh_postgres_url: str, model_server: ScriptedModelServer) -> None:
    memory = _indexed_memory(fresh_postgres_url, model_server, _filler(150))
    words = scope_index.keyword_index_name("acme", "support", BIG)
    try:
        vector = normalise(hashed_embedding(QUERY, 64))
        with memory.engine.connect() as connection:
            shared = search_pg.candidates(connection, SCOPE, ("fact",), QUERY, EMBEDDING_MODEL, vector, 20, 40)
            connection.rollback()
        assert scope_index.maintain(memory.engine, 40, keyword_threshold=40).built == [words]
        with memory.engine.connect() as connection:
            connection.exec_driver_sql("ANALYZE xflow_memories")
            connection.commit()
            for _ in range(8):  # a generic plan is kept after five runs
                own = search_pg.candidates(connection, SCOPE, ("fact",), QUERY, EMBEDDING_MODEL, vector, 20, 40)
                connection.rollback()
            [name] = connection.exec_driver_sql(
                "SELECT name FROM pg_prepared_statements WHERE name LIKE 'xflow\\_q\\_%%' "
                "AND generic_plans > 0").scalars().all()
            arguments = f"{quoted_for_driver(vector_literal(vector))}, {quoted_for_driver(WORDS)}"
            plan = "\n".join(connection.exec_driver_sql(f"EXPLAIN EXECUTE {name}({arguments})").scalars())
            connection.rollback()
        assert words in plan, plan  # the kept (generic) plan reads the scope's own keyword index
        assert own.lists["keyword"] and own.lists == shared.lists  # the lists the shared index gave
    finally:
        memory.close()


def test_a_session_that_lost_its_prepared_search_still_answers(
        fresh_postgres_url: str, model_server: ScriptedModelServer, caplog: pytest.LogCaptureFixture) -> None:
    memory = _indexed_memory(fresh_postgres_url, model_server, _filler(150))
    engine = str(memory.engine.url)
    try:
        vector = normalise(hashed_embedding(QUERY, 64))
        found, plans = [], []
        with memory.engine.connect() as connection:
            with caplog.at_level(logging.WARNING, logger="xflow_runtime.memory.longterm"):
                for _ in range(2 * prepared.MAX_MISSES):
                    found.append(search_pg.candidates(connection, SCOPE, ("fact",), QUERY, EMBEDDING_MODEL, vector,
                                                      20, 40).lists)
                    connection.rollback()
                    plans.append(len(_prepared_plans(connection)))
                    connection.exec_driver_sql("DEALLOCATE ALL")  # what a pooler or DISCARD ALL does
            found.append(search_pg.candidates(connection, SCOPE, ("fact",), QUERY, EMBEDDING_MODEL, vector,
                                              20, 40).lists)
            left = _prepared_plans(connection)
        assert all(lists == found[0] for lists in found) and len(found[0]["semantic"]) == 20
        # a search prepares, the next one misses it (answered unprepared), the one after prepares
        # again; after MAX_MISSES misses the store stops preparing
        assert plans == [1, 0] * prepared.MAX_MISSES and left == []
        assert "planned at every run from now on" in caplog.text
    finally:
        prepared._misses.pop(engine, None)  # (module state: other tests' stores prepare again)
        memory.close()


@pytest.mark.parametrize("indexed", [False, True], ids=["exact-path", "scope-index"])
def test_the_keyword_list_ranks_distinct_query_words_above_repeats_of_one_word(
        fresh_postgres_url: str, model_server: ScriptedModelServer, indexed: bool) -> None:
    texts = ["tea tea tea", "tea paris", "paris"] + _filler(60)
    if indexed:
        memory = _indexed_memory(fresh_postgres_url, model_server, texts)
    else:
        memory = LongTermMemory.open(fresh_postgres_url, options_for(model_server))
        _bulk(memory, SCOPE, texts)
    try:
        vector = normalise(hashed_embedding("tea paris", 64))
        with memory.engine.connect() as connection:
            found = search_pg.candidates(connection, SCOPE, ("fact",), "tea paris", EMBEDDING_MODEL, vector, 20, 40)
            content = dict(connection.exec_driver_sql(
                "SELECT id, content FROM xflow_memories WHERE id = ANY(%(ids)s)",
                {"ids": found.lists["keyword"]}).all())
            valid = scope_index.valid_indexes(connection)
        assert (scope_index.index_name("acme", "support", BIG, EMBEDDING_MODEL, 64) in valid) == indexed
        # ts_rank: each query word counts with diminishing returns for its repeats; ts_rank_cd
        # (0.1 a occurrence for an OR of words) put "tea tea tea" first
        assert [content[i] for i in found.lists["keyword"]][:2] == ["tea paris", "tea tea tea"]
        assert sorted(content[i] for i in found.lists["keyword"][2:]) == ["paris"]
    finally:
        memory.close()


async def test_erasure_leaves_no_prepared_search_naming_the_user(
        fresh_postgres_url: str, model_server: ScriptedModelServer) -> None:
    memory = _indexed_memory(fresh_postgres_url, model_server, _filler(150))
    try:
        vector = normalise(hashed_embedding(QUERY, 64))
        with memory.engine.connect() as connection:
            search_pg.candidates(connection, SCOPE, ("fact",), QUERY, EMBEDDING_MODEL, vector, 20, 40)
            connection.rollback()
            assert len(_prepared_plans(connection)) == 1
            session = connection.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
        assert search_pg._indexed_statement.cache_info().currsize >= 1
        await memory.erase_user("acme", BIG)
        with memory.engine.connect() as connection:  # the pool's sessions were closed with the index
            assert connection.exec_driver_sql("SELECT pg_backend_pid()").scalar_one() != session
            assert _prepared_plans(connection) == []
        assert search_pg._indexed_statement.cache_info().currsize == 0
    finally:
        memory.close()
