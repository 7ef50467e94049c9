"""Automatic fact extraction: when it runs, what the extraction model sees, consent, retries,
durability and dedup in place (through litellm and the scripted model server)."""

from __future__ import annotations

import asyncio

import pytest

from tests.memory.longterm.agent_loop import agent_turn
from tests.memory.longterm.conftest import EXTRACTION_MODEL, options_for
from xflow_runtime.memory.longterm import LongTermMemory, MemoryScope
from xflow_runtime.memory.longterm import jobs
from xflow_runtime.memory.longterm.config import FactExtractionSettings
from xflow_runtime.memory.longterm.extraction import dedup_key
from xflow_runtime.storage.database import write_transaction
from xflow_runtime.testing import ScriptedModelServer

SCOPE = MemoryScope(tenant="acme", agent="concierge", user="guest-7")
EXTRACT = FactExtractionSettings(enabled=True, model=EXTRACTION_MODEL, min_user_turns=3, last_messages=4)
FACTS = [{"content": "The user is allergic to peanuts.", "category": "fact", "importance": 10},
         {"content": "The user has a dentist appointment on 2026-03-07.", "category": "event", "importance": 6}]


def script(server: ScriptedModelServer, extraction_reply: object = None, latency: float | None = None) -> None:
    reply = {"json": FACTS} if extraction_reply is None else extraction_reply
    if latency is not None:
        reply = {**reply, "latency": latency}
    server.set_script({"rules": [{"when": {"model": "gpt-4o-mini"}, "reply": reply}],
                       "default": {"text": "Certainly."}})


def extraction_requests(server: ScriptedModelServer) -> list:
    return [r for r in server.chat_requests if r.body.get("model") == "gpt-4o-mini"]


async def test_extraction_runs_from_the_kth_user_turn_and_facts_reach_the_next_conversation(
        memory: LongTermMemory, model_server: ScriptedModelServer) -> None:
    script(model_server)
    history: list[dict] = []
    for turn, text in enumerate(["Hi!", "I am allergic to peanuts.", "Tomorrow I see my dentist."], start=1):
        await agent_turn(memory, SCOPE, model_server, history, text, extraction=EXTRACT)
        await memory.wait_for_extractions()
        assert len(extraction_requests(model_server)) == (1 if turn == 3 else 0), turn
    (request,) = extraction_requests(model_server)
    system, user = request.messages
    assert "Today is 2026-03-06 (Friday)" in system["content"] and "2026-03-07" in system["content"]
    assert "JSON array" in system["content"] and "same language" in system["content"]
    # the last M=4 messages, user and assistant text only
    assert user["content"] == ("User: I am allergic to peanuts.\nAssistant: Certainly.\n"
                               "User: Tomorrow I see my dentist.\nAssistant: Certainly.")
    facts = (await memory.list(SCOPE, kind="fact")).items
    assert sorted((f.content, f.category, f.importance) for f in facts) == sorted(
        (f["content"], f["category"], f["importance"]) for f in FACTS)
    # a new conversation with the same user starts with the facts in its system prompt
    model_server.reset({"default": {"text": "Welcome back."}})
    await agent_turn(memory, SCOPE, model_server, [], "Hello again", facts=10)
    prompt = model_server.chat_requests[0].messages[0]["content"]
    assert "<user_facts>" in prompt and "- The user is allergic to peanuts." in prompt
    # agent B never sees agent A's facts
    other_agent = MemoryScope(tenant="acme", agent="billing", user="guest-7")
    assert await memory.render_block(other_agent, facts=10) == ""


async def test_refused_consent_means_the_extraction_model_is_never_called(
        memory: LongTermMemory, model_server: ScriptedModelServer) -> None:
    script(model_server)
    await memory.set_consent("acme", "guest-7", False)
    history: list[dict] = []
    for text in ("one", "two", "three", "four"):
        await agent_turn(memory, SCOPE, model_server, history, text, extraction=EXTRACT)
    await memory.wait_for_extractions()
    assert extraction_requests(model_server) == [] and await memory.extraction_jobs(SCOPE) == []
    assert await memory.consent("acme", "guest-7") is False
    # consent withdrawn after a job was queued: the job is skipped without an LLM call
    await memory.set_consent("acme", "guest-7", None)
    with write_transaction(memory.engine) as connection:
        jobs.enqueue(connection, SCOPE, model=EXTRACTION_MODEL, messages=history, dedup_key="k",
                     source=None, erasure_epoch=0)
    await memory.set_consent("acme", "guest-7", False)
    assert await memory.run_pending_extractions() == 1
    assert extraction_requests(model_server) == []
    (job,) = await memory.extraction_jobs(SCOPE)
    assert job["status"] == "done" and "consent" in job["last_error"]


async def test_extraction_is_off_the_reply_path(memory: LongTermMemory, model_server: ScriptedModelServer) -> None:
    script(model_server, latency=0.4)
    history = [{"role": "user", "content": f"message {i}"} for i in range(3)]
    job_id = await memory.after_turn(SCOPE, history, EXTRACT)
    # after_turn returned: the job is queued, the model has not answered, no fact exists yet
    assert job_id is not None
    assert (await memory.list(SCOPE, kind="fact")).items == ()
    assert [j["status"] for j in await memory.extraction_jobs(SCOPE)] in (["pending"], ["running"])
    await memory.wait_for_extractions()
    assert len((await memory.list(SCOPE, kind="fact")).items) == 2
    # the same conversation state is not queued twice
    assert await memory.after_turn(SCOPE, history, EXTRACT) is None
    # below the threshold, disabled, or without an end user: nothing is queued
    assert await memory.after_turn(SCOPE, history[:2], EXTRACT) is None
    assert await memory.after_turn(SCOPE, history + [{"role": "user", "content": "x"}],
                                   FactExtractionSettings(enabled=False)) is None
    assert await memory.after_turn(MemoryScope("acme", "concierge"), history, EXTRACT) is None


async def test_failures_are_retried_and_never_read_as_no_facts(
        memory: LongTermMemory, model_server: ScriptedModelServer) -> None:
    script(model_server)
    model_server.fail_model("gpt-4o-mini", status=500, count=2)
    history: list[dict] = []
    for text in ("a", "b", "c"):
        reply = await agent_turn(memory, SCOPE, model_server, history, text, extraction=EXTRACT)
        assert reply == "Certainly."  # the conversation never sees extraction failures
    await memory.wait_for_extractions()
    (job,) = await memory.extraction_jobs(SCOPE)
    assert (job["status"], job["attempts"], job["facts_written"]) == ("done", 3, 2)
    assert len(extraction_requests(model_server)) == 3


async def test_malformed_answers_are_retried_then_the_job_fails_visibly(
        database_url: str, model_server: ScriptedModelServer) -> None:
    async with LongTermMemory.open(database_url, options_for(model_server, extraction_max_attempts=2)) as memory:
        script(model_server, extraction_reply={"text": "Sure! The user likes peanuts."})
        messages = [{"role": "user", "content": str(i)} for i in range(3)]
        await memory.after_turn(SCOPE, messages, EXTRACT)
        await memory.wait_for_extractions()
        (job,) = await memory.extraction_jobs(SCOPE)
        assert (job["status"], job["attempts"], job["facts_written"]) == ("failed", 2, 0)
        assert "not JSON" in job["last_error"]
        assert (await memory.list(SCOPE, kind="fact")).items == ()


async def test_a_job_left_running_by_a_crashed_worker_is_picked_up_again(
        memory: LongTermMemory, model_server: ScriptedModelServer) -> None:
    script(model_server)
    messages = [{"role": "user", "content": str(i)} for i in range(3)]
    with write_transaction(memory.engine) as connection:
        jobs.enqueue(connection, SCOPE, model=EXTRACTION_MODEL, messages=messages,
                     dedup_key=dedup_key(messages, None), source=None, erasure_epoch=0)
    with write_transaction(memory.engine) as connection:
        crashed = jobs.claim(connection, lease_s=0.0)  # claimed, then the process "died"
    assert crashed is not None
    await asyncio.sleep(0.01)
    assert await memory.run_pending_extractions() == 1
    (job,) = await memory.extraction_jobs(SCOPE)
    assert (job["status"], job["attempts"], job["facts_written"]) == ("done", 2, 2)


async def test_near_duplicates_are_updated_in_place(memory: LongTermMemory,
                                                    model_server: ScriptedModelServer) -> None:
    await memory.add_facts(SCOPE, ["The user likes green tea."])
    (original,) = (await memory.list(SCOPE, kind="fact")).items
    script(model_server, extraction_reply={"json": [
        {"content": "the user LIKES green tea!", "category": "preference", "importance": 4},  # cosine 1.0
        {"content": "The user likes black coffee.", "category": "preference", "importance": 4}]})
    await memory.after_turn(SCOPE, [{"role": "user", "content": str(i)} for i in range(3)], EXTRACT)
    await memory.wait_for_extractions()
    facts = {f.id: f for f in (await memory.list(SCOPE, kind="fact")).items}
    assert len(facts) == 2
    updated = facts[original.id]
    assert updated.content == "the user LIKES green tea!" and updated.created_at == original.created_at
    assert updated.updated_at > original.updated_at


async def test_without_embeddings_exact_repeats_are_still_deduplicated(
        database_url: str, model_server: ScriptedModelServer) -> None:
    async with LongTermMemory.open(database_url, options_for(model_server, embedding_model=None)) as memory:
        await memory.add_facts(SCOPE, ["The user  likes tea.", "the user likes tea.", "The user likes milk."])
        assert sorted(f.content for f in (await memory.list(SCOPE, kind="fact")).items) == [
            "The user likes milk.", "the user likes tea."]
        assert not [r for r in model_server.requests if r.path.endswith("/embeddings")]


@pytest.mark.parametrize("extraction", [None, {"enabled": "yes"}, {"minUserTurns": 0}, {"bogus": 1}])
def test_extraction_settings_are_checked(extraction: object) -> None:
    from xflow_runtime.memory.longterm import LongTermMemoryError

    if extraction is None:
        assert FactExtractionSettings.from_definition(None) == FactExtractionSettings()
        defaults = FactExtractionSettings.from_definition({"enabled": True})
        assert (defaults.min_user_turns, defaults.last_messages, defaults.model) == (3, 15, None)
        return
    with pytest.raises(LongTermMemoryError):
        FactExtractionSettings.from_definition(extraction)  # type: ignore[arg-type]


async def test_a_finished_job_keeps_no_copy_of_the_conversation(
        memory: LongTermMemory, model_server: ScriptedModelServer) -> None:
    from tests.memory.longterm.residue import rows_containing

    script(model_server)
    await memory.after_turn(SCOPE, [{"role": "user", "content": f"quokka {i}"} for i in range(3)], EXTRACT)
    await memory.wait_for_extractions()
    (job,) = await memory.extraction_jobs(SCOPE)
    assert job["status"] == "done" and rows_containing(memory.engine, "quokka") == {}
