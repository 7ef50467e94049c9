"""Privacy: erasure leaves nothing of the user anywhere (even under a racing extraction),
receipts, idempotence, and scope isolation as a property over random operations."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.memory.longterm.conftest import EXTRACTION_MODEL
from tests.memory.longterm.residue import rows_containing
from xflow_runtime.memory.chat import ChatMemory, ChatScope
from xflow_runtime.memory.longterm import LongTermMemory, LongTermMemoryError, MemoryScope
from xflow_runtime.memory.longterm.config import FactExtractionSettings
from xflow_runtime.testing import ScriptedModelServer

USER = "erin-4711"
MARK = "zebracorn"  # a word only the erased user's data contains
EXTRACT = FactExtractionSettings(enabled=True, model=EXTRACTION_MODEL)


async def seed_user(memory: LongTermMemory, user: str, mark: str) -> None:
    chats = ChatMemory(memory.engine)
    for agent in ("support", "sales"):
        scope = MemoryScope("acme", agent, user)
        chat = ChatScope(agent=agent, session=f"s-{agent}", user=user, tenant="acme")
        await chats.append_turn(chat, [{"role": "user", "content": f"I love {mark} stickers"},
                                       {"role": "assistant", "content": "Noted!"}], model="gpt-4o")
        await memory.write(scope, f"{mark} preference", f"Likes {mark} stickers", ["hobby"])
        await memory.add_facts(scope, [f"The user collects {mark} stickers."])


async def test_erasure_leaves_zero_rows_and_returns_a_receipt(memory: LongTermMemory) -> None:
    await seed_user(memory, USER, MARK)
    await seed_user(memory, "bystander", "giraffe")
    await memory.after_turn(MemoryScope("acme", "support", USER),
                            [{"role": "user", "content": f"{MARK} {i}"} for i in range(3)],
                            FactExtractionSettings(enabled=True, model=EXTRACTION_MODEL))
    receipt = await memory.erase_user("acme", USER)
    assert receipt.deleted["memories"] == 2 and receipt.deleted["facts"] == 2
    assert receipt.deleted["chats"] == 2 and receipt.deleted["chat_messages"] == 4
    assert receipt.deleted["embeddings"] == 4
    assert rows_containing(memory.engine, MARK) == {} and rows_containing(memory.engine, USER) == {}
    # the bystander is untouched
    assert set(rows_containing(memory.engine, "giraffe")) >= {"xflow_memories", "xflow_chat_messages"}
    for agent in ("support", "sales"):
        scope = MemoryScope("acme", agent, USER)
        assert (await memory.list(scope)).items == () and await memory.search(scope, MARK) == []
        assert await memory.search(scope, MARK, include_messages=True) == []
    again = await memory.erase_user("acme", USER)
    assert again.total == 0 and again.erasure_epoch == receipt.erasure_epoch + 1


async def test_sqlite_file_holds_no_trace_after_erasure(sqlite_memory: LongTermMemory, sqlite_url: str) -> None:
    path = Path(sqlite_url.removeprefix("sqlite:///"))
    await seed_user(sqlite_memory, USER, MARK)
    with sqlite_memory.engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    assert MARK.encode() in path.read_bytes()  # the scan below can see it
    await sqlite_memory.erase_user("acme", USER)
    with sqlite_memory.engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    for file in (path, path.with_name(path.name + "-wal")):
        if file.exists():
            assert MARK.encode() not in file.read_bytes(), file


async def test_an_extraction_in_flight_cannot_write_an_erased_user_back(
        memory: LongTermMemory, model_server: ScriptedModelServer) -> None:
    model_server.set_script({"rules": [{"when": {"model": "gpt-4o-mini"}, "reply": {
        "json": [{"content": f"The user owns a {MARK}.", "category": "fact", "importance": 5}],
        "latency": 0.5}}]})
    scope = MemoryScope("acme", "support", USER)
    await memory.after_turn(scope, [{"role": "user", "content": f"my {MARK} {i}"} for i in range(3)], EXTRACT)
    deadline = time.monotonic() + 10
    while not [r for r in model_server.chat_requests] and time.monotonic() < deadline:
        await asyncio.sleep(0.01)  # wait until the extraction call is in flight
    assert model_server.chat_requests, "the extraction call never started"
    receipt = await memory.erase_user("acme", USER)
    assert receipt.deleted["extraction_jobs"] == 1
    await memory.wait_for_extractions()
    assert rows_containing(memory.engine, MARK) == {}
    assert (await memory.list(scope)).items == ()


async def test_erasure_needs_a_tenant_and_a_user(memory: LongTermMemory) -> None:
    for tenant, user in (("", "u"), ("acme", ""), ("acme", None)):
        with pytest.raises(LongTermMemoryError):
            await memory.erase_user(tenant, user)  # type: ignore[arg-type]
    with pytest.raises(LongTermMemoryError):
        MemoryScope("acme", "")
    with pytest.raises(LongTermMemoryError):
        MemoryScope("", "agent")
