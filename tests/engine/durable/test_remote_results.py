"""Waiting for the results of instances this process does not run (specs/durability.md, "Results"):
every caller waits on one shared status poll (``engine/durable/completions.py``), not a poll each.

A front end (``FleetOptions(run_instances=False)``) enqueues and runs nothing, so its instances stay
ENQUEUED while the test watches what the waiting costs PostgreSQL, then ends them itself."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from xflow_runtime.engine.durable import DurableEngineError
from xflow_runtime.engine.fleet_options import FleetOptions
from xflow_runtime.runtime import InstanceHandle, Runtime, UnknownInstance

pytestmark = pytest.mark.postgres

WORKFLOW = """
id: waits
version: '1.0'
specVersion: '0.8'
start: Done
states:
  - name: Done
    type: inject
    data: {}
    end: true
"""

WAITERS = 40


@asynccontextmanager
async def _front_end(url: str, folder: Path) -> AsyncIterator[tuple[Runtime, Any]]:
    """A runtime that enqueues and runs nothing, and the plan of :data:`WORKFLOW`."""
    (folder / "waits.yaml").write_text(WORKFLOW)
    async with Runtime("durable", database_url=url, fleet=FleetOptions(run_instances=False)) as runtime:
        yield runtime, runtime.load(folder / "waits.yaml")


def _transactions(url: str) -> int:
    """Transactions of this database so far (every statement of DBOS's pool is one or part of one)."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT pg_stat_clear_snapshot()"))
            return int(connection.execute(text(
                "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"
            )).scalar_one())
    finally:
        engine.dispose()


async def test_many_waiting_callers_share_one_status_poll(postgres_database_url: str, tmp_path: Path) -> None:
    url = postgres_database_url
    async with _front_end(url, tmp_path) as (runtime, plan):
        handles = [await runtime.start(plan, {}, instance_id=f"wait-{k}") for k in range(WAITERS)]
        waiting = [asyncio.ensure_future(handle.result()) for handle in handles]
        await asyncio.sleep(1.5)  # every caller registered; the starts' statistics mostly reported
        before = _transactions(url)
        await asyncio.sleep(2.0)
        during = _transactions(url) - before
        # one poll per interval (20 ms, backing off to 100 ms) for all 40, beside DBOS's own
        # background reads: ~15 a second here. A poll per caller was 40 × 50 a second (1,507
        # measured in one second). The margin is for statistics an idle backend reports late
        # (PostgreSQL flushes them up to 10 s after the transactions: the 40 starts' may land here).
        assert during < 500, during
        assert not any(task.done() for task in waiting)
        for handle in handles:  # the end each caller sees: DBOS's own outcome for a cancelled one
            await runtime.cancel(handle.instance_id)
        outcomes = await asyncio.wait_for(asyncio.gather(*waiting, return_exceptions=True), 30)
        assert all(isinstance(outcome, DurableEngineError) and "cancel" in str(outcome).lower()
                   for outcome in outcomes), outcomes


async def test_a_result_of_an_unknown_instance_is_refused(postgres_database_url: str, tmp_path: Path) -> None:
    async with _front_end(postgres_database_url, tmp_path) as (runtime, plan):
        known = await runtime.start(plan, {}, instance_id="known")
        unknown = InstanceHandle(runtime, "no-such-instance")
        # the unknown id and a waiting known one are checked in the same first poll
        waiting = asyncio.ensure_future(known.result())
        with pytest.raises(UnknownInstance, match="no-such-instance"):
            await asyncio.wait_for(unknown.result(), 30)
        assert not waiting.done()
        waiting.cancel()


async def test_a_caller_that_gives_up_leaves_the_others_waiting(postgres_database_url: str, tmp_path: Path) -> None:
    async with _front_end(postgres_database_url, tmp_path) as (runtime, plan):
        handle = await runtime.start(plan, {}, instance_id="shared")
        patient = asyncio.ensure_future(handle.result())
        with pytest.raises(asyncio.TimeoutError):
            await handle.result(timeout=0.2)
        await runtime.cancel("shared")
        with pytest.raises(DurableEngineError, match="(?i)cancel"):
            await asyncio.wait_for(patient, 30)
