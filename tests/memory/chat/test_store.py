"""ChatMemory against real databases (SQLite file and PostgreSQL): windows after reload, scope
modes, memory off, atomic turns, lazy token counts, management."""

from __future__ import annotations

import itertools
import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from tests.memory.chat.histories import assistant, histories, tool, turn, user
from xflow_runtime.memory.chat import (ChatMemory, ChatMemoryError, ChatNotFound, ChatScope,
                                       MemorySettings, ScopeMode, TokenCounter, WindowPolicy,
                                       is_valid_window)
from xflow_runtime.memory.chat.window import window_of
from xflow_runtime.storage.models import ChatMessage

SCOPE = ChatScope(agent="support", session="s-1", user="alice", tenant="acme")
MODEL = "gpt-4o"


async def store(memory: ChatMemory, scope: ChatScope, turns: list[list[dict]]) -> None:
    for messages in turns:
        await memory.append_turn(scope, messages, model=MODEL)


async def test_message_window_after_reload_keeps_whole_tool_groups(memory: ChatMemory) -> None:
    turns = [turn(i, "t", [2] if i % 2 else []) for i in range(6)]
    await store(memory, SCOPE, turns)
    window = await memory.load_window(SCOPE, WindowPolicy(max_messages=7), model=MODEL)
    assert window == turns[4] + turns[5]  # 2 + 5 messages; one more turn would need 12
    assert is_valid_window(window)


async def test_token_window_counts_with_the_models_encoding(memory: ChatMemory) -> None:
    turns = [turn(i, "some words " * i, [1]) for i in range(8)]
    await store(memory, SCOPE, turns)
    counter = TokenCounter.for_model(MODEL)
    last_two = turns[6] + turns[7]
    budget = sum(counter.count(m) for m in last_two)
    result = await memory.resolve_window(SCOPE, WindowPolicy("token_window", max_tokens=budget),
                                         model=MODEL)
    assert result.messages == last_two and result.tokens == budget
    assert (result.encoding, result.dropped_older, result.overflow) == ("o200k_base", True, False)
    smaller = await memory.load_window(SCOPE, WindowPolicy("token_window", max_tokens=budget - 1),
                                       model=MODEL)
    assert smaller == turns[7]


async def test_counts_for_another_model_are_computed_once_and_cached(memory: ChatMemory) -> None:
    await store(memory, SCOPE, [turn(0, "hello", [1])])
    policy = WindowPolicy("token_window", max_tokens=10_000)
    first = await memory.resolve_window(SCOPE, policy, model="gpt-4")
    again = await memory.resolve_window(SCOPE, policy, model="gpt-4")
    assert first.encoding == "cl100k_base" and first.tokens == again.tokens > 0
    with memory.engine.connect() as connection:
        counts = connection.execute(select(ChatMessage.token_counts)).scalars().all()
    assert all(set(c) == {"o200k_base", "cl100k_base"} for c in counts)


async def test_oversized_single_message_yields_overflow_and_a_warning(
        memory: ChatMemory, caplog: pytest.LogCaptureFixture) -> None:
    await store(memory, SCOPE, [[user("hi"), assistant("hello")],
                                [user("word " * 3000), assistant("that is long")]])
    with caplog.at_level(logging.WARNING, logger="xflow_runtime.memory.chat"):
        result = await memory.resolve_window(SCOPE, WindowPolicy("token_window", max_tokens=500),
                                             model=MODEL)
    assert result.messages == [] and result.overflow and result.dropped_older
    assert "does not fit the window" in caplog.text


async def test_a_memory_id_is_isolated_per_tenant_agent_and_user(memory: ChatMemory) -> None:
    others = [ChatScope(agent="support", session="s-1", user="bob", tenant="acme"),
              ChatScope(agent="sales", session="s-1", user="alice", tenant="acme"),
              ChatScope(agent="support", session="s-1", user="alice", tenant="globex"),
              ChatScope(agent="support", session="s-1", tenant="acme")]  # anonymous
    await store(memory, SCOPE, [[user("alice's secret"), assistant("noted")]])
    for scope in others:
        assert await memory.load_window(scope, WindowPolicy(), model=MODEL) == []
    assert len(await memory.load_window(SCOPE, WindowPolicy(), model=MODEL)) == 2


async def test_user_mode_is_one_rolling_history_across_sessions(memory: ChatMemory) -> None:
    monday = ChatScope(agent="assistant", session="monday", user="alice", mode="user")
    tuesday = ChatScope(agent="assistant", session="tuesday", user="alice", mode="user")
    await store(memory, monday, [[user("I like tea"), assistant("ok")]])
    await store(memory, tuesday, [[user("what do I like?"), assistant("tea")]])
    window = await memory.load_window(tuesday, WindowPolicy(), model=MODEL)
    assert [m["content"] for m in window] == ["I like tea", "ok", "what do I like?", "tea"]
    bob = ChatScope(agent="assistant", session="monday", user="bob", mode="user")
    assert await memory.load_window(bob, WindowPolicy(), model=MODEL) == []
    with memory.engine.connect() as connection:
        sessions = connection.execute(select(ChatMessage.session_id)
                                      .order_by(ChatMessage.sequence)).scalars().all()
    assert sessions == ["monday", "monday", "tuesday", "tuesday"]  # every row keeps its session


async def test_user_mode_without_a_user_falls_back_to_stateless_with_a_warning(
        memory: ChatMemory, caplog: pytest.LogCaptureFixture) -> None:
    anonymous = ChatScope(agent="assistant", session="s", mode="user")
    with caplog.at_level(logging.WARNING, logger="xflow_runtime.memory.chat"):
        assert await memory.append_turn(anonymous, [user("hi")], model=MODEL) is None
        assert await memory.load_window(anonymous, WindowPolicy(), model=MODEL) == []
    assert "falling back to stateless" in caplog.text
    assert await memory.list_chats() == []


async def test_memory_off_spends_no_history_and_writes_nothing(memory: ChatMemory) -> None:
    await store(memory, SCOPE, [[user("earlier"), assistant("yes")]])
    settings = MemorySettings.from_definition({"memoryId": "s-1", "enabled": False})
    off = settings.scope(agent="support", instance_id="i-1", data={}, tenant="acme", user="alice")
    assert off.mode is ScopeMode.NONE
    assert await memory.load_window(off, settings.policy, model=MODEL) == []
    assert await memory.append_turn(off, [user("format this"), assistant("done")], model=MODEL) is None
    assert len(await memory.history((await memory.list_chats(tenant="acme"))[0].id,
                                    tenant="acme")) == 2


async def test_session_mode_needs_a_memory_id(memory: ChatMemory) -> None:
    with pytest.raises(ChatMemoryError, match="needs a memoryId"):
        await memory.load_window(ChatScope(agent="a"), WindowPolicy(), model=MODEL)


async def test_a_failed_turn_writes_nothing(memory: ChatMemory) -> None:
    await store(memory, SCOPE, [[user("one"), assistant("1")]])
    with pytest.raises(ChatMemoryError, match="no result"):  # invalid: rejected before writing
        await memory.append_turn(SCOPE, [user("two"), assistant(None, "c1")], model=MODEL)
    unserialisable = [user("two"), assistant(None, "c1"),
                      {"role": "tool", "tool_call_id": "c1", "content": [{"type": "blob", "data": b"\x00"}]}]
    with pytest.raises(ChatMemoryError, match="could not store the turn"):  # fails mid-transaction
        await memory.append_turn(SCOPE, unserialisable, model=MODEL)
    fresh = ChatScope(agent="support", session="fresh", tenant="acme")
    with pytest.raises(ChatMemoryError):
        await memory.append_turn(fresh, unserialisable, model=MODEL)
    assert [c.memory_id for c in await memory.list_chats(tenant="acme")] == ["s-1"]  # no chat row
    result = await memory.append_turn(SCOPE, [user("three"), assistant("3")], model=MODEL)
    assert (result.first_sequence, result.last_sequence) == (3, 4)  # no gap left by the failures
    history = await memory.history(result.chat_id, tenant="acme")
    assert [m["content"] for m in history] == ["one", "1", "three", "3"]


async def test_management_list_read_delete_clear(memory: ChatMemory) -> None:
    for session in ("a", "b", "c"):
        scope = ChatScope(agent="support", session=session, user="alice", tenant="acme")
        await store(memory, scope, [[user(f"hello from {session}"), assistant("hi")]])
    await store(memory, ChatScope(agent="support", session="a", user="bob", tenant="acme"),
                [[user("bob here"), assistant("hi bob")]])
    chats = await memory.list_chats(tenant="acme", user="alice")
    assert [c.memory_id for c in chats] == ["c", "b", "a"]  # most recent first
    assert chats[0].title == "hello from c" and chats[0].message_count == 2
    assert chats[0].updated_at.utcoffset() is not None and chats[0].created_at <= chats[0].updated_at
    assert await memory.list_chats(tenant="globex", user="alice") == []

    with pytest.raises(ChatNotFound):  # a chat id is only reachable inside its tenant
        await memory.history(chats[0].id, tenant="globex")
    with pytest.raises(ChatNotFound):
        await memory.delete_chat(chats[0].id, tenant="globex")

    assert await memory.delete_chat(chats[0].id, tenant="acme") == 2
    with pytest.raises(ChatNotFound):
        await memory.history(chats[0].id, tenant="acme")
    assert await memory.clear("a", tenant="acme", user="alice") == 2  # bob's "a" stays
    assert [(c.user, c.memory_id) for c in await memory.list_chats(tenant="acme")] == [
        ("bob", "a"), ("alice", "b")]
    assert await memory.clear("a", tenant="acme") == 2
    with memory.engine.connect() as connection:
        remaining = connection.execute(select(ChatMessage.chat_id)).scalars().all()
    assert set(remaining) == {(await memory.list_chats(tenant="acme"))[0].id}


async def test_tool_results_are_replayed_verbatim(memory: ChatMemory) -> None:
    messages = [user("orders?"), assistant("checking", "c1", "c2"), tool("c2", '{"n": 2}'),
                tool("c1", "[]"), assistant("You have 2 orders.")]
    await memory.append_turn(SCOPE, messages, model=MODEL)
    assert await memory.load_window(SCOPE, WindowPolicy(), model=MODEL) == messages


_examples = itertools.count()


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(turns=histories, max_messages=st.one_of(st.none(), st.integers(1, 30)),
       max_tokens=st.one_of(st.none(), st.integers(1, 800)))
def test_windows_read_from_storage_equal_the_pure_selection(
        sqlite_memory: ChatMemory, turns: list[list[dict]], max_messages: int | None,
        max_tokens: int | None) -> None:
    scope = ChatScope(agent="prop", session=f"s-{next(_examples)}")
    for messages in turns:
        sqlite_memory.append_turn_sync(scope, messages, model=MODEL)
    history = [m for t in turns for m in t]
    counter = TokenCounter.for_model(MODEL)
    policy = WindowPolicy("message_window", max_messages=max_messages, max_tokens=max_tokens)
    expected = window_of([(m["role"], counter.count(m)) for m in history], policy)
    window = sqlite_memory.resolve_window_sync(scope, policy, model=MODEL)
    assert window.messages == (history[len(history) - expected.kept:] if expected.kept else [])
    assert (window.tokens, window.overflow) == (expected.tokens, expected.overflow)
    assert is_valid_window(window.messages)
