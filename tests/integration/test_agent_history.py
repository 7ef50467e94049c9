"""Agent history through the public Runtime: identity scoping (tenant, user), the instance scope
shared by every agent state of an instance, and the runtime's chat memory on both engines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xflow_runtime.memory.chat import ChatMemory
from xflow_runtime.runtime import Runtime, run_sync
from xflow_runtime.runtime.memory import chat_memory_url



def replies(*texts: str) -> list[dict]:
    return [{"json": {"response": text}} for text in texts]


def said(text: str) -> str:
    return json.dumps({"response": text})

TWO_AGENTS = """
id: two-agents
specVersion: '0.8'
start: first
states:
  - {name: first, type: aiagent, agentName: greeter, userMessage: 'My name is Ann', output: {schema: {type: object, properties: {response: {type: string}}}},
     agentOutcomes: [{finish: true}],
     transition: second}
  - {name: second, type: aiagent, agentName: namer, userMessage: 'What is my name?', output: {schema: {type: object, properties: {response: {type: string}}}},
     agentOutcomes: [{finish: true}],
     end: true}
"""

USER_MEMORY = """
id: user-memory
specVersion: '0.8'
start: ask
states:
  - {name: ask, type: aiagent, agentName: assistant, userMessage: '${ .message }', memory: {scope: user, maxMessages: 20},
     output: {schema: {type: object, properties: {response: {type: string}}}},
     agentOutcomes: [{finish: true}], end: true}
"""

SESSION_MEMORY = """
id: session-memory
specVersion: '0.8'
start: ask
states:
  - {name: ask, type: aiagent, agentName: assistant, userMessage: '${ .message }', memory: {memoryId: '${ .session }', maxMessages: 20},
     output: {schema: {type: object, properties: {response: {type: string}}}},
     agentOutcomes: [{finish: true}], end: true}
"""


def contents(request) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] != "system"]


def write(tmp_path: Path, text: str, name: str = "flow.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("engine", ["inprocess", "durable"])
async def test_agent_states_without_memory_id_share_the_instance_history(engine, scripted_model, llm, tmp_path):
    scripted_model.set_script(replies("Hello Ann.", "Your name is Ann."))
    async with Runtime(engine, database_url=f"sqlite:///{tmp_path / 'store.sqlite'}", llm=llm) as runtime:
        await (await runtime.start(runtime.load(write(tmp_path, TWO_AGENTS)))).result(timeout=60)
    first, second = scripted_model.chat_requests
    assert contents(first) == ["My name is Ann"]
    assert contents(second) == ["My name is Ann", said("Hello Ann."), "What is my name?"]


async def test_the_instance_history_never_opens_the_chat_memory(scripted_model, llm, tmp_path):
    scripted_model.set_script(replies("Hello Ann.", "Your name is Ann."))
    async with Runtime("inprocess", database_url=f"sqlite:///{tmp_path / 'store.sqlite'}", llm=llm) as runtime:
        await (await runtime.start(runtime.load(write(tmp_path, TWO_AGENTS)))).result(timeout=60)
        assert runtime._services.chat_memory is not None and not runtime._services.chat_memory.opened
    assert not (tmp_path / "xflow.db").exists()


async def test_a_second_instance_starts_with_an_empty_instance_history(scripted_model, llm, tmp_path):
    scripted_model.set_script(replies("Hello Ann.", "Ann.", "Hello Ann.", "Ann."))
    async with Runtime("inprocess", database_url=f"sqlite:///{tmp_path / 'store.sqlite'}", llm=llm) as runtime:
        plan = runtime.load(write(tmp_path, TWO_AGENTS))
        for _ in range(2):
            await (await runtime.start(plan)).result(timeout=60)
    assert contents(scripted_model.chat_requests[2]) == ["My name is Ann"]


async def test_user_scope_follows_the_user_and_tenant_given_at_start(scripted_model, llm, tmp_path):
    scripted_model.set_script(replies("Noted.", "You like tea.", "I do not know.", "I do not know either."))
    async with Runtime("inprocess", database_url=f"sqlite:///{tmp_path / 'store.sqlite'}", llm=llm) as runtime:
        plan = runtime.load(write(tmp_path, USER_MEMORY))
        await (await runtime.start(plan, {"message": "I like tea"}, tenant="acme", user="u-1")).result(timeout=60)
        await (await runtime.start(plan, {"message": "What do I like?"}, tenant="acme", user="u-1")).result(timeout=60)
        await (await runtime.start(plan, {"message": "What do I like?"}, tenant="acme", user="u-2")).result(timeout=60)
        await (await runtime.start(plan, {"message": "What do I like?"}, tenant="other", user="u-1")).result(timeout=60)
    requests = scripted_model.chat_requests
    assert contents(requests[1]) == ["I like tea", said("Noted."), "What do I like?"]
    assert contents(requests[2]) == ["What do I like?"]  # another user
    assert contents(requests[3]) == ["What do I like?"]  # the same user id in another tenant
    memory = ChatMemory.open(chat_memory_url(f"sqlite:///{tmp_path / 'store.sqlite'}"))
    try:
        chats = await memory.list_chats(tenant="acme")
        assert sorted(chat.user for chat in chats) == ["u-1", "u-2"]
        assert [chat.user for chat in await memory.list_chats(tenant="other")] == ["u-1"]
    finally:
        memory.close()


def test_run_sync_passes_tenant_and_user(scripted_model, llm, tmp_path):
    scripted_model.set_script(replies("Noted.", "You like tea."))
    workflow = write(tmp_path, USER_MEMORY)
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    run_sync(workflow, {"message": "I like tea"}, database_url=url, llm=llm, tenant="acme", user="u-1")
    run_sync(workflow, {"message": "And?"}, database_url=url, llm=llm, tenant="acme", user="u-1")
    assert contents(scripted_model.chat_requests[1]) == ["I like tea", said("Noted."), "And?"]


async def test_without_a_user_the_user_scope_is_stateless(scripted_model, llm, tmp_path):
    scripted_model.set_script(replies("Noted.", "I do not know."))
    async with Runtime("inprocess", database_url=f"sqlite:///{tmp_path / 'store.sqlite'}", llm=llm) as runtime:
        plan = runtime.load(write(tmp_path, USER_MEMORY))
        await (await runtime.start(plan, {"message": "I like tea"})).result(timeout=60)
        await (await runtime.start(plan, {"message": "What do I like?"})).result(timeout=60)
    assert contents(scripted_model.chat_requests[1]) == ["What do I like?"]


async def test_the_in_process_engine_keeps_history_in_the_instance_without_a_database(scripted_model, llm, tmp_path,
                                                                                      monkeypatch):
    monkeypatch.chdir(tmp_path)
    scripted_model.set_script(replies("Noted.", "I do not know."))
    async with Runtime("inprocess", llm=llm) as runtime:
        assert runtime.chat_memory_url is None
        plan = runtime.load(write(tmp_path, SESSION_MEMORY))
        await (await runtime.start(plan, {"message": "I like tea", "session": "s"})).result(timeout=60)
        await (await runtime.start(plan, {"message": "What do I like?", "session": "s"})).result(timeout=60)
    assert contents(scripted_model.chat_requests[1]) == ["What do I like?"]
    assert not (tmp_path / ".xflow").exists()


@pytest.mark.slow
async def test_a_durable_runtime_opens_one_chat_memory_next_to_its_store_and_closes_it(scripted_model, llm, tmp_path):
    scripted_model.set_script(replies("Noted.", "You like tea."))
    store = tmp_path / "data" / "store.sqlite"
    runtime = Runtime("durable", database_url=f"sqlite:///{store}", llm=llm)
    assert runtime.chat_memory_url == f"sqlite:///{tmp_path / 'data' / 'xflow.db'}"
    async with runtime:
        plan = runtime.load(write(tmp_path, SESSION_MEMORY))
        services = runtime._services
        assert services.chat_memory is not None and not services.chat_memory.opened  # lazily
        await (await runtime.start(plan, {"message": "I like tea", "session": "s"})).result(timeout=60)
        assert services.chat_memory.opened
        await (await runtime.start(plan, {"message": "What do I like?", "session": "s"})).result(timeout=60)
    assert not services.chat_memory.opened
    assert contents(scripted_model.chat_requests[1]) == ["I like tea", said("Noted."), "What do I like?"]
    assert (tmp_path / "data" / "xflow.db").exists()


def test_the_chat_memory_url_rule():
    assert chat_memory_url("sqlite:////srv/x/store.sqlite") == "sqlite:////srv/x/xflow.db"
    assert chat_memory_url("postgresql://u:p@h/db") == "postgresql://u:p@h/db"
    assert chat_memory_url("postgres://u:p@h/db") == "postgresql://u:p@h/db"
    assert chat_memory_url(None).endswith("/.xflow/xflow.db") or "XFLOW_DATABASE_URL" in __import__("os").environ


@pytest.mark.slow
async def test_on_postgresql_chat_memory_shares_the_durable_stores_database(scripted_model, llm, tmp_path,
                                                                            postgres_database_url):
    scripted_model.set_script(replies("Noted.", "You like tea."))
    async with Runtime("durable", database_url=postgres_database_url, llm=llm) as runtime:
        assert runtime.chat_memory_url == postgres_database_url.replace("postgres://", "postgresql://", 1)
        plan = runtime.load(write(tmp_path, SESSION_MEMORY))
        await (await runtime.start(plan, {"message": "I like tea", "session": "pg"}, user="u")).result(timeout=60)
        await (await runtime.start(plan, {"message": "What do I like?", "session": "pg"}, user="u")).result(timeout=60)
    assert contents(scripted_model.chat_requests[1]) == ["I like tea", said("Noted."), "What do I like?"]
    memory = ChatMemory.open(postgres_database_url)
    try:
        assert [chat.user for chat in await memory.list_chats()] == ["u"]
    finally:
        memory.close()
