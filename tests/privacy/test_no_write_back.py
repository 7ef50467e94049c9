"""Nothing in flight during an erasure writes the user back: a durable step running while its
instance is cancelled and erased, and the memory writes of an instance that started before the
erasure (its recorded erasure epoch no longer matches the tombstone). A user who comes back after
the erasure is stored again."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.privacy.conftest import ERASED, PHRASE, TENANT, Stores, agent_workflow
from tests.privacy.scan import traces
from xflow_runtime import erase_user
from xflow_runtime.errors import WorkflowFailed, XFlowError
from xflow_runtime.llm.client import LLMSettings
from xflow_runtime.memory.chat import ChatMemory, ChatScope
from xflow_runtime.memory.longterm import LongTermMemory, MemoryScope
from xflow_runtime.privacy.subject import SubjectErased
from xflow_runtime.runtime import Runtime
from xflow_runtime.settings import locate

SLOW_STEP = """
id: slow-step
specVersion: "0.8"
start: Work
functions:
  - {name: slow, type: custom, operation: slow}
states:
  - name: Work
    type: operation
    actions:
      - functionRef: {refName: slow, arguments: {said: "${ .said }"}}
    end: true
"""


@pytest.mark.slow
async def test_a_durable_step_in_flight_during_the_erasure_writes_nothing_back(stores: Stores, tmp_path: Path) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow(said: str) -> dict[str, str]:
        entered.set()
        release.wait(120)
        return {"echo": said}  # the step's result names the user's words

    workflow = tmp_path / "slow.yaml"
    workflow.write_text(SLOW_STEP)
    async with Runtime("durable", database_url=stores.url, functions={"slow": slow}) as runtime:
        handle = await runtime.start(runtime.load(workflow), {"said": PHRASE}, instance_id="in-flight",
                                     tenant=TENANT, user=ERASED)
        assert await asyncio.to_thread(entered.wait, 120)
        receipt = await erase_user(ERASED, tenant=TENANT, database_url=stores.url)
        release.set()  # the step completes after its instance was cancelled and erased
        with pytest.raises((WorkflowFailed, XFlowError)):
            await handle.result(timeout=120)
    assert receipt.cancelled_instances == ("in-flight",)
    assert receipt.store("durable").deleted["workflow_input"] == 1
    for url in stores.scan_urls():
        assert traces(url, [PHRASE, ERASED]) == {}
    again = await erase_user(ERASED, tenant=TENANT, database_url=stores.url)
    assert again.total == 0


@pytest.mark.slow
@pytest.mark.postgres
async def test_an_instance_whose_start_races_the_erasure_keeps_nothing(postgres_database_url: str,
                                                                       tmp_path: Path) -> None:
    """The start read the user's epoch, then waits to store the instance (a lock on DBOS's status
    table; its insert is seen waiting in ``pg_stat_activity``) while the erasure looks for the
    user's instances and finds none. Once stored, the instance is deleted and the start raises."""
    from sqlalchemy import create_engine, text

    from tests.support.postgres import insert_waits_for_a_lock
    from xflow_runtime.storage.database import open_database

    url = postgres_database_url
    open_database(locate(url).memory_url).dispose()  # a memory store: the user's epoch is kept there
    workflow = tmp_path / "slow.yaml"
    workflow.write_text(SLOW_STEP)
    sql = create_engine(url)

    def start_waits_for_the_lock() -> bool:
        return insert_waits_for_a_lock(sql, "dbos.workflow_status")
    try:
        async with Runtime("durable", database_url=url, functions={"slow": lambda said: {"echo": said}}) as runtime:
            plan = runtime.load(workflow)
            await (await runtime.start(plan, {"said": "hi"}, instance_id="other", tenant=TENANT,
                                       user="u-keep-2")).result(timeout=120)
            with sql.connect() as holder, holder.begin():  # inserts wait, reads do not
                holder.execute(text("LOCK TABLE dbos.workflow_status IN EXCLUSIVE MODE"))
                start = asyncio.ensure_future(runtime.start(plan, {"said": PHRASE}, instance_id="racing",
                                                            tenant=TENANT, user=ERASED))
                for _ in range(2400):
                    if start.done() or await asyncio.to_thread(start_waits_for_the_lock):
                        break
                    await asyncio.sleep(0.05)
                assert not start.done() and await asyncio.to_thread(start_waits_for_the_lock), "the start never waited"
                receipt = await erase_user(ERASED, tenant=TENANT, database_url=url)
            assert receipt.store("durable").total == 0 and receipt.erasure_epoch == 1  # it found nothing
            with pytest.raises(SubjectErased, match="erased while instance 'racing' started"):
                await start
        assert traces(url, [PHRASE, ERASED]) == {}
        assert (await erase_user(ERASED, tenant=TENANT, database_url=url)).total == 0
    finally:
        sql.dispose()


AGENT = agent_workflow("waiting-agent")


async def test_an_instance_started_before_the_erasure_cannot_write_the_user_back(scripted_model, tmp_path: Path) -> None:
    """In process (the erasure cannot cancel it): the next turn's chat write is refused."""
    scripted_model.set_script({"default": {"json": {"response": "Noted.", "done": False}}})
    url = f"sqlite:///{tmp_path / 'store' / 'xflow.sqlite'}"
    workflow = tmp_path / "agent.yaml"
    workflow.write_text(AGENT)
    replies: list[str] = []
    async with Runtime(database_url=url, llm=LLMSettings(api_base=scripted_model.api_base, api_key="k"),
                       on_history=lambda r: replies.append(r["reply"]) if r.get("event") == "agent_reply" else None
                       ) as runtime:
        handle = await runtime.start(runtime.load(workflow), {"message": "hello"}, instance_id="before",
                                     tenant=TENANT, user=ERASED)
        await _until(lambda: len(replies) == 1)
        await erase_user(ERASED, tenant=TENANT, database_url=url)
        await runtime.send_message("before", f"my code is {PHRASE}")
        with pytest.raises(WorkflowFailed, match="erased"):
            await handle.result(timeout=120)
    assert traces(locate(url).memory_url, [PHRASE, ERASED]) == {}


async def test_memory_writers_compare_the_epoch_they_started_under(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'xflow.sqlite'}"
    chat = ChatMemory.open(locate(url).memory_url)
    long_term = LongTermMemory(chat.engine)
    started = ChatScope(agent="concierge", user=ERASED, tenant=TENANT, mode="user", erasure_epoch=0)
    await chat.append_turn(started, [{"role": "user", "content": "hi"}], model="gpt-4o")
    receipt = await erase_user(ERASED, tenant=TENANT, database_url=url)
    assert receipt.erasure_epoch == 1 and receipt.store("memory").deleted["chat_messages"] == 1

    with pytest.raises(SubjectErased):
        await chat.append_turn(started, [{"role": "user", "content": PHRASE}], model="gpt-4o")
    with pytest.raises(SubjectErased):
        await long_term.write(MemoryScope(TENANT, "concierge", ERASED, erasure_epoch=0), "Code", PHRASE)
    assert traces(locate(url).memory_url, [PHRASE, ERASED]) == {}

    # the user comes back: an instance started now records epoch 1 and is stored
    back = ChatScope(agent="concierge", user=ERASED, tenant=TENANT, mode="user", erasure_epoch=1)
    await chat.append_turn(back, [{"role": "user", "content": "hello again"}], model="gpt-4o")
    assert (await long_term.write(MemoryScope(TENANT, "concierge", ERASED, erasure_epoch=1), "Back", "yes")).created
    assert [c.user for c in await chat.list_chats(tenant=TENANT)] == [ERASED]
    await long_term.aclose()
    chat.close()


async def _until(condition: Any, timeout_s: float = 120.0) -> None:
    for _ in range(int(timeout_s / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("timed out")


def test_an_erasure_that_cannot_reach_a_store_fails_loudly_and_a_retry_completes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from xflow_runtime.cli.main import main

    store = tmp_path / "xflow.sqlite"
    url = f"sqlite:///{store}"
    chat = ChatMemory.open(locate(url).memory_url)
    scope = ChatScope(agent="concierge", user=ERASED, tenant=TENANT, mode="user")
    chat.append_turn_sync(scope, [{"role": "user", "content": PHRASE}], model="gpt-4o")
    chat.close()
    store.write_bytes(b"this is not a database" * 100)  # the durable store cannot be read

    with pytest.raises(XFlowError, match="durable store"):
        asyncio.run(erase_user(ERASED, tenant=TENANT, database_url=url))
    assert main(["memory", "erase-user", ERASED, "--tenant", TENANT, "--db", url]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("xflow memory: cannot read the durable store") and "Traceback" not in err

    store.unlink()  # the store is reachable again (here: gone, so it holds nothing)
    retried = asyncio.run(erase_user(ERASED, tenant=TENANT, database_url=url))
    # the durable store is read first (its instances name the human tasks to erase), so the failed
    # try deleted nothing and the retry erases the memory rows
    assert retried.store("durable").present is False and retried.total == 2
    assert traces(locate(url).memory_url, [PHRASE, ERASED]) == {}
