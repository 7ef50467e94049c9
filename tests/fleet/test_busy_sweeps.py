"""A worker whose sweeps wait on the database keeps its lease: the heartbeat runs in a thread of
its own (specs/deployment.md §3). Found starting 10,000 conversations on one worker: DBOS's pool
was held by the instances, the sweep of the worker's own instances waited for it, the heartbeat
waited behind the sweep, and the watchdog fenced a live worker."""

from __future__ import annotations

import time

import pytest

from tests.fleet.support import start_workers

pytestmark = pytest.mark.postgres

DEAD_AFTER = 3.0


def test_a_worker_whose_sweeps_wait_keeps_renewing_its_lease(postgres_database_url) -> None:
    import psycopg

    url = postgres_database_url.replace("postgresql+psycopg://", "postgresql://")
    (worker,) = start_workers(1, postgres_database_url, dead_after=DEAD_AFTER)
    try:
        with psycopg.connect(url) as blocker:
            # the sweeps read DBOS's status table; an exclusive lock makes them wait as long as we hold it
            blocker.execute("LOCK TABLE dbos.workflow_status IN ACCESS EXCLUSIVE MODE")
            time.sleep(3 * DEAD_AFTER)
            alive = worker.process.poll() is None
            with psycopg.connect(url, autocommit=True) as reader:
                age = reader.execute("SELECT extract(epoch FROM now() - heartbeat_at), state FROM xflow_workers "
                                     "WHERE executor_id = %s", (worker.executor_id,)).fetchone()
            blocker.rollback()
        assert alive, f"the worker fenced itself (exit {worker.process.returncode})"
        assert age is not None and age[1] == "running" and age[0] < DEAD_AFTER, age
    finally:
        worker.terminate()
