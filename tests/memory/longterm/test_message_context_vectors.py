"""Two vectors per chat message (specs/memory-longterm.md, "Two vectors per message"): one per
context kind of ``LongTermOptions.message_contexts``, stored under (message, context), each kind
searched as its own list and never compared with another kind's vectors; background indexing
and re-indexing fill every kind; the migration keeps the vectors already there as ``full``."""

from __future__ import annotations

import asyncio
import itertools
import math
import tempfile
from pathlib import Path

import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from tests.memory.longterm.conftest import options_for
from tests.memory.longterm.test_retrieval import TURN, append, embedded_inputs
from xflow_runtime.memory.chat import ChatMemory, ChatScope
from xflow_runtime.memory.longterm import LongTermMemory, LongTermMemoryError, LongTermOptions, MemoryScope
from xflow_runtime.memory.longterm import message_index
from xflow_runtime.memory.longterm.embedder import Embedded
from xflow_runtime.storage.database import create_database_engine, write_transaction
from xflow_runtime.storage.migrate import upgrade_to_head
from xflow_runtime.testing import ScriptedModelServer

DANA = MemoryScope("acme", "support", "dana")
MODEL = "openai/hand-made"


def _unit(vector: list[float]) -> list[float]:
    length = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / length for x in vector]


async def _store(engine, user: str, turns: list[str], vectors: dict[str, list[list[float]]]) -> list[str]:
    """Messages of one chat of ``user`` with, for each context kind, vectors chosen by hand."""
    scope = MemoryScope("acme", "support", user)
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": said} for i, said in enumerate(turns)]
    appended = await ChatMemory(engine).append_turn(
        ChatScope(agent="support", session="s1", user=user, tenant="acme"), messages, model="gpt-4o")
    sequences = [appended.first_sequence + offset for offset in range(len(turns))]
    with write_transaction(engine) as connection:
        for context, chosen in vectors.items():
            pending = [message_index.PendingMessage(appended.chat_id, sequence, said, context)
                       for sequence, said in zip(sequences, turns)]
            message_index.store(connection, scope, pending, MODEL, chosen)
    return [f"{appended.chat_id}:{sequence}" for sequence in sequences]


def test_the_contexts_are_distinct_known_kinds() -> None:
    assert LongTermOptions().message_contexts == ("full", "date-speaker")
    assert LongTermOptions(message_contexts="none").message_contexts == ("none",)  # type: ignore[arg-type]
    for wrong in ((), ("full", "full"), ("full", "everything")):
        with pytest.raises(LongTermMemoryError, match="message_contexts"):
            LongTermOptions(message_contexts=wrong)


async def test_each_context_is_searched_as_its_own_list(memory: LongTermMemory) -> None:
    # the full-context vector of turn 0 and the date-speaker vector of turn 1 point at the query
    turns = ["We talked about it", "Our puppy is called Biscuit", "Lunch was fine"]
    near, far, other = _unit([1.0, 0.1, 0.0]), _unit([0.0, 1.0, 0.0]), _unit([0.0, 0.2, 1.0])
    keys = await _store(memory.engine, "dana", turns, {"full": [near, far, other],
                                                       "date-speaker": [far, near, other]})
    query = _unit([1.0, 0.0, 0.0])
    with memory.engine.connect() as connection:
        assert message_index.semantic(connection, DANA, MODEL, query, 3, False, "full")[0] == keys[0]
        assert message_index.semantic(connection, DANA, MODEL, query, 3, False, "date-speaker")[0] == keys[1]
        assert message_index.semantic(connection, DANA, MODEL, query, 3, False, "none") == []  # never mixed
        hits = memory.search_sync(connection, DANA, "zzz", Embedded(MODEL, [query]), limit=3, kinds=(),
                                  include_messages=True)
    ranks = {hit.id: hit.ranks for hit in hits}
    assert ranks[keys[0]]["message_semantic"] == 1 and ranks[keys[1]]["message_semantic:date-speaker"] == 1
    assert set(ranks) == set(keys)


async def test_a_new_context_kind_is_indexed_without_re_embedding_the_other(
        database_url: str, model_server: ScriptedModelServer) -> None:
    async with LongTermMemory.open(database_url, options_for(model_server, message_contexts=("full",))) as memory:
        await append(memory, "dana", TURN)
        assert await memory.index_messages(DANA) == 3
    model_server.reset()
    async with LongTermMemory.open(database_url, options_for(model_server)) as memory:
        assert await memory.index_messages(DANA) == 3  # only the date-speaker vectors were pending
        assert embedded_inputs(model_server) == [
            "[Monday 8 May 2023] Caroline: How was your weekend?",
            "[Monday 8 May 2023] Assistant: I went to a pottery class on Saturday.",
            "[Monday 8 May 2023] User: Nice! Did you make a bowl?"]
        with memory.engine.connect() as connection:
            counts = dict(connection.execute(text(
                "SELECT context, count(*) FROM xflow_message_embeddings GROUP BY context")).all())
        assert counts == {"full": 3, "date-speaker": 3}
        assert await memory.index_messages(DANA) == 0
        await memory.erase_user("acme", "dana")
        with memory.engine.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM xflow_message_embeddings")).scalar_one() == 0


_users = itertools.count()


@pytest.fixture(scope="module")
def shared_sqlite():
    with tempfile.TemporaryDirectory() as directory:
        engine = create_database_engine(f"sqlite:///{Path(directory) / 'vectors.db'}")
        upgrade_to_head(engine)
        yield engine
        engine.dispose()


VECTOR = st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=3, max_size=3).map(_unit)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(VECTOR, VECTOR), min_size=1, max_size=10), VECTOR)
def test_a_context_ranks_by_its_own_vectors_whatever_the_others_are(
        shared_sqlite, pairs: list[tuple[list[float], list[float]]], query: list[float]) -> None:
    user = f"u{next(_users)}"
    keys = asyncio.run(_store(shared_sqlite, user, [f"turn {i}" for i in range(len(pairs))],
                              {"full": [a for a, _ in pairs], "date-speaker": [b for _, b in pairs]}))
    scope = MemoryScope("acme", "support", user)
    with shared_sqlite.connect() as connection:
        for position, context in enumerate(("full", "date-speaker")):
            found = message_index.semantic(connection, scope, MODEL, query, len(keys), False, context)
            matrix = numpy.array([pair[position] for pair in pairs], dtype=numpy.float32)
            scores = matrix @ numpy.array(query, dtype=numpy.float32)
            expected = sorted(range(len(keys)), key=lambda i: (-float(scores[i]), i))  # ties: by sequence
            assert found == [keys[i] for i in expected]


def test_the_migration_keeps_existing_vectors_as_full_context(tmp_path: Path) -> None:
    from alembic import command

    from xflow_runtime.storage.migrate import _config

    engine = create_database_engine(f"sqlite:///{tmp_path / 'old.db'}")
    with write_transaction(engine) as connection:
        config = _config()
        config.attributes["connection"] = connection
        command.upgrade(config, "0009_scope_vector_indexes")
    asyncio.run(ChatMemory(engine).append_turn(ChatScope(agent="support", session="s1", user="dana", tenant="acme"),
                                               [{"role": "user", "content": "hello"}], model="gpt-4o"))
    with write_transaction(engine) as connection:
        chat_id, sequence = connection.execute(text("SELECT chat_id, sequence FROM xflow_chat_messages")).one()
        connection.execute(text(
            "INSERT INTO xflow_message_embeddings (chat_id, sequence, tenant_id, agent_id, user_id, embedding, "
            "embedding_model, embedding_dim, created_at) VALUES (:c, :s, 'acme', 'support', 'dana', NULL, NULL, "
            "NULL, '2026-01-01 00:00:00')"), {"c": chat_id, "s": sequence})
    upgrade_to_head(engine)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT context FROM xflow_message_embeddings")).scalars().all() == ["full"]
        assert message_index.pending(connection, DANA, 10, "full") == []
        assert [m.sequence for m in message_index.pending(connection, DANA, 10, "date-speaker")] == [sequence]
    engine.dispose()
