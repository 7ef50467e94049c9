"""PostgreSQL hybrid search against an exact brute-force ranking of the same rows, at several
scope sizes among other users' memories: the semantic and keyword lists the search fuses are
complete (min(k, rows in scope)) and, on the exact path, identical to a sequential scan that ranks
every row of the scope with no index; the hits are the RRF fusion of those lists, in order. On the
HNSW paths (the global index filtered by scope, or the scope's own index above
``scope_index_threshold``; approximate by nature: the index is built with random levels) the
semantic list is complete, starts with the true nearest row and holds most of the exact top k, the
keyword list is the exact one (through the shared index, or the scope's own keyword index above
``keyword_index_threshold``), and the hits are the fusion of the two lists, in order."""

from __future__ import annotations

from typing import Any

import pytest

from tests.memory.longterm.conftest import EMBEDDING_MODEL, options_for
from tests.memory.longterm.test_search import _bulk
from xflow_runtime.memory.longterm import (LongTermMemory, MemoryScope, reciprocal_rank_fusion, scope_index,
                                          search_pg, search_sql)
from xflow_runtime.memory.longterm.embedder import Embedded, normalise
from xflow_runtime.storage.longterm_models import vector_literal
from xflow_runtime.testing import ScriptedModelServer
from xflow_runtime.testing.wire import hashed_embedding

pytestmark = pytest.mark.postgres

SIZES = (1, 7, 20, 60, 400)
#: a user id with what must be quoted in the scope index's predicate (quote, percent, non-ASCII)
ODD = "o'brien %s ü"
COLOURS = ("red", "blue", "green", "amber", "violet", "teal", "ochre")
QUERY = "topic 3 blue"


def _texts(size: int, owner: str) -> list[str]:
    return [f"{owner} fact {i} about topic {i % 5} in {COLOURS[i % 7]}" for i in range(size)]


def _brute_force(connection: Any, scope: MemoryScope, vector: list[float], k: int) -> dict[str, list[str]]:
    """Both lists ranked over every row of the scope by a sequential scan (no index can be used)."""
    for setting in ("enable_indexscan", "enable_bitmapscan", "enable_indexonlyscan"):
        connection.exec_driver_sql(f"SET LOCAL {setting} = off")
    where = ("tenant_id = %(tenant)s AND agent_id = %(agent)s AND user_id = %(user)s AND kind = 'fact'")
    params = {"tenant": scope.tenant, "agent": scope.agent, "user": scope.user_id, "k": k,
              "q": vector_literal(vector), "model": EMBEDDING_MODEL,
              "words": " | ".join(f"'{word}'" for word in search_sql.query_words(QUERY))}
    semantic = connection.exec_driver_sql(
        f"SELECT id FROM xflow_memories WHERE {where} AND embedding_model = %(model)s "
        "ORDER BY embedding <=> %(q)s::vector, id LIMIT %(k)s", params).scalars().all()
    keyword = connection.exec_driver_sql(
        f"SELECT id FROM xflow_memories WHERE {where} AND search_vector @@ to_tsquery('simple', %(words)s) "
        "ORDER BY ts_rank(search_vector, to_tsquery('simple', %(words)s)) DESC, id LIMIT %(k)s",
        params).scalars().all()
    connection.rollback()
    return {"semantic": list(semantic), "keyword": list(keyword)}


def _user(size: int) -> str:
    return f"user-{size}" if size != 60 else f"user-{size}-{ODD}"


@pytest.mark.parametrize("exact_threshold,index_threshold,keyword_threshold",
                         [(5000, 5000, 5000), (50, 5000, 5000), (50, 50, 5000), (50, 50, 50)],
                         ids=["exact-path", "hnsw-above-50", "scope-index-above-50",
                              "scope-and-keyword-indexes-above-50"])
async def test_hybrid_search_matches_a_brute_force_ranking_at_every_scope_size(
        fresh_postgres_url: str, model_server: ScriptedModelServer, exact_threshold: int,
        index_threshold: int, keyword_threshold: int) -> None:
    options = options_for(model_server, exact_search_threshold=exact_threshold,
                          scope_index_threshold=index_threshold)
    async with LongTermMemory.open(fresh_postgres_url, options) as memory:
        for crowd in range(3):  # other users' rows share the table and the indexes
            _bulk(memory, MemoryScope("acme", "support", f"crowd-{crowd}"), _texts(300, f"crowd{crowd}"))
        for size in SIZES:
            _bulk(memory, MemoryScope("acme", "support", _user(size)), _texts(size, f"user{size}"))
        built = scope_index.maintain(memory.engine, index_threshold, keyword_threshold=keyword_threshold).built
        vector = normalise(hashed_embedding(QUERY, 64))
        k, limit = options.candidates_per_source, 10
        with memory.engine.connect() as connection:
            connection.exec_driver_sql("ANALYZE xflow_memories")
            valid = scope_index.valid_indexes(connection)
            for size in SIZES:
                scope = MemoryScope("acme", "support", _user(size))
                indexed = scope_index.index_name("acme", "support", scope.user_id, EMBEDDING_MODEL, 64)
                assert (indexed in built) == (indexed in valid) == (size > index_threshold), size
                words = scope_index.keyword_index_name("acme", "support", scope.user_id)
                assert (words in built) == (words in valid) == (size > keyword_threshold), size
                expected = _brute_force(connection, scope, vector, k)
                hits = memory.search_sync(connection, scope, QUERY, Embedded(EMBEDDING_MODEL, [vector]),
                                          limit=limit, kinds=("fact",), include_messages=False)
                found = search_pg.candidates(connection, scope, ("fact",), QUERY, EMBEDDING_MODEL, vector, k,
                                             exact_threshold)
                connection.rollback()
                assert len(expected["semantic"]) == min(k, size)
                assert found.lists["keyword"] == expected["keyword"], size  # GIN of scope ∧ words: exact
                if size <= exact_threshold:
                    fused = reciprocal_rank_fusion(expected, k=options.rrf_k, limit=limit)
                    assert found.lists["semantic"] == expected["semantic"], size
                else:  # HNSW: approximate, but complete and nearly the exact top k
                    semantic = found.lists["semantic"]
                    assert len(semantic) == min(k, size)
                    recall = len(set(semantic) & set(expected["semantic"])) / len(expected["semantic"])
                    assert semantic[0] == expected["semantic"][0] and recall >= 0.75, (size, recall)
                    fused = reciprocal_rank_fusion(found.lists, k=options.rrf_k, limit=limit)
                assert [(h.id, dict(h.ranks)) for h in hits] == [(f.key, dict(f.ranks)) for f in fused], size
                assert [h.score for h in hits] == pytest.approx([f.score for f in fused])
                assert len(hits) == min(limit, len(set(expected["semantic"]) | set(expected["keyword"])))
                assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
