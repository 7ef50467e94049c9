"""The ``memory`` object of an aiagent state: defaults, memoryId expressions, scope and enabled."""

from __future__ import annotations

import pytest

from xflow_runtime.memory.chat import (ChatMemory, ChatMemoryError, MemorySettings, ScopeMode,
                                       WindowKind, WindowPolicy)


def test_without_memory_history_is_scoped_to_the_instance() -> None:
    settings = MemorySettings.from_definition(None)
    assert settings.mode is ScopeMode.SESSION and settings.policy == WindowPolicy()
    first = settings.scope(agent="wf", instance_id="i-1", data={})
    second_state = MemorySettings.from_definition({"maxMessages": 5}).scope(
        agent="wf", instance_id="i-1", data={})
    assert first.key() == second_state.key()  # states of one instance share its history
    assert first.session == "instance:i-1"
    assert settings.scope(agent="wf", instance_id="i-2", data={}).key() != first.key()


def test_memory_id_literal_and_expression() -> None:
    literal = MemorySettings.from_definition({"memoryId": "session123"})
    assert literal.scope(agent="wf", instance_id="i", data={}).session == "session123"
    expression = MemorySettings.from_definition({"memoryId": "${ .sessionId }"})
    assert expression.scope(agent="wf", instance_id="i", data={"sessionId": "abc"}).session == "abc"
    assert expression.scope(agent="wf", instance_id="i", data={"sessionId": 42}).session == "42"


@pytest.mark.parametrize("data", [{}, {"sessionId": ""}, {"sessionId": {"a": 1}}, {"sessionId": True}])
def test_memory_id_expression_must_yield_a_string_or_number(data: dict) -> None:
    settings = MemorySettings.from_definition({"memoryId": "${ .sessionId }"})
    with pytest.raises(ChatMemoryError, match="evaluated to"):
        settings.scope(agent="wf", instance_id="i", data=data)


def test_window_fields_are_read() -> None:
    settings = MemorySettings.from_definition(
        {"memoryId": "s", "memoryType": "token_window", "maxTokens": 1000, "maxMessages": 8})
    assert settings.policy == WindowPolicy(WindowKind.TOKEN, max_messages=8, max_tokens=1000)


@pytest.mark.parametrize(("memory", "expected"), [
    ({"enabled": False}, ScopeMode.NONE),
    ({"scope": "none"}, ScopeMode.NONE),
    ({"scope": "user"}, ScopeMode.USER),
    ({"scope": "session", "enabled": True}, ScopeMode.SESSION),
])
def test_enabled_and_scope(memory: dict, expected: ScopeMode) -> None:
    settings = MemorySettings.from_definition(memory)
    assert settings.mode is expected and settings.enabled == (expected is not ScopeMode.NONE)


@pytest.mark.parametrize("kwargs", [{"agent": ""}, {"agent": "a", "tenant": ""},
                                    {"agent": "a", "mode": "global"}])
def test_bad_scopes_are_clear_errors(kwargs: dict) -> None:
    from xflow_runtime.memory.chat import ChatScope

    with pytest.raises(ChatMemoryError):
        ChatScope(**kwargs)


def test_user_scope_keys_by_user_not_by_memory_id() -> None:
    settings = MemorySettings.from_definition({"scope": "user", "memoryId": "${ .sessionId }"})
    monday = settings.scope(agent="wf", instance_id="i1", data={"sessionId": "a"}, user="alice")
    tuesday = settings.scope(agent="wf", instance_id="i2", data={"sessionId": "b"}, user="alice")
    assert monday.key().memory_id == tuesday.key().memory_id and monday.key().session == "a"


@pytest.mark.parametrize(("memory", "fragment"), [
    ("yes", "must be an object"),
    ({"memoryid": "x"}, "unknown field"),
    ({"enabled": "no"}, "true or false"),
    ({"scope": "global"}, "expected none, session or user"),
    ({"memoryType": "summary"}, "unknown memoryType"),
    ({"maxMessages": -3}, "non-negative"),
    ({"memoryId": ""}, "non-empty"),
    ({"memoryId": "${ .a | }"}, "in expression"),
])
def test_bad_memory_objects_are_clear_errors(memory: object, fragment: str) -> None:
    from xflow_runtime.errors import XFlowError

    with pytest.raises(XFlowError, match=fragment):
        MemorySettings.from_definition(memory)  # type: ignore[arg-type]


async def test_open_twice_is_idempotent_and_uses_one_migration_chain(sqlite_url: str) -> None:
    from sqlalchemy import text

    from xflow_runtime.storage.migrate import VERSION_TABLE, head_revision

    for _ in range(2):
        memory = ChatMemory.open(sqlite_url)
        with memory.engine.connect() as connection:
            versions = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
        memory.close()
        assert versions == [head_revision()]
    from alembic.script import ScriptDirectory

    from xflow_runtime.storage.migrate import _config

    chain = [r.revision for r in ScriptDirectory.from_config(_config()).walk_revisions()]
    assert chain[-1] == "0001_chat_memory" and chain[0] == head_revision()  # one linear chain


def test_concurrent_first_opens_migrate_once(database_url: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from sqlalchemy import inspect

    with ThreadPoolExecutor(4) as pool:
        memories = list(pool.map(lambda _: ChatMemory.open(database_url), range(4)))
    tables = set(inspect(memories[0].engine).get_table_names())
    for memory in memories:
        memory.close()
    assert {"xflow_chats", "xflow_chat_messages", "xflow_alembic_version"} <= tables
