"""Retrieval quality features, through litellm over HTTP to the scripted model server:
contextual indexing of chat messages (background, scoped), query/document embedding modes,
the optional reranker and its fallback, time-aware queries, and re-indexing."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.memory.longterm.conftest import EMBEDDING_MODEL, TODAY, embedding_requests, options_for
from xflow_runtime.cli.main import main
from xflow_runtime.memory.chat import ChatMemory, ChatScope
from xflow_runtime.memory.longterm import (EmbeddingModes, FactExtractionSettings, LongTermMemory, MemoryScope)
from xflow_runtime.memory.longterm.context_text import day_label, message_text
from xflow_runtime.memory.longterm.embedding_modes import space_key
from xflow_runtime.memory.longterm.time_query import resolve_time
from xflow_runtime.testing import ScriptedModelServer

DANA = MemoryScope("acme", "support", "dana")
SESSION_DAY = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
TURN = [{"role": "user", "name": "Caroline", "content": "How was your weekend?"},
        {"role": "assistant", "content": "I went to a pottery class on Saturday."},
        {"role": "user", "content": "Nice!\n  Did you   make a bowl?"}]


def embedded_inputs(server: ScriptedModelServer) -> list[str]:
    return [text for request in embedding_requests(server) for text in request.body["input"]]


async def append(memory: LongTermMemory, user: str, messages: list[dict], *, agent: str = "support",
                 session: str = "s1", at: datetime = SESSION_DAY) -> None:
    await ChatMemory(memory.engine).append_turn(ChatScope(agent=agent, session=session, user=user, tenant="acme"),
                                                messages, model="gpt-4o", at=at)


# ------------------------------------------------------------------ contextual indexing


def test_contextual_text_is_built_as_documented() -> None:
    assert day_label(date(2023, 5, 8)) == "Monday 8 May 2023"
    assert message_text("Hi!", said_on=SESSION_DAY, who="Caroline") == "[Monday 8 May 2023] Caroline: Hi!"
    assert message_text("I went to a support group.", said_on=date(2023, 5, 8), who="Caroline",
                        answers=("Melanie", "How was\nyour weekend?")) == (
        "[Monday 8 May 2023] Melanie: How was your weekend?\nCaroline: I went to a support group.")
    long = message_text("ok", said_on=date(2023, 5, 8), who="User", answers=("Assistant", "x " * 400))
    assert long.split("\n")[0].endswith("…") and len(long.split("\n")[0]) < 340


async def test_messages_are_embedded_in_context_in_the_background(
        memory: LongTermMemory, model_server: ScriptedModelServer) -> None:
    await append(memory, "dana", TURN)
    await append(memory, "eve", [{"role": "user", "content": "My pottery bowl cracked"}])
    queued = await memory.after_turn(DANA, TURN, FactExtractionSettings())
    assert queued is None and embedding_requests(model_server) == []  # nothing awaited on the reply path
    await memory.wait_for_indexing()
    assert embedded_inputs(model_server) == [
        "[Monday 8 May 2023] Caroline: How was your weekend?",
        "[Monday 8 May 2023] Caroline: How was your weekend?\nAssistant: I went to a pottery class on Saturday.",
        "[Monday 8 May 2023] Assistant: I went to a pottery class on Saturday.\nUser: Nice! Did you make a bowl?",
        # the second vector of each message: date and speaker, without the turn it answers
        "[Monday 8 May 2023] Caroline: How was your weekend?",
        "[Monday 8 May 2023] Assistant: I went to a pottery class on Saturday.",
        "[Monday 8 May 2023] User: Nice! Did you make a bowl?"]
    hits = await memory.search_messages(DANA, "pottery bowl")
    assert {hit.text for hit in hits[:2]} == {TURN[1]["content"], TURN[2]["content"]}  # stored text unchanged
    assert set(hits[0].ranks) == {"messages", "message_semantic", "message_semantic:date-speaker"}
    assert hits[2].text == TURN[0]["content"]
    assert set(hits[2].ranks) == {"message_semantic", "message_semantic:date-speaker"}
    # only dana's chats with this agent: eve's message was never indexed (nobody kicked her
    # scope) and is not found through dana; another agent of dana's sees nothing
    assert "cracked" not in " ".join(embedded_inputs(model_server))
    assert await memory.search_messages(MemoryScope("acme", "billing", "dana"), "pottery bowl") == []
    await memory.index_messages(MemoryScope("acme", "support", "eve"))
    eve_hits = await memory.search_messages(MemoryScope("acme", "support", "eve"), "pottery bowl")
    assert [hit.text for hit in eve_hits] == ["My pottery bowl cracked"]
    assert await memory.search_messages(MemoryScope("acme", "support"), "pottery bowl") == []  # anonymous


@pytest.mark.parametrize(("context", "expected"), [
    ("date-speaker", "[Monday 8 May 2023] Assistant: I went to a pottery class on Saturday."),
    ("none", "I went to a pottery class on Saturday.")])
async def test_the_message_context_can_be_narrowed(sqlite_url: str, model_server: ScriptedModelServer,
                                                   context: str, expected: str) -> None:
    async with LongTermMemory.open(sqlite_url, options_for(model_server, message_contexts=(context,))) as memory:
        await append(memory, "dana", TURN)
        assert await memory.index_messages(DANA) == 3
    assert embedded_inputs(model_server)[1] == expected


async def test_a_message_without_text_is_not_embedded_and_not_pending(
        memory: LongTermMemory, model_server: ScriptedModelServer) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    await append(memory, "dana", [{"role": "user", "content": "Check my order"},
                                  {"role": "assistant", "content": None, "tool_calls": [call]},
                                  {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
                                  {"role": "assistant", "content": "It shipped."}])
    assert await memory.index_messages(DANA) == 6  # user, tool-call request (no vector), reply; two contexts
    assert embedded_inputs(model_server)[-3:] == ["[Monday 8 May 2023] User: Check my order\nAssistant: It shipped.",
                                                  "[Monday 8 May 2023] User: Check my order",
                                                  "[Monday 8 May 2023] Assistant: It shipped."]
    assert await memory.index_messages(DANA) == 0


def message_vectors(memory: LongTermMemory) -> int:
    from sqlalchemy import text

    with memory.engine.connect() as connection:
        return connection.execute(text("SELECT count(*) FROM xflow_message_embeddings")).scalar_one()


async def test_deleting_a_chat_or_erasing_its_user_deletes_its_message_vectors(memory: LongTermMemory) -> None:
    await append(memory, "dana", TURN)
    await memory.index_messages(DANA)
    chats = ChatMemory(memory.engine)
    for chat in await chats.list_chats(tenant="acme", user="dana"):
        await chats.delete_chat(chat.id, tenant="acme")
    assert message_vectors(memory) == 0
    await append(memory, "dana", TURN, session="s2")
    assert await memory.index_messages(DANA) == 6 and message_vectors(memory) == 6  # two contexts each
    await memory.erase_user("acme", "dana")
    assert message_vectors(memory) == 0


# ------------------------------------------------------------------ embedding modes


async def test_query_and_document_modes_are_never_mixed(database_url: str, model_server: ScriptedModelServer) -> None:
    async with LongTermMemory.open(database_url, options_for(model_server)) as symmetric:
        old = (await symmetric.write(DANA, "Billing address", "Invoices go to Lisbon.")).memory
    modes = EmbeddingModes.prefixes("query: ", "passage: ")
    model_server.reset()
    async with LongTermMemory.open(database_url, options_for(model_server, embedding_modes=modes)) as memory:
        new = (await memory.write(DANA, "Timezone", "Works from Lisbon.")).memory
        assert new.embedding_model == space_key(EMBEDDING_MODEL, modes) != old.embedding_model == EMBEDDING_MODEL
        hits = await memory.search(DANA, "lisbon")
        assert [hit.id for hit in hits if "semantic" in hit.ranks] == [new.id]  # the old vector is another space
        assert embedded_inputs(model_server) == ["passage: Timezone\nWorks from Lisbon.", "query: lisbon"]
        report = await memory.reindex("acme")
        assert (report.memories, report.space) == (1, space_key(EMBEDDING_MODEL, modes))
        assert {hit.id for hit in await memory.search(DANA, "lisbon") if "semantic" in hit.ranks} == {old.id, new.id}
        assert (await memory.get(DANA, old.id)).embedding_model == report.space
        assert (await memory.reindex("acme")).memories == 0  # nothing stale is left


async def test_input_type_modes_are_sent_to_the_provider(sqlite_url: str, model_server: ScriptedModelServer) -> None:
    options = options_for(model_server, embedding_modes=EmbeddingModes.named("input-type"))
    async with LongTermMemory.open(sqlite_url, options) as memory:
        await memory.write(DANA, "Timezone", "Works from Lisbon.")
        await memory.search(DANA, "lisbon")
    bodies = [request.body for request in embedding_requests(model_server)]
    assert [(body["input"], body["input_type"]) for body in bodies] == [
        (["Timezone\nWorks from Lisbon."], "passage"), (["lisbon"], "query")]


# ------------------------------------------------------------------ reranking


async def test_a_reranker_reorders_the_fused_candidates_and_a_failing_one_leaves_them(
        sqlite_url: str, model_server: ScriptedModelServer) -> None:
    notes = {"Lisbon office": "The office is in Lisbon.", "Invoices": "Invoices go to the Lisbon office by post.",
             "Porto": "A second office in Porto."}
    async with LongTermMemory.open(sqlite_url, options_for(model_server)) as plain:
        for title, content in notes.items():
            await plain.write(DANA, title, content)
        fused = await plain.search(DANA, "invoices by post lisbon")
    reranked_options = options_for(model_server, rerank_model="cohere/rerank-v3.5",
                                   rerank_api_base=model_server.api_base, rerank_api_key="k")
    async with LongTermMemory.open(sqlite_url, reranked_options) as memory:
        reranked = await memory.search(DANA, "invoices by post lisbon", limit=2)
        assert [hit.ranks["rerank"] for hit in reranked] == [1, 2]
        rerank_calls = [r for r in model_server.requests if r.path.endswith("/rerank")]
        assert rerank_calls[-1].body["documents"] == [hit.text for hit in fused]  # every fused candidate
        assert reranked[0].text == "Invoices go to the Lisbon office by post."
        model_server.fail_model("rerank-v3.5", status=503)
        fallback = await memory.search(DANA, "invoices by post lisbon")
        assert fallback == fused and all("rerank" not in hit.ranks for hit in fallback)


# ------------------------------------------------------------------ time-aware queries


def test_time_expressions_are_resolved_against_a_fixed_clock() -> None:
    now = TODAY  # Friday 6 March 2026
    cases = {"What did I buy two weeks ago?": "What did I buy two weeks ago (Friday 20 February 2026)?",
             "Where was I yesterday": "Where was I yesterday (Thursday 5 March 2026)",
             "plans for last May": "plans for last May (May 2025)",
             "trip in March": "trip in March (March 2026)",
             "since last Friday": "since last Friday (Friday 27 February 2026)",
             "what changed last month": "what changed last month (February 2026)",
             "3 years ago": "3 years ago (2023)",
             "in May 2024": "in May 2024"}
    for question, expected in cases.items():
        assert resolve_time(question, now).text == expected


@given(st.dates(min_value=date(1990, 1, 1), max_value=date(2090, 1, 1)), st.integers(0, 400))
def test_days_ago_always_names_the_day_that_many_days_back(now: date, days: int) -> None:
    resolved = resolve_time(f"{days} days ago", now)
    assert resolved.mentions == ((f"{days} days ago", day_label(now - timedelta(days=days))),)


async def test_a_search_embeds_the_question_with_its_dates_resolved(
        memory: LongTermMemory, model_server: ScriptedModelServer) -> None:
    await memory.search(DANA, "what did I order yesterday?")  # the memory's clock: TODAY
    await memory.search(DANA, "what did I order yesterday?", now=date(2023, 5, 9))  # the conversation's time
    assert embedded_inputs(model_server) == ["what did I order yesterday (Thursday 5 March 2026)?",
                                             "what did I order yesterday (Monday 8 May 2023)?"]


# ------------------------------------------------------------------ re-indexing from the command line


async def test_reindex_is_one_command(sqlite_url: str, model_server: ScriptedModelServer,
                                      capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    async with LongTermMemory.open(sqlite_url, options_for(model_server, embedding_model=None)) as memory:
        await memory.write(DANA, "Timezone", "Works from Lisbon.")
        await append(memory, "dana", TURN)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    import asyncio
    code = await asyncio.to_thread(main, ["memory", "reindex", "--db", sqlite_url, "--tenant", "acme",
                                          "--embedding-model", EMBEDDING_MODEL, "--embedding-mode", "e5",
                                          "--api-base", model_server.api_base, "--json"])
    out = capsys.readouterr().out
    assert code == 0 and '"memories": 1' in out and '"messages": 6' in out  # 3 messages, 2 contexts
    assert all(text.startswith("passage: ") for text in embedded_inputs(model_server))
    code = await asyncio.to_thread(main, ["memory", "reindex", "--db", sqlite_url, "--embedding-model", "m",
                                          "--embedding-mode", "nonsense"])
    assert code == 1 and "unknown embedding mode" in capsys.readouterr().err


def test_the_run_and_chat_commands_take_the_embedding_mode() -> None:
    import argparse

    from xflow_runtime.cli.run import UsageError, long_term_options

    options = long_term_options(argparse.Namespace(embedding_model="openai/e5", embedding_mode="e5"))["long_term"]
    assert options.embedding_modes == EmbeddingModes.prefixes("query: ", "passage: ")
    with pytest.raises(UsageError, match="unknown embedding mode"):
        long_term_options(argparse.Namespace(embedding_model="openai/e5", embedding_mode="e6"))
