"""50 writers × 100 turns appended to one memoryId at once, through several ChatMemory objects
(as several runtime instances would): no turn lost, sequences gapless, every turn contiguous,
every writer's turns in its own order."""

from __future__ import annotations

import asyncio

import pytest

from xflow_runtime.memory.chat import ChatMemory, ChatScope

WRITERS, TURNS, MEMORIES = 50, 100, 5
SCOPE = ChatScope(agent="bot", session="shared", user="u", tenant="t")


async def hammer(url: str) -> list[dict]:
    memories = [ChatMemory.open(url) for _ in range(MEMORIES)]
    try:
        async def writer(w: int) -> None:
            memory = memories[w % MEMORIES]
            for t in range(TURNS):
                await memory.append_turn(SCOPE, [
                    {"role": "user", "content": f"{w}:{t}"},
                    {"role": "assistant", "content": None, "tool_calls": [
                        {"id": f"c{w}_{t}", "type": "function",
                         "function": {"name": "f", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": f"c{w}_{t}", "content": f"{w}:{t}"},
                    {"role": "assistant", "content": f"{w}:{t}"}], model="gpt-4o")

        await asyncio.gather(*(writer(w) for w in range(WRITERS)))
        (chat,) = await memories[0].list_chats(tenant="t")
        assert chat.message_count == WRITERS * TURNS * 4
        return await memories[0].history(chat.id, tenant="t")
    finally:
        for memory in memories:
            memory.close()


def check(history: list[dict]) -> None:
    assert len(history) == WRITERS * TURNS * 4
    next_turn = [0] * WRITERS
    for start in range(0, len(history), 4):
        block = history[start:start + 4]
        w, t = map(int, block[0]["content"].split(":"))
        assert [m["role"] for m in block] == ["user", "assistant", "tool", "assistant"]
        assert block[2]["content"] == block[3]["content"] == f"{w}:{t}"  # the turn is contiguous
        assert t == next_turn[w]  # and in its writer's order
        next_turn[w] += 1
    assert next_turn == [TURNS] * WRITERS


@pytest.mark.slow
async def test_concurrent_writers_on_sqlite(sqlite_url: str) -> None:
    check(await hammer(sqlite_url))


@pytest.mark.slow
@pytest.mark.postgres
async def test_concurrent_writers_on_postgres(postgres_database_url: str) -> None:
    # Writers of one chat commit one after another (they queue on its row lock), so with
    # synchronous commits the test would time the VM's fsync, not our code. Atomicity and
    # isolation do not depend on it; only crash durability does, which this test does not probe.
    from sqlalchemy import create_engine, text

    engine = create_engine(postgres_database_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        database = connection.execute(text("SELECT current_database()")).scalar_one()
        connection.execute(text(f'ALTER DATABASE "{database}" SET synchronous_commit = off'))
    engine.dispose()
    check(await hammer(postgres_database_url))


def _append_from_process(url: str, writer: int, turns: int) -> None:
    memory = ChatMemory.open(url)
    try:
        for t in range(turns):
            memory.append_turn_sync(SCOPE, [{"role": "user", "content": f"{writer}:{t}"},
                                            {"role": "assistant", "content": f"{writer}:{t}"}],
                                    model="gpt-4o")
    finally:
        memory.close()


@pytest.mark.slow
def test_writers_in_separate_processes_share_one_sqlite_file(sqlite_url: str) -> None:
    """Several runtime processes on one new SQLite file: they race to create the schema, then
    their turns are serialised by the database write lock."""
    import multiprocessing

    processes, turns = 3, 40
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_from_process, args=(sqlite_url, w, turns))
               for w in range(processes)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    assert [w.exitcode for w in workers] == [0] * processes
    memory = ChatMemory.open(sqlite_url)
    try:
        (chat,) = asyncio.run(memory.list_chats(tenant="t"))
        history = asyncio.run(memory.history(chat.id, tenant="t"))
    finally:
        memory.close()
    assert len(history) == processes * turns * 2
    next_turn = [0] * processes
    for start in range(0, len(history), 2):
        w, t = map(int, history[start]["content"].split(":"))
        assert history[start + 1]["content"] == f"{w}:{t}" and t == next_turn[w]
        next_turn[w] += 1
