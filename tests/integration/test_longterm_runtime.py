"""Long-term memory through the public Runtime: ``Runtime(long_term=LongTermOptions(...))``,
extraction jobs left by a crashed process resumed when a new runtime opens the memory, and the
gateway model rule shared with the agent's LLM client. Every LLM and embedding call goes through
litellm over HTTP to the scripted model server, which records it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest
from sqlalchemy import create_engine, text

from xflow_runtime.cli.main import main as xflow
from xflow_runtime.llm.client import LLMSettings
from xflow_runtime.memory.longterm import (FactExtractionSettings, LongTermMemory, LongTermOptions,
                                           MemoryScope)
from xflow_runtime.runtime import Runtime
from xflow_runtime.testing import ScriptedModelServer

SCOPE = MemoryScope("acme", "concierge", "guest-7")
FACTS = [{"content": "The user is allergic to peanuts.", "category": "fact", "importance": 10}]
HELLO = {"json": {"response": "Hello."}}
NOTED = {"json": {"response": "Noted."}}
EMBEDDER = "house-embedder"  # unknown to litellm: it works only with the gateway rule (openai/…)


def workflow(tmp_path: Path, settings: str) -> Path:
    path = tmp_path / "concierge.yaml"
    path.write_text("id: concierge\nspecVersion: '0.8'\nstart: chat\nstates:\n"
                    "  - name: chat\n    type: aiagent\n    agentName: concierge\n    aiModel: gpt-4o\n"
                    "    systemMessage: You are the concierge.\n    userMessage: '${ .message }'\n"
                    "    output: {schema: {type: object, properties: {response: {type: string}}}}\n"
                    f"    agentOutcomes: [{{finish: true}}]\n    {settings}\n    end: true\n")
    return path


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memory.db'}"


async def run_agent(path: Path, url: str, llm: LLMSettings, message: str, *,
                    until: Callable[[], Awaitable[bool]] | None = None, **runtime_options: Any) -> Any:
    """One instance on a fresh in-process runtime; with ``until``, keep the runtime open (its
    background extraction work alive) until that holds."""
    async with Runtime(chat_memory=url, llm=llm, **runtime_options) as runtime:
        handle = await runtime.start(runtime.load(path), {"message": message}, tenant="acme", user="guest-7")
        output = await handle.result()
        if until is not None:
            await eventually(until)
        return output


async def eventually(condition: Callable[[], Awaitable[bool]], timeout_s: float = 20.0) -> None:
    for _ in range(int(timeout_s / 0.05)):
        if await condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("background work did not finish")


async def job_statuses(url: str, server: ScriptedModelServer) -> list[str]:
    async with LongTermMemory.open(url, LongTermOptions(api_base=server.api_base, api_key="k")) as memory:
        return [job["status"] for job in await memory.extraction_jobs(SCOPE)]


async def facts(url: str) -> list[str]:
    async with LongTermMemory.open(url) as memory:
        return [fact.content for fact in (await memory.list(SCOPE, kind="fact")).items]


async def _statuses_are(url: str, server: ScriptedModelServer, expected: list[str]) -> bool:
    return await job_statuses(url, server) == expected


def extraction_requests(server: ScriptedModelServer, model: str) -> list:
    return [r for r in server.chat_requests if r.body.get("model") == model]


async def test_the_runtimes_embedding_model_stores_vectors_and_search_fuses_semantic_and_keywords(
        tmp_path, url, scripted_model, llm):
    write = {"name": "memory_write", "arguments": {"title": "Diet", "content": "Vegetarian since 2019"}}
    search = {"name": "memory_search", "arguments": {"query": "vegetarian"}}
    scripted_model.set_script([{"tool_calls": [write]}, {"tool_calls": [search]}, NOTED])
    path = workflow(tmp_path, "longTermMemory: {enabled: true}")
    # no api_base in the options: embedding calls go to the runtime's LLM endpoint
    await run_agent(path, url, llm, "I am vegetarian", long_term=LongTermOptions(embedding_model=EMBEDDER))

    embeddings = [r for r in scripted_model.requests if r.path.endswith("/embeddings")]
    assert [(r.body["model"], r.body["input"]) for r in embeddings] == [
        (EMBEDDER, ["Diet\nVegetarian since 2019"]), (EMBEDDER, ["vegetarian"])]
    engine = create_engine(url)
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT title, embedding_model, embedding_dim FROM xflow_memories")).all()
    engine.dispose()
    assert [tuple(row) for row in rows] == [("Diet", EMBEDDER, 64)]
    (hit,) = json.loads(scripted_model.chat_requests[2].messages[-1]["content"])["results"]
    # first in both the semantic and the keyword list: RRF 1/61 + 1/61 (one list alone: 1/61)
    assert hit["title"] == "Diet" and hit["score"] == round(2 / 61, 6)


async def test_a_job_left_pending_by_a_crashed_process_runs_when_a_new_runtime_opens_the_memory(
        tmp_path, url, scripted_model, llm):
    crashed = LongTermMemory.open(url, LongTermOptions(api_base=scripted_model.api_base, api_key="k"))
    conversation = [{"role": "user", "content": "I am allergic to peanuts."},
                    {"role": "assistant", "content": "Noted."}]
    settings = FactExtractionSettings(enabled=True, model="gpt-4o-mini", min_user_turns=1)
    assert await crashed.after_turn(SCOPE, conversation, settings, source="chat-1") is not None
    await crashed.aclose()  # stops the runner before it claims the job: the process "dies" here
    assert await job_statuses(url, scripted_model) == ["pending"]
    assert scripted_model.chat_requests == []

    scripted_model.set_script({"rules": [{"when": {"model": "gpt-4o-mini"}, "reply": {"json": FACTS}}],
                               "default": HELLO})
    # minUserTurns 3: this one-turn conversation queues nothing itself
    path = workflow(tmp_path, "factExtraction: {enabled: true, model: gpt-4o-mini, minUserTurns: 3}")
    await run_agent(path, url, llm, "Hi", until=lambda: _statuses_are(url, scripted_model, ["done"]))

    (request,) = extraction_requests(scripted_model, "gpt-4o-mini")
    assert "I am allergic to peanuts." in request.messages[1]["content"]
    assert await job_statuses(url, scripted_model) == ["done"]
    assert await facts(url) == ["The user is allergic to peanuts."]


async def test_a_resumed_job_that_fails_never_fails_the_instance(tmp_path, url, scripted_model, llm):
    crashed = LongTermMemory.open(url, LongTermOptions(api_base=scripted_model.api_base, api_key="k"))
    settings = FactExtractionSettings(enabled=True, model="gpt-4o-mini", min_user_turns=1)
    await crashed.after_turn(SCOPE, [{"role": "user", "content": "I like tea."}], settings, source="chat-1")
    await crashed.aclose()
    scripted_model.set_script({"rules": [{"when": {"model": "gpt-4o-mini"}, "reply": {"text": "not JSON"}}],
                               "default": HELLO})
    path = workflow(tmp_path, "factExtraction: {enabled: true, model: gpt-4o-mini, minUserTurns: 3}")

    async def failed_once() -> bool:  # asked once, and the failure recorded: pending, retry later
        return (len(extraction_requests(scripted_model, "gpt-4o-mini")) == 1
                and await _statuses_are(url, scripted_model, ["pending"]))

    # the instance completes (result() raises WorkflowFailed otherwise) although the job fails
    await run_agent(path, url, llm, "Hi", until=failed_once, long_term=LongTermOptions(extraction_retry_base_s=30))
    assert len(extraction_requests(scripted_model, "gpt-4o-mini")) == 1


async def test_extraction_through_the_endpoint_sends_the_model_name_as_written(tmp_path, url, scripted_model, llm):
    scripted_model.set_script({"rules": [{"when": {"model": "some-model"}, "reply": {"json": FACTS}}],
                               "default": HELLO})
    path = workflow(tmp_path, "factExtraction: {enabled: true, model: some-model, minUserTurns: 1}")
    await run_agent(path, url, llm, "I am allergic to peanuts.",
                    until=lambda: _statuses_are(url, scripted_model, ["done"]))
    assert len(extraction_requests(scripted_model, "some-model")) == 1
    assert await job_statuses(url, scripted_model) == ["done"]
    assert await facts(url) == ["The user is allergic to peanuts."]


def test_long_term_must_be_long_term_options():
    with pytest.raises(TypeError, match="LongTermOptions"):
        Runtime(long_term={"embedding_model": "x"})  # type: ignore[arg-type]


def test_xflow_run_takes_an_embedding_model(tmp_path, scripted_model, capsys):
    script = tmp_path / "script.yaml"
    write = {"name": "memory_write", "arguments": {"title": "Diet", "content": "Vegetarian"}}
    script.write_text(json.dumps([{"tool_calls": [write]}, NOTED]))
    path = workflow(tmp_path, "longTermMemory: {enabled: true}")
    db = tmp_path / "store.sqlite"
    code = xflow(["run", str(path), "--ephemeral", "--db", f"sqlite:///{db}", "--llm-script", str(script),
                  "--input", '{"message": "I am vegetarian"}', "--tenant", "acme", "--user", "guest-7",
                  "--embedding-model", EMBEDDER, "--quiet"])
    assert code == 0, capsys.readouterr().err
    engine = create_engine(f"sqlite:///{tmp_path / 'xflow.db'}")
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT title, embedding_model, embedding_dim FROM xflow_memories")).all()
    engine.dispose()
    assert [tuple(row) for row in rows] == [("Diet", EMBEDDER, 64)]
    assert xflow(["run", str(path), "--ephemeral", "--embedding-model", " "]) == 2
