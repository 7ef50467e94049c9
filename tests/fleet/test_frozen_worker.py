"""A worker frozen (SIGSTOP) for longer than the death timeout, then thawed: the fleet has taken its
instances over meanwhile; thawed, it starts no new step and exits by itself (its row says dead),
and every instance finishes once with the right output (specs/deployment.md §3, "Never two
workers at once"). Frozen inside a transaction of its own (a freeze point), the locks it holds do
not stop the takeover ("A frozen worker holding a lock")."""

from __future__ import annotations

import asyncio
import signal
from typing import Any
from pathlib import Path

import pytest

from tests.fleet.support import (
    database_now, fleet_table, invocations, start_worker, start_workers, stopped, worker_state,
)
from xflow_runtime.engine.fleet import FENCED_EXIT
from xflow_runtime.engine.fleet_options import FleetOptions
from xflow_runtime.runtime import Runtime

pytestmark = pytest.mark.postgres

STEPS = "abcdef"


def chain(gate: Path | None = None) -> str:
    """The chain of steps; with ``gate``, its first step waits for that file to exist."""
    return """
id: chain
version: '1.0'
specVersion: '0.8'
start: a
functions:
  - name: record
    type: custom
    operation: python:tests.fleet.fleet_functions:record
states:
""" + "".join(f"""  - name: {label}
    type: operation
    actions:
      - functionRef:
          refName: record
          arguments: {{instance: '${{ $WORKFLOW.instanceId }}', label: {label}, n: 1, pause: 0.2{_until(gate) if label == STEPS[0] else ''}}}
        actionDataFilter: {{toStateData: '${{ .{label} }}'}}
    {'end: true' if label == STEPS[-1] else f'transition: {STEPS[STEPS.index(label) + 1]}'}
""" for label in STEPS)


def _until(gate: Path | None) -> str:
    return "" if gate is None else f", until: '{gate}'"


CHAIN = chain()
DEAD_AFTER = 5.0


async def test_a_thawed_worker_starts_nothing_and_exits(postgres_database_url, tmp_path: Path) -> None:
    url = postgres_database_url
    fleet_table(url)
    (tmp_path / "chain.yaml").write_text(CHAIN)
    workers = start_workers(2, url, "--concurrency", "10", dead_after=DEAD_AFTER)
    try:
        async with Runtime("durable", database_url=url, fleet=FleetOptions(run_instances=False)) as runtime:
            plan = runtime.load(tmp_path / "chain.yaml")
            ids = [f"chain-{k}" for k in range(16)]
            for instance_id in ids:
                await runtime.start(plan, {}, instance_id=instance_id)
            pids = {w.pid: w for w in workers}
            while True:  # freeze a worker in the middle of a step
                rows = await asyncio.to_thread(invocations, url)
                busy = [row[2] for row in rows if row[4] is None and row[2] in pids]
                if busy:
                    break
                await asyncio.sleep(0.02)
            victim = pids[busy[0]]
            victim.process.send_signal(signal.SIGSTOP)
            # statements the victim sent just before the signal still run on the server: let them
            # land first (they started before the freeze; the assertion below is about new starts)
            await asyncio.sleep(1.0)
            frozen_at = await asyncio.to_thread(database_now, url)
            await asyncio.sleep(DEAD_AFTER + 6)  # declared dead, its instances taken over
            results = await _thaw(victim, runtime, ids)
    finally:
        _stop(workers)
    await _check_after_thaw(url, results, victim.pid, frozen_at)


async def _thaw(victim: Any, runtime: Runtime, ids: list[str]) -> list[Any]:
    """Thaw the victim, which must exit fenced by itself; then every instance's result."""
    victim.process.send_signal(signal.SIGCONT)
    assert await asyncio.to_thread(victim.process.wait, 30) == FENCED_EXIT
    return await asyncio.wait_for(asyncio.gather(*(runtime.instance(i).result() for i in ids)), 120)


def _stop(workers: list[Any]) -> None:
    for worker in workers:
        if worker.process.poll() is None:
            worker.process.send_signal(signal.SIGCONT)
            worker.terminate()


async def _check_after_thaw(url: str, results: list[Any], victim_pid: int, frozen_at: Any) -> list[Any]:
    """Every instance's output is right and only steps the victim was inside ran twice; the rows."""
    assert all(result[label] == {"label": label, "square": 1} for result in results for label in STEPS)
    rows = await asyncio.to_thread(invocations, url)
    _check_frozen_reruns(rows, victim_pid, frozen_at)
    return rows


def _check_frozen_reruns(rows: list[Any], victim_pid: int, frozen_at: Any) -> None:
    """A step ran twice only if the victim was inside it when frozen (once there, once on the new
    owner; its statement may reach the database before or after the new owner's): for each
    instance, only the last step the victim started — one it may have finished without its
    checkpoint committing. Not "at most its concurrency": DBOS counts a claimed instance against
    the worker's concurrency only once it runs on the event loop, so a cold worker may hold more
    (specs/deployment.md §3). Thawed, it started no step of its own: what it sent after the freeze
    belongs to steps it had let through its lease check before it (their first statement not yet
    sent), which may still run, even to their end, before the fence lands (at-least-once for the
    steps in flight); each of them ran on the new owner too."""
    runs: dict[tuple[str, str], list[int]] = {}
    last_on_victim: dict[str, tuple[Any, str]] = {}
    for instance, label, pid, started, _ in rows:
        runs.setdefault((instance, label), []).append(pid)
        if pid == victim_pid and (instance not in last_on_victim or started > last_on_victim[instance][0]):
            last_on_victim[instance] = (started, label)
    again = {key: pids for key, pids in runs.items() if len(pids) > 1}
    assert all(victim_pid in pids and len(pids) == 2 for pids in again.values()), again
    in_flight = {(instance, label) for instance, (_, label) in last_on_victim.items()}
    assert set(again) <= in_flight, ([row for row in rows if (row[0], row[1]) in set(again) - in_flight][:30],
                                     frozen_at)
    late = {(row[0], row[1]) for row in rows if row[2] == victim_pid and row[3] > frozen_at}
    assert late <= set(again), late - set(again)

def _holds_lock(url: str, point: str, executor_id: str) -> bool:
    """Whether the lock the frozen worker took at ``point`` is still held (tried without waiting)."""
    import psycopg

    from xflow_runtime.engine.fleet import _REAPER_LOCK

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as connection:
        if point == "fleet.sweep.locked":
            return not connection.execute("SELECT pg_try_advisory_xact_lock(%s)", (_REAPER_LOCK,)).fetchone()[0]
        try:
            connection.execute("SELECT 1 FROM xflow_workers WHERE executor_id = %s FOR UPDATE NOWAIT", (executor_id,))
        except psycopg.errors.LockNotAvailable:
            return True
        return False


@pytest.mark.parametrize("point", ["fleet.heartbeat.locked", "fleet.sweep.locked"])
async def test_a_worker_frozen_holding_a_fleet_lock_is_declared_dead_and_fenced(
        postgres_database_url, tmp_path: Path, point: str) -> None:
    """Frozen (SIGSTOP) inside a transaction of its own: in its heartbeat (its row locked, which
    the reaper's death update must wait for) or in a sweep (the fleet's sweep lock held, so no
    other worker sweeps). The server ends the frozen session after the fleet's idle-transaction
    timeout (T/2), so the others declare the worker dead and take its instances over on time;
    thawed, it finds its session gone and fences itself. Without that timeout, the lock is held
    for as long as the freeze: no takeover at all (specs/deployment.md §3)."""
    url = postgres_database_url
    fleet_table(url)
    gate = tmp_path / "gate"  # the first steps wait for it: the victim still holds work when it freezes
    (tmp_path / "chain.yaml").write_text(chain(gate))
    async with Runtime("durable", database_url=url, fleet=FleetOptions(run_instances=False)) as runtime:
        plan = runtime.load(tmp_path / "chain.yaml")
        armed = tmp_path / "armed"
        # the victim first: its instances wait at the gate, so the other (started once the victim
        # holds some) cannot have claimed them all
        victim = await asyncio.to_thread(start_worker, url, "--concurrency", "10", dead_after=DEAD_AFTER,
                                         env={"XFLOW_FREEZE_AT": point, "XFLOW_FAILPOINTS_ARMED": str(armed)})
        other = victim
        try:
            ids = [f"locked-{k}" for k in range(40)]
            for instance_id in ids:
                await runtime.start(plan, {}, instance_id=instance_id)
            for _ in range(3000):
                if [row for row in await asyncio.to_thread(invocations, url) if row[2] == victim.pid and row[4] is None]:
                    break
                await asyncio.sleep(0.02)
            other = await asyncio.to_thread(start_worker, url, "--concurrency", "10", dead_after=DEAD_AFTER)
            armed.touch()  # steps in flight: it freezes the next time it reaches the point
            for _ in range(3000):
                if stopped(victim.pid):
                    break
                await asyncio.sleep(0.01)
            assert stopped(victim.pid), f"the victim never reached {point}"
            frozen_at = await asyncio.to_thread(database_now, url)
            assert await asyncio.to_thread(_holds_lock, url, point, victim.executor_id)
            # declared dead while still frozen: the lock did not outlive the idle-transaction timeout
            for _ in range(int((DEAD_AFTER + 15) / 0.1)):
                if await asyncio.to_thread(worker_state, url, victim.executor_id) in ("dead", "recovered"):
                    break
                await asyncio.sleep(0.1)
            state = await asyncio.to_thread(worker_state, url, victim.executor_id)
            held = await asyncio.to_thread(_holds_lock, url, point, victim.executor_id)
            assert state in ("dead", "recovered") and not held, (state, held)
            assert stopped(victim.pid)
            gate.touch()
            results = await _thaw(victim, runtime, ids)
        finally:
            gate.touch()
            _stop([victim, other])
    rows = await _check_after_thaw(url, results, victim.pid, frozen_at)
    held_by_victim = {row[0] for row in rows if row[2] == victim.pid}
    taken_over = {row[0] for row in rows if row[2] == other.pid and row[0] in held_by_victim}
    assert held_by_victim and taken_over == held_by_victim  # every instance it held finished on the other
