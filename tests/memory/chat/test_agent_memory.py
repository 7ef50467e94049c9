"""End to end: aiagent states with chat memory on SQLite, through litellm and the scripted model
server. Each test asserts the exact history every LLM request carried across instances."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.agent.support import client, plan
from xflow_runtime.engine.inprocess import run_workflow
from xflow_runtime.memory.chat import ChatMemory, ChatScope, TokenCounter

SYSTEM = {"role": "system", "content": "You are support."}

ASK = """
start: ask
functions: [{{name: orders, type: custom, operation: "python:x:y"}}]
states:
  - name: ask
    type: aiagent
    agentName: support
    aiModel: gpt-4o
    systemMessage: You are support.
    userMessage: '${{ .question }}'
    memory: {memory}
    tools: [{{name: orders, description: List orders., parameters: {{type: object}}}}]
    agentOutcomes: [{{finish: true}}]
    end: true
"""


@pytest.fixture
def chat_memory(sqlite_url: str) -> Iterator[ChatMemory]:
    memory = ChatMemory.open(sqlite_url)
    yield memory
    memory.close()


async def ask(workflow: str, server: Any, memory: ChatMemory, **data: Any) -> Any:
    result = await run_workflow(plan(workflow), data, virtual_time=False,
                                functions={"orders": lambda _: {"orders": [1, 2]}},
                                services={"llm": client(server), "chat_memory": memory})
    assert result.status == "completed", result.error
    return result


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def reply(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


async def test_message_window_across_instances_sharing_a_session(scripted_model, chat_memory) -> None:
    workflow = ASK.format(memory="{memoryId: '${ .sessionId }', maxMessages: 3}")
    scripted_model.set_script(["A1", "A2", "A3", "B1"])
    for question in ("Q1", "Q2", "Q3"):
        await ask(workflow, scripted_model, chat_memory, sessionId="s-1", question=question)
    await ask(workflow, scripted_model, chat_memory, sessionId="s-2", question="other")
    assert [r.messages for r in scripted_model.chat_requests] == [
        [SYSTEM, user("Q1")],
        [SYSTEM, user("Q1"), reply("A1"), user("Q2")],
        [SYSTEM, user("Q2"), reply("A2"), user("Q3")],  # 4 stored messages > 3: whole turns dropped
        [SYSTEM, user("other")],                        # another session starts empty
    ]


async def test_tool_calls_are_remembered_and_the_token_window_drops_whole_turns(
        scripted_model, chat_memory) -> None:
    counter = TokenCounter.for_model("gpt-4o")
    scripted_model.set_script([
        {"tool_calls": [{"name": "orders", "arguments": {}, "id": "call_a"},
                        {"name": "orders", "arguments": {"page": 2}, "id": "call_b"}]},
        "You have 2 orders.",
        "Yes, 2.",
        "Still 2.",
    ])
    big = ASK.format(memory="{memoryId: '${ .sessionId }', memoryType: token_window, maxTokens: 10000}")
    await ask(big, scripted_model, chat_memory, sessionId="s", question="my orders?")
    await ask(big, scripted_model, chat_memory, sessionId="s", question="sure?")
    first_turn = scripted_model.chat_requests[1].messages[1:] + [reply("You have 2 orders.")]
    assert [m["role"] for m in first_turn] == ["user", "assistant", "tool", "tool", "assistant"]
    assert scripted_model.chat_requests[2].messages == [SYSTEM, *first_turn, user("sure?")]

    stored = await chat_memory.load_window(ChatScope(agent="support", session="s"),
                                           _policy(10000), model="gpt-4o")
    second_turn_tokens = sum(counter.count(m) for m in stored[5:])
    tight = ASK.format(memory="{memoryId: s, memoryType: token_window, maxTokens: %d}" % second_turn_tokens)
    await ask(tight, scripted_model, chat_memory, question="really?")
    assert scripted_model.chat_requests[3].messages == [
        SYSTEM, user("sure?"), reply("Yes, 2."), user("really?")]  # the tool turn went whole


async def test_a_step_with_memory_off_spends_no_history_and_stores_nothing(
        scripted_model, chat_memory) -> None:
    scripted_model.set_script(["Hello Ann.", "HELLO ANN.", "Hi again."])
    workflow = """
start: greet
states:
  - {name: greet, type: aiagent, agentName: a, systemMessage: S, userMessage: I am Ann,
     memory: {memoryId: m}, agentOutcomes: [{finish: true}], transition: format}
  - {name: format, type: aiagent, agentName: a, systemMessage: S, userMessage: shout it,
     memory: {memoryId: m, enabled: false}, agentOutcomes: [{finish: true}], transition: again}
  - {name: again, type: aiagent, agentName: a, systemMessage: S, userMessage: hi,
     memory: {memoryId: m}, agentOutcomes: [{finish: true}], end: true}
"""
    await ask(workflow, scripted_model, chat_memory)
    system = {"role": "system", "content": "S"}
    assert [r.messages for r in scripted_model.chat_requests] == [
        [system, user("I am Ann")],
        [system, user("shout it")],
        [system, user("I am Ann"), reply("Hello Ann."), user("hi")],
    ]


async def test_a_failed_step_writes_nothing(scripted_model, chat_memory) -> None:
    workflow = ASK.format(memory="{memoryId: '${ .sessionId }'}")
    scripted_model.set_script(["A1", {"error": {"status": 400, "message": "bad request"}}, "A3"])
    await ask(workflow, scripted_model, chat_memory, sessionId="s", question="Q1")
    failed = await run_workflow(plan(workflow), {"sessionId": "s", "question": "Q2"}, virtual_time=False,
                                services={"llm": client(scripted_model), "chat_memory": chat_memory})
    assert failed.status == "failed"
    await ask(workflow, scripted_model, chat_memory, sessionId="s", question="Q3")
    assert scripted_model.chat_requests[-1].messages == [SYSTEM, user("Q1"), reply("A1"), user("Q3")]


def _policy(max_tokens: int) -> Any:
    from xflow_runtime.memory.chat import WindowPolicy

    return WindowPolicy("token_window", max_tokens=max_tokens)
