"""Hybrid retrieval, same contract on SQLite (FTS5 + in-process vectors) and PostgreSQL
(FTS + pgvector): fusion, degradation without embeddings, one model per comparison, messages,
and complete results at every scope size (including pgvector's HNSW path)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.memory.longterm.conftest import EMBEDDING_MODEL, options_for
from xflow_runtime.memory.chat import ChatMemory, ChatScope
from xflow_runtime.memory.longterm import LongTermMemory, MemoryScope, reciprocal_rank_fusion
from xflow_runtime.memory.longterm import repository, search_sql
from xflow_runtime.memory.longterm.embedder import normalise
from xflow_runtime.storage.database import write_transaction
from xflow_runtime.storage.longterm_models import vector_literal
from xflow_runtime.testing import ScriptedModelServer
from xflow_runtime.testing.wire import hashed_embedding

SCOPE = MemoryScope("acme", "support", "dana")
NOTES = {"Billing address": "Invoices go to 5 Harbour Street, Lisbon.",
         "Preferred channel": "Prefers email over phone calls.",
         "Product tier": "Uses the enterprise tier with 40 seats.",
         "Timezone": "Works from Lisbon, UTC+0."}


async def seed(memory: LongTermMemory) -> dict[str, str]:
    return {title: (await memory.write(SCOPE, title, content)).memory.id for title, content in NOTES.items()}


async def test_hybrid_search_fuses_semantic_and_keyword_lists(memory: LongTermMemory) -> None:
    ids = await seed(memory)
    hits = await memory.search(SCOPE, "lisbon invoices", limit=3)
    assert hits[0].id == ids["Billing address"] and set(hits[0].ranks) == {"semantic", "keyword"}
    assert hits[0].ranks == {"semantic": 1, "keyword": 1}
    assert hits[0].score == pytest.approx(2 / 61)
    assert len(hits) == 3 and [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert {h.id for h in hits[:2]} == {ids["Billing address"], ids["Timezone"]}
    assert await memory.search(SCOPE, "lisbon invoices", limit=3) == hits  # deterministic


async def test_without_an_embedding_model_search_runs_on_keywords(
        database_url: str, model_server: ScriptedModelServer) -> None:
    async with LongTermMemory.open(database_url, options_for(model_server, embedding_model=None)) as memory:
        ids = await seed(memory)
        hits = await memory.search(SCOPE, "email", limit=5)
        assert [(h.id, dict(h.ranks)) for h in hits] == [(ids["Preferred channel"], {"keyword": 1})]
    assert model_server.requests == []


async def test_an_unreachable_embedding_service_degrades_to_keywords(database_url: str,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    from xflow_runtime.memory.longterm import LongTermOptions

    options = LongTermOptions(embedding_model=EMBEDDING_MODEL, api_base="http://127.0.0.1:9/v1", api_key="k")
    async with LongTermMemory.open(database_url, options) as memory:  # (each failed call costs ~1.5 s)
        written = (await memory.write(SCOPE, "Product tier", NOTES["Product tier"])).memory
        hits = await memory.search(SCOPE, "enterprise seats")
        assert [(h.id, dict(h.ranks)) for h in hits] == [(written.id, {"keyword": 1})]
        assert written.embedding_model is None
    assert "keyword search only" in caplog.text


async def test_vectors_of_different_models_are_never_compared(
        database_url: str, model_server: ScriptedModelServer) -> None:
    async with LongTermMemory.open(database_url, options_for(model_server)) as first:
        ids = await seed(first)
    other = options_for(model_server, embedding_model="openai/another-embedder")
    async with LongTermMemory.open(database_url, other) as second:
        fresh = (await second.write(SCOPE, "Renewal", "Contract renewal in Lisbon office")).memory
        hits = await second.search(SCOPE, "lisbon", limit=10)
        semantic = {h.id for h in hits if "semantic" in h.ranks}
        assert semantic == {fresh.id}  # the old model's vectors are not in the semantic list
        assert {ids["Billing address"], ids["Timezone"]} <= {h.id for h in hits if "keyword" in h.ranks}


async def test_messages_of_the_users_chats_are_searchable(memory: LongTermMemory) -> None:
    chats = ChatMemory(memory.engine)
    await chats.append_turn(ChatScope(agent="support", session="s1", user="dana", tenant="acme"),
                            [{"role": "user", "content": "My parcel tracking number is QX-991"},
                             {"role": "assistant", "content": "Thanks, checking parcel QX-991."}], model="gpt-4o")
    await chats.append_turn(ChatScope(agent="support", session="s2", user="eve", tenant="acme"),
                            [{"role": "user", "content": "Where is my parcel?"}], model="gpt-4o")
    hits = await memory.search(SCOPE, "parcel", include_messages=True)
    assert [h.kind for h in hits] == ["message", "message"]
    assert all("QX-991" in h.text for h in hits)  # eve's message is not dana's
    assert await memory.search(SCOPE, "parcel") == []  # messages only on request
    anonymous = MemoryScope("acme", "support")
    assert await memory.search(anonymous, "parcel", include_messages=True) == []


def _bulk(memory: LongTermMemory, scope: MemoryScope, texts: list[str]) -> None:
    """Insert facts with their (scripted-server-identical) vectors in one statement."""
    vectors = [normalise(hashed_embedding(text, 64)) for text in texts]
    rows = [repository.new_row(scope, "fact", text, category="general", importance=5, embedding=vector,
                               embedding_model=EMBEDDING_MODEL, embedding_dim=64)
            for text, vector in zip(texts, vectors)]
    with write_transaction(memory.engine) as connection:
        if rows:
            connection.execute(repository.memories.insert(), rows)
        if connection.dialect.name == "postgresql":  # after the rows: the index is built in bulk
            search_sql.ensure_vector_index(connection, EMBEDDING_MODEL, 64)


@pytest.mark.parametrize("size", [0, 1, 7, 20, 45])
async def test_semantic_results_are_complete_at_every_scope_size(memory: LongTermMemory, size: int) -> None:
    scope = MemoryScope("acme", "support", f"user-{size}")
    _bulk(memory, scope, [f"fact number {i} about topic {i % 5}" for i in range(size)])
    _bulk(memory, MemoryScope("acme", "support", "crowd"), [f"crowd fact {i}" for i in range(60)])
    query = normalise(hashed_embedding("topic 3", 64))
    with memory.engine.connect() as connection:
        found = search_sql.semantic(connection, scope, ["fact"], EMBEDDING_MODEL, query, 20, 5000)
    assert len(found) == min(20, size)
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)


@pytest.mark.postgres
async def test_hnsw_path_with_a_selective_scope_returns_the_exact_top_k(
        fresh_postgres_url: str, model_server: ScriptedModelServer) -> None:
    async with LongTermMemory.open(fresh_postgres_url, options_for(model_server)) as memory:
        ours = MemoryScope("acme", "support", "needle")
        _bulk(memory, MemoryScope("acme", "support", "haystack"), [f"hay {i} straw {i % 17}" for i in range(3000)])
        _bulk(memory, ours, [f"needle {i} thread {i % 7}" for i in range(40)])
        with memory.engine.connect() as connection:
            connection.exec_driver_sql("ANALYZE xflow_memories")
            query = normalise(hashed_embedding("thread 3 needle", 64))
            params = {"tenant": "acme", "agent": "support", "user": "needle", "k": 20,
                      "q": vector_literal(query)}
            exact = search_sql.semantic(connection, ours, ["fact"], EMBEDDING_MODEL, query, 20, 10_000)
            connection.rollback()
            # Force the index (no sort allowed): the selective scope then needs the iterative scan.
            connection.exec_driver_sql("SET LOCAL enable_sort = off")
            connection.exec_driver_sql("SET LOCAL hnsw.iterative_scan = off")
            plain = connection.exec_driver_sql(
                "SELECT id FROM xflow_memories m WHERE m.tenant_id = 'acme' AND m.agent_id = 'support' "
                "AND m.user_id = 'needle' AND m.kind IN ('fact') "
                f"AND m.embedding_model = '{EMBEDDING_MODEL}' AND m.embedding_dim = 64 "
                f"ORDER BY (m.embedding::vector(64)) <=> '{vector_literal(query)}'::vector(64) LIMIT 20").all()
            plan = "\n".join(connection.exec_driver_sql(
                "EXPLAIN SELECT id FROM xflow_memories m WHERE m.tenant_id = 'acme' AND m.agent_id = 'support' "
                "AND m.user_id = 'needle' AND m.kind IN ('fact') "
                f"AND m.embedding_model = '{EMBEDDING_MODEL}' AND m.embedding_dim = 64 "
                f"ORDER BY (m.embedding::vector(64)) <=> '{vector_literal(query)}'::vector(64) LIMIT 20").scalars())
            index_only = search_sql._approximate_postgres(connection, ours, ["fact"], EMBEDDING_MODEL, 64, params)
            connection.rollback()
            approximate = search_sql.semantic(connection, ours, ["fact"], EMBEDDING_MODEL, query, 20, 10)
        assert "ix_xflow_memories_hnsw_" in plan
        assert len(plain) < 20  # pgvector's default under-returns with a selective filter …
        assert len(index_only) == 20 and len(approximate) == 20  # … the iterative scan does not
        in_scope = {m.id for m in (await memory.list(ours, limit=1000)).items}
        assert len(in_scope) == 40
        for found in (index_only, approximate):
            assert {i for i, _ in found} <= in_scope  # approximate, but never outside the scope
            assert found[0][1] == pytest.approx(exact[0][1])  # the best match is found


@given(st.dictionaries(st.sampled_from(["semantic", "keyword", "messages"]),
                       st.lists(st.integers(0, 30), max_size=20), min_size=1))
def test_reciprocal_rank_fusion_scores_and_orders_deterministically(ranked: dict[str, list[int]]) -> None:
    fused = reciprocal_rank_fusion(ranked, k=60)
    reversed_input = reciprocal_rank_fusion(dict(reversed(list(ranked.items()))), k=60)
    assert fused == reversed_input
    keys = [item.key for item in fused]
    assert len(keys) == len(set(keys)) == len({key for keys_ in ranked.values() for key in keys_})
    for item in fused:
        expected = sum(1 / (60 + keys_.index(item.key) + 1) for keys_ in ranked.values() if item.key in keys_)
        assert item.score == pytest.approx(expected)
    assert [item.score for item in fused] == sorted((item.score for item in fused), reverse=True)


async def test_a_scope_above_the_exact_threshold_still_gets_complete_hybrid_results(
        database_url: str, model_server: ScriptedModelServer) -> None:
    async with LongTermMemory.open(database_url, options_for(model_server, exact_search_threshold=10)) as memory:
        scope = MemoryScope("acme", "support", "big")
        _bulk(memory, scope, [f"entry {i} colour {i % 9}" for i in range(40)])
        _bulk(memory, MemoryScope("acme", "support", "other"), [f"entry {i} colour" for i in range(200)])
        hits = await memory.search(scope, "qqq zzz", limit=30)  # no keyword match: semantic only
        assert len(hits) == 20 and all(set(h.ranks) == {"semantic"} for h in hits)  # top 20 per list
        assert {h.id for h in hits} <= {m.id for m in (await memory.list(scope, limit=100)).items}
