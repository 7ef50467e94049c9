"""Memories the agent manages: the three tools, upsert by title, the injected block and its
byte stability, and the management API (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.memory.longterm.agent_loop import STATIC_SYSTEM, agent_turn
from xflow_runtime.memory.longterm import (LongTermMemory, MemoryConflict, MemoryNotFound, MemoryScope,
                                           render_memory_block)
from xflow_runtime.testing import ScriptedModelServer

SCOPE = MemoryScope(tenant="acme", agent="support", user="customer-42")


def system_prompts(server: ScriptedModelServer) -> list[str]:
    return [r.messages[0]["content"] for r in server.chat_requests]


async def test_tools_are_offered_and_their_effects_land_in_the_store(memory: LongTermMemory,
                                                                     model_server: ScriptedModelServer) -> None:
    model_server.set_script([
        {"tool_calls": [{"name": "memory_write", "arguments": {
            "title": "Customer timezone", "content": "Based in Tokyo (UTC+9).", "tags": ["customer", "scheduling"]}}]},
        "Noted.",
    ])
    history: list[dict] = []
    assert await agent_turn(memory, SCOPE, model_server, history, "I live in Tokyo.") == "Noted."
    first = model_server.chat_requests[0]
    assert first.tool_names == ["memory_write", "memory_search", "memory_delete"]
    assert first.messages[0]["content"] == STATIC_SYSTEM  # nothing saved yet: no block
    (saved,) = (await memory.list(SCOPE)).items
    assert (saved.title, saved.content, saved.tags) == ("Customer timezone", "Based in Tokyo (UTC+9).",
                                                        ("customer", "scheduling"))
    tool_message = history[2]
    assert json.loads(tool_message["content"]) == {"id": saved.id, "status": "created"}
    # the next call already carries the block with the new memory
    assert f"- [{saved.id}] Customer timezone [customer, scheduling]: Based in Tokyo (UTC+9)." in \
        model_server.chat_requests[1].messages[0]["content"]

    model_server.reset([
        {"tool_calls": [{"name": "memory_search", "arguments": {"query": "tokyo timezone", "limit": 3}}]},
        {"tool_calls": [{"name": "memory_delete", "arguments": {"memory_id": saved.id}}]},
        "Done.",
    ])
    await agent_turn(memory, SCOPE, model_server, history, "Forget where I live.")
    search_result = json.loads(history[-4]["content"])
    assert [hit["id"] for hit in search_result["results"]] == [saved.id]
    # search results go to tool messages, never into the system prompt
    prompts = system_prompts(model_server)
    assert all("tokyo timezone" not in p and '"results"' not in p for p in prompts)
    assert json.loads(history[-2]["content"]) == {"id": saved.id, "status": "deleted"}
    assert (await memory.list(SCOPE)).items == ()
    assert system_prompts(model_server)[-1] == STATIC_SYSTEM


async def test_system_prompt_is_byte_identical_until_a_write_or_delete(
        memory: LongTermMemory, model_server: ScriptedModelServer) -> None:
    for i in range(12):
        await memory.write(SCOPE, f"note {i}", f"content {i}", ["t"])
    model_server.set_script({"default": {"text": "ok"}})
    history: list[dict] = []
    for turn in range(4):
        await agent_turn(memory, SCOPE, model_server, history, f"question {turn}")
    prompts = system_prompts(model_server)
    assert len(prompts) == 4 and len(set(prompts)) == 1  # byte-identical across calls
    block = prompts[0].split("\n\n", 1)[1]
    # the 10 most recently created, oldest first
    assert [line.split("] ")[1].split(" [")[0] for line in block.splitlines() if line.startswith("- [")] == \
        [f"note {i}" for i in range(2, 12)]

    # an update in place changes only that entry's line, not the order
    notes = {m.title: m for m in (await memory.list(SCOPE, limit=100)).items}
    await memory.write(SCOPE, "note 5", "changed", ["t"])
    await agent_turn(memory, SCOPE, model_server, history, "again")
    after_update = system_prompts(model_server)[-1]
    assert after_update != prompts[0]
    assert after_update.replace(f"[{notes['note 5'].id}] note 5 [t]: changed",
                                f"[{notes['note 5'].id}] note 5 [t]: content 5") == prompts[0]
    # a new memory is appended at the end; the oldest shown one drops out at the top
    await memory.write(SCOPE, "note 12", "content 12")
    block = (await memory.render_block(SCOPE)).splitlines()
    entries = [line for line in block if line.startswith("- [")]
    assert entries[0].startswith(f"- [{notes['note 3'].id}] note 3") and entries[-1].endswith("note 12: content 12")


async def test_upsert_by_title_leaves_one_row_under_16_concurrent_writers(memory: LongTermMemory) -> None:
    results = await asyncio.gather(*[
        memory.call_tool(SCOPE, "memory_write", {"title": "Favourite colour", "content": f"colour {i}"})
        for i in range(16)])
    statuses = sorted(json.loads(r)["status"] for r in results)
    assert statuses == ["created"] + ["updated"] * 15
    page = await memory.list(SCOPE)
    assert len(page.items) == 1 and page.items[0].content in {f"colour {i}" for i in range(16)}
    assert len({json.loads(r)["id"] for r in results}) == 1


async def test_title_matching_ignores_case_and_spacing(memory: LongTermMemory) -> None:
    first = await memory.write(SCOPE, "Customer Timezone", "UTC+9")
    second = await memory.write(SCOPE, "  customer   timezone ", "UTC+1")
    assert first.created and not second.created and first.memory.id == second.memory.id
    assert (await memory.get(SCOPE, first.memory.id)).content == "UTC+1"


async def test_management_api_create_is_strict_update_and_delete_are_scoped(memory: LongTermMemory) -> None:
    created = await memory.create(SCOPE, "Plan", "Gold plan", ["billing"])
    with pytest.raises(MemoryConflict):
        await memory.create(SCOPE, "plan", "Silver plan")
    other = await memory.create(SCOPE, "Seats", "12 seats")
    with pytest.raises(MemoryConflict):
        await memory.update(SCOPE, other.id, title="PLAN")
    updated = await memory.update(SCOPE, created.id, content="Platinum plan", tags=["billing", "vip"])
    assert (updated.content, updated.tags, updated.created_at) == ("Platinum plan", ("billing", "vip"),
                                                                   created.created_at)
    assert updated.updated_at >= created.updated_at
    stranger = MemoryScope(tenant="acme", agent="support", user="someone-else")
    for call in (memory.get(stranger, created.id), memory.delete(stranger, created.id),
                 memory.update(stranger, created.id, content="x")):
        with pytest.raises(MemoryNotFound):
            await call
    await memory.delete(SCOPE, created.id)
    with pytest.raises(MemoryNotFound):
        await memory.get(SCOPE, created.id)


async def test_listing_paginates_and_filters_by_query(memory: LongTermMemory) -> None:
    for i in range(7):
        await memory.write(SCOPE, f"item {i}", "apples" if i % 2 else "pears")
    first = await memory.list(SCOPE, limit=3)
    second = await memory.list(SCOPE, offset=first.next_offset, limit=3)
    third = await memory.list(SCOPE, offset=second.next_offset, limit=3)
    titles = [m.title for page in (first, second, third) for m in page.items]
    assert titles == [f"item {i}" for i in reversed(range(7))] and third.next_offset is None
    apples = await memory.list(SCOPE, query="apples", limit=10)
    assert sorted(m.title for m in apples.items) == ["item 1", "item 3", "item 5"]


async def test_bad_tool_arguments_come_back_to_the_model_as_errors(memory: LongTermMemory) -> None:
    cases = [("memory_write", {"title": "", "content": "x"}), ("memory_write", "{not json"),
             ("memory_search", {"query": "x", "limit": 0}), ("memory_search", {"query": "x", "limit": "5"}),
             ("memory_delete", {"memory_id": "missing"}), ("memory_forget", {})]
    for name, arguments in cases:
        assert "error" in json.loads(await memory.call_tool(SCOPE, name, arguments)), (name, arguments)
    capped = json.loads(await memory.call_tool(SCOPE, "memory_search", {"query": "x", "limit": 500}))
    assert capped == {"results": []}


def test_block_renders_one_line_per_memory_and_accepts_a_custom_template() -> None:
    from xflow_runtime.memory.longterm import Memory

    memories = [Memory(id="m1", kind="memory", title="Multi\nline", content="first\n- [x] fake entry",
                       tags=("a",))]
    block = render_memory_block(memories)
    assert "- [m1] Multi line [a]: first - [x] fake entry" in block.splitlines()
    assert block.startswith("<agent_memory>") and block.endswith("</agent_memory>")
    assert render_memory_block([]) == ""
    custom = "{% for m in memories %}{{ m.title }}={{ m.content }};{% endfor %}"
    assert render_memory_block(memories, template=custom) == "Multi line=first - [x] fake entry;"
