"""Long-term memory inside the real ``aiagent`` state: tools, the system-prompt block, tool calls
routed to the store, fact extraction after a stored turn and facts in the next conversation.
LLM calls go through litellm over HTTP to the scripted model server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, AsyncIterator

import pytest

from tests.agent.support import Conversation, client, plan
from xflow_runtime.engine.inprocess import run_workflow
from xflow_runtime.memory.longterm import LongTermMemory, LongTermOptions, MemoryScope
from xflow_runtime.testing import ScriptedModelServer

TOOL_NAMES = ["memory_write", "memory_search", "memory_delete"]
IDENTITY = {"tenant": "acme", "user": "guest-7"}
FACTS = [{"content": "The user is allergic to peanuts.", "category": "fact", "importance": 10}]


def agent(name: str = "concierge", *, long_term: str = "", finish: bool = True) -> str:
    outcomes = ("    agentOutcomes:\n"
                "      - {condition: '${ $agentOutcome.returnValues.response == \"Bye.\" }', finish: true}\n"
                "      - {finish: false}\n") if not finish else ""
    return (f"states:\n  - name: chat\n    type: aiagent\n    agentName: {name}\n    aiModel: gpt-4o\n"
            f"    systemMessage: You are the concierge.\n    userMessage: '${{ .message }}'\n"
            + textwrap.indent(textwrap.dedent(long_term), "    ") + outcomes + "    end: true\nstart: chat\n")


MEMORY_ON = """\
longTermMemory: {enabled: true, injectRecent: 1}
"""
EXTRACTION_ON = """\
factExtraction: {enabled: true, model: gpt-4o-mini, minUserTurns: 3, lastMessages: 6}
"""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'memory.db'}"
    return request.getfixturevalue("postgres_database_url")


@pytest.fixture
async def memory(url: str, scripted_model: ScriptedModelServer) -> AsyncIterator[LongTermMemory]:
    options = LongTermOptions(api_base=scripted_model.api_base, api_key="test-key", extraction_retry_base_s=0.05)
    lt = LongTermMemory.open(url, options)
    try:
        yield lt
    finally:
        await lt.aclose()


def services(memory: LongTermMemory, identity: dict[str, Any] = IDENTITY) -> dict[str, Any]:
    return {"long_term_memory": memory, "identity": dict(identity)}


async def run(workflow: str, server: ScriptedModelServer, input: Any, *, services: dict[str, Any] | None = None) -> Any:
    return await run_workflow(plan(workflow), input, services={"llm": client(server), **(services or {})},
                              virtual_time=False)


def system_prompts(server: ScriptedModelServer, model: str = "gpt-4o") -> list[str]:
    return [r.messages[0]["content"] for r in server.chat_requests if r.body.get("model") == model]


def extraction_requests(server: ScriptedModelServer) -> list:
    return [r for r in server.chat_requests if r.body.get("model") == "gpt-4o-mini"]


async def test_memory_tools_are_offered_only_when_the_step_enables_them(memory, scripted_model):
    scripted_model.set_script(["Hello.", "Hello."])
    plain = await run(agent(), scripted_model, {"message": "hi"}, services=services(memory))
    enabled = await run(agent(long_term=MEMORY_ON), scripted_model, {"message": "hi"}, services=services(memory))
    assert plain.status == enabled.status == "completed"
    first, second = scripted_model.chat_requests
    assert first.tool_names == [] and first.messages[0]["content"] == "You are the concierge."
    assert second.tool_names == TOOL_NAMES


async def test_a_memory_write_reaches_the_next_system_prompt_which_stays_byte_identical(memory, scripted_model):
    write = {"name": "memory_write", "arguments": {"title": "Diet", "content": "Vegetarian", "tags": ["food"]}}
    scripted_model.set_script([{"tool_calls": [write]},
                               {"tool_calls": [{"name": "memory_search", "arguments": {"query": "diet"}}]},
                               {"tool_calls": [{"name": "memory_write",
                                                "arguments": {"title": "City", "content": "Lyon"}}]},
                               "Noted."])
    result = await run(agent(long_term=MEMORY_ON), scripted_model, {"message": "I am vegetarian"},
                       services=services(memory))
    assert result.status == "completed", result
    stored = {m.title: m for m in (await memory.list(MemoryScope("acme", "concierge", "guest-7"))).items}
    assert (stored["Diet"].content, stored["Diet"].tags) == ("Vegetarian", ("food",))
    before, after_write, after_search, after_second_write = system_prompts(scripted_model)
    assert before == "You are the concierge."
    assert after_write.startswith("You are the concierge.\n\n") and "Vegetarian" in after_write
    assert after_search == after_write  # no write in between: the same bytes (cacheable prefix)
    assert "Lyon" in after_second_write and after_second_write != after_search  # a write changes it
    tool_message = scripted_model.chat_requests[2].messages[-1]
    assert tool_message["role"] == "tool" and "Vegetarian" in tool_message["content"]


async def test_search_results_arrive_in_the_tool_message_never_in_the_system_prompt(memory, scripted_model):
    scope = MemoryScope("acme", "concierge", "guest-7")
    await memory.write(scope, "Drink", "Likes green tea")
    await memory.write(scope, "City", "Lives in Lyon")  # injectRecent: 1 → only this one is in the block
    scripted_model.set_script([{"tool_calls": [{"name": "memory_search", "arguments": {"query": "tea"}}]}, "Tea."])
    assert (await run(agent(long_term=MEMORY_ON), scripted_model, {"message": "what do I drink?"},
                      services=services(memory))).status == "completed"
    first, second = system_prompts(scripted_model)
    assert first == second and "Lyon" in first and "green tea" not in second
    tool_message = scripted_model.chat_requests[1].messages[-1]
    assert tool_message["role"] == "tool" and "green tea" in json.loads(tool_message["content"])["results"][0]["text"]


async def test_memory_tools_count_toward_max_tool_executions(memory, scripted_model):
    write = {"name": "memory_write", "arguments": {"title": "A", "content": "one"}}
    scripted_model.set_script([{"tool_calls": [write, {"name": "memory_write",
                                                       "arguments": {"title": "B", "content": "two"}}]}, "Done."])
    workflow = agent(long_term=MEMORY_ON + "maxToolExecutions: 1\n")
    assert (await run(workflow, scripted_model, {"message": "remember"}, services=services(memory))).status == "completed"
    titles = [m.title for m in (await memory.list(MemoryScope("acme", "concierge", "guest-7"))).items]
    assert titles == ["A"]
    refused = scripted_model.chat_requests[1].messages[-1]
    assert "maxToolExecutions" in refused["content"]


def _extraction_script(server: ScriptedModelServer) -> None:
    server.set_script({"rules": [{"when": {"model": "gpt-4o-mini"}, "reply": {"json": FACTS}}],
                       "default": {"text": "Certainly."}})


async def _three_turns(workflow: str, server: ScriptedModelServer, memory: LongTermMemory,
                       identity: dict[str, Any] = IDENTITY) -> list[int]:
    """Drive a finish:false conversation for three user turns; the extraction calls seen after each."""
    chat = Conversation(workflow, server, {"message": "Hi!"}, services=services(memory, identity))
    seen = []
    for text in ("I am allergic to peanuts.", "Tomorrow I see my dentist.", None):
        await chat.reply()
        await memory.wait_for_extractions()
        seen.append(len(extraction_requests(server)))
        if text is not None:
            chat.send(text)
    chat.task.cancel()
    return seen


async def test_facts_are_extracted_after_the_third_user_turn_and_reach_the_next_conversation(memory, scripted_model):
    _extraction_script(scripted_model)
    assert await _three_turns(agent(long_term=EXTRACTION_ON, finish=False), scripted_model, memory) == [0, 0, 1]
    (request,) = extraction_requests(scripted_model)
    assert "User: I am allergic to peanuts." in request.messages[1]["content"]

    scripted_model.reset({"default": {"text": "Welcome back."}})
    for name, identity in (("concierge", IDENTITY), ("concierge", {"tenant": "acme", "user": "guest-8"}),
                           ("billing", IDENTITY)):
        workflow = agent(name, long_term=EXTRACTION_ON)
        assert (await run(workflow, scripted_model, {"message": "Hello again"},
                          services=services(memory, identity))).status == "completed"
    same_user, other_user, other_agent = system_prompts(scripted_model)
    assert "<user_facts>" in same_user and "allergic to peanuts" in same_user
    assert other_user == other_agent == "You are the concierge."
    assert scripted_model.chat_requests[0].tool_names == []  # extraction alone offers no tools


async def test_refused_consent_means_the_extraction_model_is_never_called(memory, scripted_model):
    _extraction_script(scripted_model)
    await memory.set_consent("acme", "guest-7", False)
    assert await _three_turns(agent(long_term=EXTRACTION_ON, finish=False), scripted_model, memory) == [0, 0, 0]
    assert extraction_requests(scripted_model) == []


async def test_a_state_that_enables_long_term_memory_without_a_store_fails_clearly(scripted_model):
    result = await run(agent(long_term=MEMORY_ON), scripted_model, {"message": "hi"})
    assert result.status == "failed" and result.error["code"] == "LongTermMemoryUnavailable"
    assert scripted_model.chat_requests == []


def test_a_plain_agent_workflow_never_imports_long_term_memory(scripted_model, tmp_path: Path):
    scripted_model.set_script(["Hello."])
    program = textwrap.dedent(f"""
        import asyncio, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from tests.agent.support import plan
        from xflow_runtime.engine.inprocess import run_workflow
        from xflow_runtime.llm import LLMClient, LLMSettings
        workflow = plan({agent()!r})
        client = LLMClient(LLMSettings(api_base={scripted_model.api_base!r}))
        result = asyncio.run(run_workflow(workflow, {{"message": "hi"}}, services={{"llm": client}}))
        assert result.status == "completed", result
        print(sorted(m for m in sys.modules if m.startswith("xflow_runtime.memory.longterm")))
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
    assert len(scripted_model.chat_requests) == 1


async def test_the_runtime_opens_long_term_memory_on_the_chat_memory_database_only_when_needed(
        scripted_model, tmp_path: Path):
    from xflow_runtime.llm import LLMSettings
    from xflow_runtime.runtime import Runtime

    write = {"name": "memory_write", "arguments": {"title": "Diet", "content": "Vegetarian"}}
    scripted_model.set_script(["Hello.", {"tool_calls": [write]}, "Noted."])
    runtime = Runtime(database_url=f"sqlite:///{tmp_path / 'store.sqlite'}",
                      llm=LLMSettings(api_base=scripted_model.api_base))
    async with runtime:
        handle = await runtime.start(plan(agent()), {"message": "hi"}, tenant="acme", user="guest-7")
        await handle.result()
        assert not runtime._services.long_term_memory.opened  # a plain agent leaves it closed
        handle = await runtime.start(plan(agent(long_term=MEMORY_ON)), {"message": "I am vegetarian"}, tenant="acme",
                                     user="guest-7")
        await handle.result()
        assert runtime._services.long_term_memory.opened
    assert not runtime._services.long_term_memory.opened  # closed with the runtime
    assert runtime.chat_memory_url == f"sqlite:///{tmp_path / 'xflow.db'}"
    async with LongTermMemory.open(runtime.chat_memory_url) as reopened:
        (stored,) = (await reopened.list(MemoryScope("acme", "concierge", "guest-7"))).items
        assert stored.content == "Vegetarian"
        receipt = await reopened.erase_user("acme", "guest-7")
        assert receipt.total >= 1, receipt
        assert (await reopened.list(MemoryScope("acme", "concierge", "guest-7"))).items == ()


@pytest.mark.parametrize(("long_term", "message"), [
    ("longTermMemory: {enabled: yes please}\n", "longTermMemory.enabled must be true or false"),
    ("factExtraction: {enabled: true, minUserTurns: 0}\n", "factExtraction.minUserTurns must be an integer ≥ 1"),
    ("longTermMemory: {enabled: true, recent: 3}\n", "unknown field(s) ['recent']"),
    ("longTermMemory: {enabled: true}\ntools: [{name: memory_search, execution: {functionRef: f}}]\n",
     "'memory_search' is a long-term memory tool"),
])
def test_bad_long_term_settings_are_positioned_definition_errors(long_term: str, message: str):
    from xflow_runtime.errors import DefinitionError

    with pytest.raises(DefinitionError) as raised:
        plan("functions: [{name: f, type: custom, operation: 'python:json:dumps'}]\n" + agent(long_term=long_term))
    assert message in str(raised.value) and "/states/0" in str(raised.value)


def test_disabled_settings_compile_to_no_long_term_memory():
    compiled = plan(agent(long_term="longTermMemory: {enabled: false}\nfactExtraction: {enabled: false}\n"))
    assert compiled.states["chat"].long_term is None
    (long_term, extraction) = plan(agent(long_term=MEMORY_ON + EXTRACTION_ON)).states["chat"].long_term
    assert (long_term.enabled, long_term.inject_recent, extraction.model) == (True, 1, "gpt-4o-mini")


DURABLE_CHAT = """
id: durable-memory-chat
specVersion: '0.8'
start: chat
states:
  - name: chat
    type: aiagent
    agentName: concierge
    aiModel: gpt-4o
    userMessage: '${ .message }'
    memory: {memoryId: '${ .session }', maxMessages: 20}
    longTermMemory: {enabled: true}
    factExtraction: {enabled: true, model: gpt-4o-mini}
    output: {schema: {type: object, properties: {response: {type: string}}, required: [response]}}
    agentOutcomes:
      - {condition: '${ $agentOutcome.returnValues.response == "Bye." }', finish: true}
      - {finish: false}
    end: true
"""


@pytest.mark.slow
async def test_a_durable_conversation_with_long_term_memory_survives_a_restart(scripted_model, tmp_path: Path):
    """Memory tool calls and after_turn are recorded steps: after a restart nothing is asked or
    queued twice, and the third user turn triggers exactly one extraction."""
    from xflow_runtime.llm import LLMSettings
    from xflow_runtime.runtime import Runtime

    write = {"name": "memory_write", "arguments": {"title": "Allergy", "content": "Peanuts"}}
    scripted_model.set_script({
        "rules": [{"when": {"model": "gpt-4o-mini"}, "reply": {"json": FACTS}}],
        "replies": [{"tool_calls": [write]}, {"json": {"response": "Noted."}}, {"json": {"response": "Sure."}},
                    {"json": {"response": "Bye."}}]})
    workflow = tmp_path / "chat.yaml"
    workflow.write_text(DURABLE_CHAT)
    url = f"sqlite:///{tmp_path / 'durable.sqlite'}"
    llm = LLMSettings(api_base=scripted_model.api_base)
    replies: list[str] = []
    first = Runtime("durable", database_url=url, llm=llm,
                    on_history=lambda r: replies.append(r["reply"]) if r.get("event") == "agent_reply" else None)
    await first.start(first.load(workflow), {"message": "I am allergic to peanuts", "session": "s-1"},
                      instance_id="lt-chat-1", tenant="acme", user="guest-7")
    for _ in range(1200):
        if replies:
            break
        await asyncio.sleep(0.05)
    assert replies == ["Noted."]
    await first.close()

    second = Runtime("durable", database_url=url, llm=llm)
    async with second:
        await second.send_message("lt-chat-1", "What do you know?")
        await second.send_message("lt-chat-1", "Thanks, bye")
        output = await second.instance("lt-chat-1").result(timeout=60)
        lazy = second._services.long_term_memory
        memory = await lazy.memory()
        await memory.wait_for_extractions()
        scope = MemoryScope("acme", "concierge", "guest-7")
        memories = (await memory.list(scope, kind="memory")).items
        facts = (await memory.list(scope, kind="fact")).items
    assert output["response"] == "Bye."
    agent_calls = [r for r in scripted_model.chat_requests if r.body.get("model") == "gpt-4o"]
    assert len(agent_calls) == 4, "no LLM call was repeated after the restart"
    assert [m.content for m in memories] == ["Peanuts"] and [f.content for f in facts] == [FACTS[0]["content"]]
    assert len(extraction_requests(scripted_model)) == 1
