"""``start.schedule`` on a fleet of 3 workers on a real PostgreSQL: one instance per tick, also when a
worker is SIGKILLed while it runs a tick; ticks missed while every worker was down are coalesced into
one instance for the latest missed tick (specs/deployment.md, "Schedules")."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest

from tests.fleet.support import (
    check_invocations, database_now, fleet_table, invocations, start_worker, start_workers,
)

pytestmark = pytest.mark.postgres

TICK = """
id: fleet-tick
version: '1.0'
specVersion: '0.8'
start: {stateName: Beat, schedule: R/PT2S}
functions:
  - name: record
    type: custom
    operation: python:tests.fleet.fleet_functions:record
states:
  - name: Beat
    type: operation
    actions:
      - functionRef:
          refName: record
          arguments: {instance: '${ $WORKFLOW.instanceId }', label: tick, n: 1, pause: 0.4}
    end: true
"""


def _tick_time(instance: str) -> dt.datetime:
    return dt.datetime.fromisoformat(instance.split("@", 1)[1])


def _wait(condition, timeout: float = 60) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.1)


def test_one_instance_per_tick_across_a_kill_and_an_outage(postgres_database_url, tmp_path: Path) -> None:
    url = postgres_database_url
    fleet_table(url)
    (tmp_path / "tick.yaml").write_text(TICK)
    args = ("--workflows", str(tmp_path))
    workers = start_workers(3, url, *args)
    try:
        # SIGKILL a worker while it runs a tick (its invocation has started and not ended)
        def victim_in_tick() -> bool:
            pids = {w.pid for w in workers}
            return any(row[2] in pids and row[4] is None for row in invocations(url))

        _wait(victim_in_tick)
        running = next(row[2] for row in invocations(url) if row[4] is None)
        victim = next(w for w in workers if w.pid == running)
        victim.kill()
        killed_at = database_now(url)
        survivors = [w for w in workers if w is not victim]
        # the killed tick finishes elsewhere, and ticks go on
        _wait(lambda: len({row[0] for row in invocations(url) if row[4] is not None}) >= 6)
        for worker in survivors:
            assert worker.terminate() == 0
        stopped_at = database_now(url)
        time.sleep(7)  # every worker down: three or four ticks are missed
        restarted_at = database_now(url)
        late = start_worker(url, *args)
        try:
            _wait(lambda: any(_tick_time(row[0]) >= restarted_at - dt.timedelta(seconds=2)
                              for row in invocations(url) if row[4] is not None))
            time.sleep(1)
        finally:
            late.terminate()
    finally:
        for worker in workers:
            if worker.process.poll() is None:
                worker.terminate()
    rows = invocations(url)
    check_invocations(rows, victim.pid, killed_at)
    ticks = sorted({_tick_time(row[0]) for row in rows})
    finished = {row[0] for row in rows if row[4] is not None}
    assert len(finished) == len({row[0] for row in rows}), "every tick that started finished"
    # before the outage: one instance for every tick (2 s apart), the killed one included
    before = [t for t in ticks if t <= stopped_at]
    assert len(before) >= 6
    assert all((b - a).total_seconds() == 2 for a, b in zip(before, before[1:])), before
    # the outage: of the ticks missed while every worker was down, at most one ran (the latest,
    # caught up by the restarted worker), and from then on one instance per tick again
    after = [t for t in ticks if t > stopped_at]
    assert len([t for t in after if t <= restarted_at]) <= 1, (stopped_at, restarted_at, after)
    assert after and all((b - a).total_seconds() == 2 for a, b in zip(after, after[1:])), after
