"""The task inbox through the Python API of a durable runtime (``runtime.tasks``): completing a
task is one write-then-wake operation whose DBOS records are gone once it finished (they hold the
form data); a refusal wakes nobody and leaves the task as it was (specs/states-human.md §2, §4)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from xflow_runtime import Runtime
from xflow_runtime.usertask.rules import Actor
from xflow_runtime.usertask.store import TaskError

ROOT = Path(__file__).resolve().parents[2]
ANN = Actor("default", "ann", frozenset({"managers"}))
ZED = Actor("default", "zed", frozenset({"sales"}))

pytestmark = pytest.mark.slow


async def test_completing_through_the_python_api_wakes_the_instance_and_keeps_no_operation_record(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'xflow.sqlite'}"
    async with Runtime("durable", database_url=url, executor_id="tasks-python") as runtime:
        handle = await runtime.start(runtime.load(ROOT / "workflows" / "expense-approval.yaml"),
                                     {"amount": 12, "requester": "bo"})
        tasks: list = []
        for _ in range(500):
            tasks = await runtime.tasks.list(ANN)
            if tasks:
                break
            await asyncio.sleep(0.02)
        (task,) = tasks
        with pytest.raises(TaskError) as refused:
            await runtime.tasks.complete(task.id, ZED, {"approved": True})
        assert refused.value.kind == "not-found"
        with pytest.raises(TaskError) as invalid:
            await runtime.tasks.complete(task.id, ANN, {"approved": "yes"})
        assert invalid.value.kind == "invalid" and invalid.value.errors[0]["pointer"] == "#/data/approved"
        assert (await runtime.tasks.get(task.id, ANN)).status == "open"
        done = await runtime.tasks.complete(task.id, ANN, {"approved": True, "comment": "ok"})
        assert done.status == "completed" and done.completed_by == "ann"
        assert (await handle.result(timeout=120))["status"] == "approved"
    engine = create_engine(url)
    with engine.connect() as connection:
        names = connection.execute(text("SELECT name FROM workflow_status")).scalars().all()
    assert names.count("xflow.instance") == 1 and "xflow.write-then-wake" not in names
    engine.dispose()
