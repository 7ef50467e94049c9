"""The DBOS internals the reaper relies on, pinned against the installed DBOS (``dbos>=3.4,<3.5``):
``DBOS._recover_pending_workflows`` (through ``engine/dbos_adapter.py``) re-enqueues only PENDING
instances of the named executors, keeps their queue and recovery attempts, and is a no-op once a
live worker has claimed the instance again. If this fails after raising the pin, the reaper is unsafe.

Also pinned: DBOS retries a system-database call whose pooled connection died, which is what lets
the durable engine run DBOS's pool without a ping before every checkout (``engine/durable/engine.py``).
If that test fails, put ``pool_pre_ping`` back."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import create_engine, text

from xflow_runtime.engine.dbos_adapter import recover_executors
from xflow_runtime.engine.fleet import INSTANCE_QUEUE
from xflow_runtime.engine.fleet_options import FleetOptions
from xflow_runtime.runtime import Runtime

pytestmark = pytest.mark.postgres

WORKFLOW = """
id: contract
version: '1.0'
specVersion: '0.8'
start: Done
states:
  - name: Done
    type: inject
    data: {}
    end: true
"""


def _rows(url: str) -> dict[str, tuple[str, str | None, str | None, int]]:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(text(
                "SELECT workflow_uuid, status, executor_id, queue_name, recovery_attempts FROM dbos.workflow_status"))
            return {row[0]: (row[1], row[2], row[3], row[4]) for row in rows}
    finally:
        engine.dispose()


def _claim(url: str, instance_id: str, executor_id: str) -> None:
    """What a worker's dequeue does to the row (status PENDING under its executor id)."""
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text("UPDATE dbos.workflow_status SET status = 'PENDING', executor_id = :e, "
                                    "recovery_attempts = 3 WHERE workflow_uuid = :id"), {"e": executor_id, "id": instance_id})
    finally:
        engine.dispose()


async def test_recovery_re_enqueues_only_the_dead_executor_s_pending_instances(postgres_database_url, tmp_path) -> None:
    url = postgres_database_url
    (tmp_path / "contract.yaml").write_text(WORKFLOW)
    # a front end: it enqueues and runs nothing, so the rows stay where this test puts them
    async with Runtime("durable", database_url=url, fleet=FleetOptions(run_instances=False)) as runtime:
        plan = runtime.load(tmp_path / "contract.yaml")
        for instance_id in ("dead-one", "other-one"):
            await runtime.start(plan, {}, instance_id=instance_id)
        _claim(url, "dead-one", "xw-dead")
        _claim(url, "other-one", "xw-other")
        recover_executors(["xw-dead"])
        rows = _rows(url)
        assert rows["dead-one"][0] == "ENQUEUED" and rows["dead-one"][2] == INSTANCE_QUEUE
        assert rows["dead-one"][3] == 3, "recovery attempts are kept (dead-lettering still works)"
        assert rows["other-one"][:2] == ("PENDING", "xw-other"), "another executor's instance is untouched"
        # a live worker claimed it again: a late or repeated sweep for the dead executor is a no-op
        _claim(url, "dead-one", "xw-live")
        recover_executors(["xw-dead"])
        assert _rows(url)["dead-one"][:2] == ("PENDING", "xw-live")


async def test_a_worker_s_own_hand_back_touches_only_its_own_pending_instance(postgres_database_url, tmp_path) -> None:
    """``requeue_if_still_mine`` (DBOS's ``_sys_db.reenqueue_for_recovery``) re-enqueues one id only
    while it is PENDING under the given executor; ``running_here`` (DBOS's in-process set of
    running workflows) holds none of a front end's instances."""
    from xflow_runtime.engine.dbos_adapter import requeue_if_still_mine, running_here

    url = postgres_database_url
    (tmp_path / "contract.yaml").write_text(WORKFLOW)
    async with Runtime("durable", database_url=url, fleet=FleetOptions(run_instances=False)) as runtime:
        plan = runtime.load(tmp_path / "contract.yaml")
        for instance_id in ("mine", "also-mine", "theirs"):
            await runtime.start(plan, {}, instance_id=instance_id)
        _claim(url, "mine", "xw-me")
        _claim(url, "also-mine", "xw-me")
        _claim(url, "theirs", "xw-them")
        assert not running_here() & {"mine", "also-mine", "theirs"}
        requeue_if_still_mine(["mine", "theirs"], "xw-me")
        rows = _rows(url)
        assert rows["mine"][0] == "ENQUEUED" and rows["mine"][2] == INSTANCE_QUEUE and rows["mine"][3] == 3
        assert rows["also-mine"][:2] == ("PENDING", "xw-me"), "only the ids named"
        assert rows["theirs"][:2] == ("PENDING", "xw-them"), "another executor's instance is untouched"


def _terminate_dbos_sessions(url: str) -> int:
    """End every DBOS pool connection to this database (a server restart, as the pool sees it)."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return len(connection.execute(text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                "AND application_name = 'dbos_transact' AND pid <> pg_backend_pid()")).all())
    finally:
        engine.dispose()


async def test_dbos_retries_a_call_whose_pooled_connection_died(postgres_database_url, tmp_path) -> None:
    """No pre-ping: the pool hands out connections the server has ended; the first statement on
    each fails, DBOS retries it on a fresh connection, and the instance runs once, correctly."""
    url = postgres_database_url
    (tmp_path / "contract.yaml").write_text(WORKFLOW)
    async with Runtime("durable", database_url=url) as runtime:
        plan = runtime.load(tmp_path / "contract.yaml")
        assert await (await runtime.start(plan, {"n": 1}, instance_id="before")).result() == {"n": 1}
        assert _terminate_dbos_sessions(url) > 0
        after = await runtime.start(plan, {"n": 2}, instance_id="after")
        assert await asyncio.wait_for(after.result(), 60) == {"n": 2}
        assert (await runtime.status_row("after") or {}).get("status") == "SUCCESS"
