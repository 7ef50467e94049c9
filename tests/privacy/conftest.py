"""A user's durable agent runs with chat memory (user scope), long-term memory and fact
extraction — one instance finished, one waiting for the next message with an event queued for it —
and another user's run beside them, on SQLite or a real PostgreSQL. Every LLM call goes through
litellm to the scripted model server."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from xflow_runtime.llm.client import LLMSettings
from xflow_runtime.memory.longterm import MemoryScope
from xflow_runtime.runtime import Runtime
from xflow_runtime.settings import locate

PHRASE = "quokkazanzibar"      # what the erased user said: must leave no trace
OTHER_PHRASE = "marmotcobalt"  # what the other user said: must stay
ERASED, KEPT, TENANT = "u-erase-1", "u-keep-2", "acme"



def agent_workflow(workflow_id: str, *settings: str) -> str:
    """One ``aiagent`` state with chat memory in user scope (plus ``settings`` lines) that
    finishes when the reply says ``done: true`` and otherwise waits for the next message."""
    extra = "".join(f"    {line}\n" for line in settings)
    return (f"id: {workflow_id}\nspecVersion: '0.8'\nstart: chat\nstates:\n  - name: chat\n    type: aiagent\n"
            "    agentName: concierge\n    aiModel: gpt-4o\n    userMessage: '${ .message }'\n"
            f"    memory: {{scope: user, maxMessages: 20}}\n{extra}"
            "    output: {schema: {type: object, properties: {response: {type: string}, done: {type: boolean}}, "
            "required: [response]}}\n    agentOutcomes:\n"
            "      - {condition: '${ $agentOutcome.returnValues.done == true }', finish: true}\n"
            "      - {finish: false}\n    end: true\n")


WORKFLOW = agent_workflow("privacy-chat", "longTermMemory: {enabled: true}",
                          "factExtraction: {enabled: true, model: extractor, minUserTurns: 1}")

REMEMBER = {"name": "memory_write", "arguments": {"title": "Locker", "content": f"Locker code {PHRASE}"}}
SCRIPT = {
    "rules": [
        {"when": {"model": "extractor", "last_user_contains": PHRASE},
         "reply": {"json": [{"content": f"The user's locker code is {PHRASE}", "category": "fact", "importance": 9}]}},
        {"when": {"model": "extractor"},
         "reply": {"json": [{"content": f"The user likes {OTHER_PHRASE}", "category": "preference", "importance": 5}]}},
        {"when": {"last_user_contains": "remember", "tool_messages": 0}, "reply": {"tool_calls": [REMEMBER]}},
        {"when": {"last_user_contains": "hold on"}, "reply": {"json": {"response": f"Waiting, {PHRASE}", "done": False}}},
        {"when": {"last_user_contains": PHRASE}, "reply": {"json": {"response": f"Noted {PHRASE}", "done": True}}},
    ],
    "default": {"json": {"response": f"Noted {OTHER_PHRASE}", "done": True}},
}


@dataclass
class Stores:
    """The setting a user gives ``xflow run`` (``url``) and where it put things."""

    url: str
    runtime: Runtime | None = None
    replies: list[str] = field(default_factory=list)

    @property
    def durable_url(self) -> str:
        return locate(self.url).durable_url

    @property
    def memory_url(self) -> str:
        return locate(self.url).memory_url

    def scan_urls(self) -> list[str]:
        """Every database to scan (one on PostgreSQL, two files on SQLite), as SQLAlchemy URLs."""
        return sorted({self.durable_url, self.memory_url})


async def eventually(condition: Callable[[], Awaitable[bool]], timeout_s: float = 180.0) -> None:
    for _ in range(int(timeout_s / 0.05)):
        if await condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the runs did not reach the expected state")


async def seed(stores: Stores, workflow: Path, llm: LLMSettings) -> Runtime:
    """Start the runs and wait until every turn is stored and every extraction done. Returns the
    open runtime (the waiting instance lives in it)."""
    runtime = Runtime("durable", database_url=stores.url, llm=llm,
                      on_history=lambda r: stores.replies.append(r["reply"]) if r.get("event") == "agent_reply" else None)
    stores.runtime = runtime
    plan = runtime.load(workflow)
    finished = await runtime.start(plan, {"message": f"please remember {PHRASE}"}, instance_id="erase-a",
                                   tenant=TENANT, user=ERASED)
    await finished.result(timeout=180)
    await runtime.start(plan, {"message": f"hold on, {PHRASE}"}, instance_id="erase-b", tenant=TENANT, user=ERASED)
    kept = await runtime.start(plan, {"message": f"I like {OTHER_PHRASE}"}, instance_id="keep-a",
                               tenant=TENANT, user=KEPT)
    await kept.result(timeout=180)
    await eventually(lambda: _has_reply(stores, f"Waiting, {PHRASE}"))
    await runtime.send_event({"type": "note", "source": "/test", "data": {"text": PHRASE}}, instance_id="erase-b")
    memory = await runtime._services.long_term_memory.memory()

    async def extracted() -> bool:
        statuses = [job["status"] for user in (ERASED, KEPT)
                    for job in await memory.extraction_jobs(MemoryScope(TENANT, "concierge", user))]
        return statuses == ["done"] * 3
    await eventually(extracted)
    await settled(stores.durable_url, "erase-b")
    return runtime


async def settled(durable_url: str, instance_id: str, timeout_s: float = 180.0) -> None:
    """Wait until a waiting instance is blocked in its receive, so counts taken now are what an
    erasure will find: its last recorded operations are the ``xflow.receive`` marker (written with
    the pending history) and, two numbers on, the timeout ``DBOS.recv`` records right before it
    blocks (the number between is the receive itself, recorded only when a message comes;
    ``engine/durable/port.py`` ``wait_event``). A state, not a quiet period: a loaded machine
    can hold the instance's last writes back for longer than any quiet period."""
    from sqlalchemy import create_engine, text

    from xflow_runtime.engine.durable.replay import DBOS_SLEEP, RECEIVE, parse_call_name

    engine = create_engine(durable_url)
    table = "operation_outputs" if engine.dialect.name == "sqlite" else "dbos.operation_outputs"

    def blocked() -> bool:
        with engine.connect() as connection:
            steps: dict[int, str] = {row.function_id: row.function_name for row in connection.execute(text(
                f"SELECT function_id, function_name FROM {table} WHERE workflow_uuid = :id"), {"id": instance_id})}
        last = max(steps, default=0)
        marker = parse_call_name(steps.get(last - 2, ""))
        return (steps.get(last) == DBOS_SLEEP and last - 1 not in steps
                and marker is not None and marker[0].startswith(RECEIVE))
    try:
        await eventually(lambda: asyncio.to_thread(blocked), timeout_s)
    finally:
        engine.dispose()


async def _has_reply(stores: Stores, reply: str) -> bool:
    return reply in stores.replies


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Stores:
    if request.param == "sqlite":
        return Stores(f"sqlite:///{tmp_path / 'store' / 'xflow.sqlite'}")
    return Stores(request.getfixturevalue("postgres_database_url"))


@pytest.fixture
def workflow(tmp_path: Path) -> Path:
    path = tmp_path / "privacy-chat.yaml"
    path.write_text(WORKFLOW)
    return path


@pytest.fixture
def llm(scripted_model: Any) -> LLMSettings:
    scripted_model.set_script(SCRIPT)
    return LLMSettings(api_base=scripted_model.api_base, api_key="scripted")
