"""A burst of starts far above the fleet's concurrency (specs/deployment.md §6, "A burst of
starts"): 2,000 instances enqueued at once by one front end, 2 workers with ``--concurrency 50``.
The front end's enqueues wait in DBOS's bounded executor (unbounded, the same burst made 1,082
threads in it); the queue holds what the workers cannot run yet: each worker's threads stay within
DBOS's executor + one thread per running function call + its fixed threads, its connections within
its pools, its memory does not grow with the backlog, and every instance finishes with its output."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fleet.support import start_workers
from xflow_runtime.engine.durable.engine import EXECUTOR_THREADS
from xflow_runtime.engine.fleet_options import FleetOptions
from xflow_runtime.runtime import Runtime

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

COUNT = 2000
CONCURRENCY = 50
POOL = 10  # $XFLOW_DBOS_POOL_SIZE in a fleet

ONE_STEP = """
id: burst
version: '1.0'
specVersion: '0.8'
start: Work
functions:
  - name: record
    type: custom
    operation: python:tests.fleet.fleet_functions:record
states:
  - name: Work
    type: operation
    actions:
      - functionRef:
          refName: record
          arguments: {instance: '${ $WORKFLOW.instanceId }', label: work, n: '${ .n }', pause: 0.05}
        actionDataFilter: {toStateData: '${ .work }'}
    end: true
"""


def _proc(pid: int) -> dict[str, int]:
    """Threads, resident and peak resident memory (KiB) and open sockets of a process."""
    fields: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("Threads", "VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0])
    sockets = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            sockets += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    fields["sockets"] = sockets
    return fields


class Sampler:
    """Samples the workers (and the database's connection count) every 0.1 s from a thread."""

    def __init__(self, url: str, pids: list[int]) -> None:
        self.url = url.replace("postgresql+psycopg://", "postgresql://")
        self.pids = pids
        self.peak: dict[int, dict[str, int]] = {pid: {} for pid in pids}
        self.connections = 0
        self.front_threads = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as connection:
            while not self._stop.wait(0.1):
                for pid in self.pids:
                    for key, value in _proc(pid).items():
                        self.peak[pid][key] = max(self.peak[pid].get(key, 0), value)
                count = connection.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                                           ).fetchone()
                self.connections = max(self.connections, count[0] if count else 0)
                self.front_threads = max(self.front_threads, threading.active_count())


def _finished(url: str) -> int:
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as connection:
        row = connection.execute("SELECT count(*) FROM dbos.workflow_status WHERE status = 'SUCCESS' "
                                 "AND workflow_uuid LIKE 'burst-%'").fetchone()
        return row[0] if row else 0


async def test_a_burst_of_starts_above_the_fleet_s_concurrency_stays_bounded_and_finishes(
        postgres_database_url, tmp_path: Path) -> None:
    url = postgres_database_url
    (tmp_path / "burst.yaml").write_text(ONE_STEP)
    # no invocation log: 2,000 × 2 connections of the test's recorder would be the load measured
    workers = start_workers(2, url, "--concurrency", str(CONCURRENCY), env={"FLEET_TEST_DB": ""})
    try:
        idle = {w.pid: _proc(w.pid) for w in workers}
        async with Runtime("durable", database_url=url, fleet=FleetOptions(run_instances=False)) as runtime:
            plan = runtime.load(tmp_path / "burst.yaml")
            ids = [f"burst-{k}" for k in range(COUNT)]
            front_idle = threading.active_count()
            with Sampler(url, [w.pid for w in workers]) as sampler:
                started = time.monotonic()
                await asyncio.gather(*(runtime.start(plan, {"n": k}, instance_id=i) for k, i in enumerate(ids)))
                enqueued = time.monotonic() - started
                for _ in range(int(600 / 0.5)):
                    if await asyncio.to_thread(_finished, url) == COUNT:
                        break
                    await asyncio.sleep(0.5)
                elapsed = time.monotonic() - started
            results = await asyncio.wait_for(asyncio.gather(*(runtime.instance(i).result() for i in ids)), 120)
        alive = [w.process.poll() is None for w in workers]
    finally:
        for worker in workers:
            if worker.process.poll() is None:
                worker.terminate()
    assert results == [{"n": k, "work": {"label": "work", "square": k * k}} for k in range(COUNT)]
    assert all(alive)
    print(f"\n{COUNT} starts, 2 workers × --concurrency {CONCURRENCY}: enqueued in {enqueued:.1f} s, all finished "
          f"in {elapsed:.1f} s (load {os.getloadavg()[0]:.1f}); database connections at most {sampler.connections}; "
          f"front end threads {front_idle} idle → {sampler.front_threads} peak")
    # the front end's 2,000 enqueues wait in DBOS's bounded executor (unbounded: 1,082 threads)
    assert sampler.front_threads <= front_idle + 1 + EXECUTOR_THREADS, (front_idle, sampler.front_threads)
    for worker in workers:
        peak, base = sampler.peak[worker.pid], idle[worker.pid]
        print(f"worker {worker.pid}: threads {base['Threads']} idle → {peak['Threads']} peak; sockets "
              f"{base['sockets']} → {peak['sockets']}; RSS {base['VmRSS'] // 1024} MiB idle → "
              f"{peak['VmHWM'] // 1024} MiB peak")
        # DBOS's executor + a thread per function call running (at most the concurrency) + fixed ones
        assert peak["Threads"] <= EXECUTOR_THREADS + CONCURRENCY + base["Threads"], (peak, base)
        # DBOS's pool + its LISTEN + the fleet's pool (heartbeat, sweeps) and what it had idle
        assert peak["sockets"] <= base["sockets"] + POOL + 4, (peak, base)
        # the backlog waits in PostgreSQL, not in the worker: memory follows the concurrency
        assert peak["VmHWM"] - base["VmRSS"] < 160 * 1024, (peak, base)
