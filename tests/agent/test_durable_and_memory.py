"""Agents on the durable engine (recovery without repeating LLM calls), the persistent chat
memory as conversation store, and usage in the instance history."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from xflow_runtime.history import summarize
from xflow_runtime.llm.client import LLMSettings, configure_default_client
from xflow_runtime.memory.chat import ChatMemory
from xflow_runtime.runtime import Runtime
from tests.agent.support import Conversation, Records, run

CHAT = """
id: durable-chat
specVersion: '0.8'
start: chat
states:
  - name: chat
    type: aiagent
    agentName: concierge
    userMessage: '${ .message }'
    memory: {memoryId: '${ .session }', maxMessages: 20}
    output: {schema: {type: object, properties: {response: {type: string}}, required: [response]}}
    agentOutcomes:
      - {condition: '${ $agentOutcome.returnValues.response == "Bye." }', finish: true}
      - {finish: false}
    end: true
"""


@pytest.fixture
def default_llm(scripted_model):
    configure_default_client(LLMSettings(api_base=scripted_model.api_base))
    yield scripted_model
    configure_default_client(None)


@pytest.mark.slow
async def test_a_durable_conversation_survives_a_restart_without_repeating_llm_calls(default_llm, tmp_path: Path):
    default_llm.set_script([{"json": {"response": "Hello, how can I help?"}}, {"json": {"response": "Bye."}}])
    workflow = tmp_path / "chat.yaml"
    workflow.write_text(CHAT)
    url = f"sqlite:///{tmp_path / 'durable.sqlite'}"
    replies: list[str] = []
    first = Runtime("durable", database_url=url,
                    on_history=lambda r: replies.append(r["reply"]) if r.get("event") == "agent_reply" else None)
    await first.start(first.load(workflow), {"message": "Hi", "session": "s-1"}, instance_id="chat-1")
    for _ in range(1200):  # the first LLM call also imports litellm (slow on a busy machine)
        if replies:
            break
        await asyncio.sleep(0.05)
    assert replies == ["Hello, how can I help?"]
    await first.close()  # the process "dies" while the conversation waits for the user

    second = Runtime("durable", database_url=url)
    async with second:
        await second.send_message("chat-1", "Thanks, goodbye")
        output = await second.instance("chat-1").result(timeout=60)
        described = await second.describe("chat-1")
    assert output["response"] == "Bye."
    requests = default_llm.chat_requests
    assert len(requests) == 2, "the first answer was replayed from the recorded step, not asked again"
    assert [m["content"] for m in requests[1].messages[1:]] == ["Hi", '{"response": "Hello, how can I help?"}', "Thanks, goodbye"]
    usage = described["states"][0]["usage"]
    assert usage["calls"] == 2 and usage["total_tokens"] > 0


async def test_persistent_chat_memory_continues_a_conversation_in_a_new_instance(scripted_model, tmp_path: Path):
    memory = ChatMemory.open(f"sqlite:///{tmp_path / 'memory.sqlite'}")
    try:
        scripted_model.set_script([{"json": {"response": r}} for r in ("Noted: you like tea.", "Bye.", "You like tea.")])
        chat = Conversation(CHAT, scripted_model, {"message": "I like tea", "session": "s-9"},
                            services={"chat_memory": memory})
        await chat.reply()
        chat.send("bye")
        assert (await chat.result()).status == "completed"
        # A new instance with the same memoryId starts from the stored history.
        later = Conversation(CHAT, scripted_model, {"message": "What do I like?", "session": "s-9"},
                             services={"chat_memory": memory})
        await later.reply()
        later.task.cancel()
        assert [m["content"] for m in scripted_model.chat_requests[-1].messages[1:]] == [
            "I like tea", '{"response": "Noted: you like tea."}', "bye", '{"response": "Bye."}', "What do I like?"]
        other = Conversation(CHAT, scripted_model, {"message": "What do I like?", "session": "s-10"},
                             services={"chat_memory": memory})
        scripted_model.set_script([{"json": {"response": "I do not know yet."}}])
        await other.reply()
        other.task.cancel()
        assert [m["content"] for m in scripted_model.chat_requests[-1].messages[1:]] == ["What do I like?"]
    finally:
        memory.close()


async def test_llm_usage_is_summed_into_the_state_visit(scripted_model):
    records = Records()
    scripted_model.set_script([{"tool_calls": [{"name": "t", "arguments": {}}]}, "done"])
    await run("""
start: a
functions: [{name: t, type: expression, operation: '${ {ok: true} }'}]
states:
  - {name: a, type: aiagent, agentName: x, userMessage: hi, tools: [{name: t}], agentOutcomes: [{finish: true}], end: true}
""", scripted_model, records=records)
    for seq, record in enumerate(records):
        record.setdefault("seq", seq)
        record.setdefault("at", float(seq))
    (visit,) = summarize(records).visits
    calls = records.of("llm_call")
    assert visit.usage["calls"] == 2
    assert visit.usage["total_tokens"] == sum(c["usage"]["total_tokens"] for c in calls)
    assert visit.usage["cost"] == pytest.approx(sum(c["usage"]["cost"] for c in calls))
