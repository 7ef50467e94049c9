"""The no-database conversation store windows exactly like chat memory: same histories, same
policies, same windows (maxMessages, maxTokens, tool-call pairing, a newest turn too large)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from xflow_runtime.agent.conversation import InstanceConversations
from xflow_runtime.memory.chat import ChatMemory, ChatScope, WindowPolicy

MODEL = "gpt-4o"
_ids = itertools.count()


def turn(index: int, tool_calls: int, words: int) -> list[dict]:
    messages: list[dict] = [{"role": "user", "content": f"question {index} " + "word " * words}]
    if tool_calls:
        calls = [{"id": f"call-{index}-{n}", "type": "function",
                  "function": {"name": "lookup", "arguments": f'{{"q": "{index}-{n}"}}'}} for n in range(tool_calls)]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        messages += [{"role": "tool", "tool_call_id": call["id"], "content": "result " * words} for call in calls]
    messages.append({"role": "assistant", "content": f"answer {index}"})
    return messages


turns = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 30)), max_size=8)
policies = st.builds(WindowPolicy, kind=st.sampled_from(["message_window", "token_window"]),
                     max_messages=st.one_of(st.none(), st.integers(0, 14)),
                     max_tokens=st.one_of(st.none(), st.integers(0, 300)))


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    opened = ChatMemory.open(f"sqlite:///{tmp_path_factory.mktemp('window') / 'memory.db'}")
    yield opened
    opened.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=turns, policy=policies)
async def test_the_instance_store_selects_the_same_window_as_chat_memory(memory, shape, policy):
    scope = ChatScope(agent="window-test", session=f"s-{next(_ids)}")
    store = InstanceConversations()
    for index, (tool_calls, words) in enumerate(shape):
        messages = turn(index, tool_calls, words)
        await store.append(scope, messages, model=MODEL, step="append")
        await memory.append_turn(scope, messages, model=MODEL)
    expected = await memory.load_window(scope, policy, model=MODEL)
    assert await store.load(scope, policy, model=MODEL, step="load") == expected


async def test_a_newest_turn_larger_than_the_window_leaves_no_history():
    store = InstanceConversations()
    scope = ChatScope(agent="a", session="s")
    await store.append(scope, turn(0, 0, 1), model=MODEL, step="1")
    await store.append(scope, turn(1, 2, 1), model=MODEL, step="2")  # 5 messages
    assert await store.load(scope, WindowPolicy(max_messages=4), model=MODEL, step="3") == []
    window = await store.load(scope, WindowPolicy(max_messages=5), model=MODEL, step="4")
    assert [m["role"] for m in window] == ["user", "assistant", "tool", "tool", "assistant"]


async def test_a_token_window_counts_with_the_models_tokenizer():
    store = InstanceConversations()
    scope = ChatScope(agent="a", session="s")
    for index in range(3):
        await store.append(scope, turn(index, 0, 40), model=MODEL, step=str(index))
    everything = await store.load(scope, WindowPolicy("token_window", max_tokens=10_000), model=MODEL, step="x")
    assert len(everything) == 6
    one_turn = await store.load(scope, WindowPolicy("token_window", max_tokens=60), model=MODEL, step="y")
    assert [m["content"] for m in one_turn] == [turn(2, 0, 40)[0]["content"], "answer 2"]
