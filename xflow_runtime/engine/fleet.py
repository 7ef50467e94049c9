"""Many worker processes on one PostgreSQL: identity, heartbeats, takeover of dead workers, drain.

DBOS already makes one instance run on one worker at a time (a queue claim admits one claimer,
and every checkpoint is fenced by the claim's owner token), but it has no liveness: a claimed
instance whose worker died stays PENDING under that worker's executor id for ever. We add
(specs/deployment.md):

- a fresh executor id per process (:func:`new_executor_id`), never reused;
- a heartbeat row per worker in ``xflow_workers`` (migration 0006), written every
  :attr:`FleetTimes.heartbeat` s with the *database's* clock;
- a lease: the worker's own record of its last successful heartbeat, on ``CLOCK_BOOTTIME`` (which
  keeps counting while the process is paused). An effect starts only while the lease is fresh
  (:meth:`Fleet.before_effect`); a worker whose last heartbeat is older than ``dead_after`` or that
  reads its own row as dead exits at once (``os._exit``), so it never starts a step after it was
  declared dead;
- a reaper in every worker, one sweep at a time fleet-wide (a transaction-level advisory lock):
  rows silent for :attr:`FleetTimes.dead_after` s become ``dead``; the instances of dead and exited
  workers are handed back to the queue by DBOS's conditional re-enqueue (:mod:`.dbos_adapter`),
  then verified; an orphan sweep covers PENDING instances of executors no live row names;
- draining for SIGTERM: no new effect starts, in-flight ones finish (:meth:`Fleet.drain`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time

from sqlalchemy import Engine, text

from xflow_runtime.engine.fleet_options import EXECUTOR_PREFIX, FleetOptions, FleetTimes
from xflow_runtime.errors import XFlowError
from xflow_runtime.failpoints import fail_point

log = logging.getLogger("xflow.fleet")

#: The DBOS queue every instance start goes through when a fleet runs them.
INSTANCE_QUEUE = "xflow.instances"
#: The advisory lock key of a reaper sweep ("xreap").
_REAPER_LOCK = 0x787265617000
#: The exit status of a worker that fenced itself (declared dead, or its lease ran out).
FENCED_EXIT = 75


class FleetError(XFlowError):
    """The fleet cannot start (no PostgreSQL, an executor id already live)."""


def _boottime() -> float:
    clock = getattr(time, "CLOCK_BOOTTIME", time.CLOCK_MONOTONIC)
    return time.clock_gettime(clock)


_active: "Fleet | None" = None


def active() -> "Fleet | None":
    """The fleet this process belongs to, if it runs instances as a fleet worker."""
    return _active


class Fleet:
    """This worker's membership: its heartbeat row, its lease, the reaper thread."""

    def __init__(self, engine: Engine, executor_id: str, app_version: str, times: FleetTimes) -> None:
        if engine.dialect.name != "postgresql":
            raise FleetError("worker fleets need PostgreSQL (--db postgresql://…): SQLite has no row locks "
                             "to share instances between processes")
        self.engine = engine
        self.executor_id = executor_id
        self.app_version = app_version
        self.times = times
        self._last_ok = _boottime()
        self._first_ok: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._draining = False
        self._in_flight = 0
        self._idle = threading.Condition()
        self._last_orphan_sweep = 0.0
        self._dropped: set[str] = set()  # our PENDING instances not running here at the last look
        self.recovered: list[str] = []  # executor ids this worker's sweeps handed back (for logs/tests)

    # --- membership ------------------------------------------------------------------------------
    def join(self) -> None:
        global _active
        with self.engine.begin() as connection:
            inserted = connection.execute(text(
                "INSERT INTO xflow_workers (executor_id, host, pid, app_version, started_at, heartbeat_at, state) "
                "VALUES (:id, :host, :pid, :version, now(), now(), 'running') ON CONFLICT (executor_id) DO NOTHING"),
                {"id": self.executor_id, "host": socket.gethostname()[:255], "pid": os.getpid(),
                 "version": self.app_version}).rowcount
        if not inserted:
            raise FleetError(f"executor id {self.executor_id!r} was already used by another worker: "
                             "every worker process needs a fresh one")
        self._last_ok = self._first_ok = _boottime()
        _active = self
        self._thread = threading.Thread(target=self._run, name="xflow-fleet", daemon=True)
        self._thread.start()
        threading.Thread(target=self._watch, name="xflow-fleet-watchdog", daemon=True).start()

    def leave(self, state: str = "exited") -> None:
        """Stop heartbeating and mark the row (``exited``: the reaper hands what is left back at once)."""
        global _active
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if _active is self:
            _active = None
        try:
            with self.engine.begin() as connection:
                connection.execute(text("UPDATE xflow_workers SET state = :state, heartbeat_at = now() "
                                        "WHERE executor_id = :id"), {"state": state, "id": self.executor_id})
        except Exception as error:  # noqa: BLE001 - the reaper declares it dead instead
            log.warning("could not mark worker %s %s: %s", self.executor_id, state, error)

    # --- the lease and draining ------------------------------------------------------------------
    def lease_ok(self) -> bool:
        return _boottime() - self._last_ok < self.times.lease

    async def before_effect(self) -> None:
        """Wait until an effect may start: never while draining (the instance is cancelled and
        handed back instead), never on a stale lease (the heartbeat thread exits the process if
        the lease does not come back)."""
        while self._draining or not self.lease_ok():
            await asyncio.sleep(0.05)
        with self._idle:
            self._in_flight += 1

    def after_effect(self) -> None:
        with self._idle:
            self._in_flight -= 1
            self._idle.notify_all()

    def drain(self, timeout: float) -> bool:
        """Start no new effect; wait up to ``timeout`` s for the ones in flight. True when none is left."""
        self._draining = True
        try:
            with self.engine.begin() as connection:
                connection.execute(text("UPDATE xflow_workers SET state = 'draining' WHERE executor_id = :id"),
                                   {"id": self.executor_id})
        except Exception:  # noqa: BLE001 - draining goes on without the mark
            pass
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout=timeout)

    # --- the thread ------------------------------------------------------------------------------
    def _run(self) -> None:
        # The sweeps run in a thread of their own: a sweep waits for DBOS's connection pool, which
        # a busy worker's instances hold (10,000 conversations starting), and a heartbeat that waited
        # behind it let the lease run out: the worker fenced itself while alive.
        sweeps = threading.Thread(target=self._sweep_loop, name="xflow-fleet-sweeps", daemon=True)
        sweeps.start()
        while not self._stop.wait(self.times.heartbeat):
            self._heartbeat()
        sweeps.join(timeout=10)

    def _sweep_loop(self) -> None:
        next_reap = next_own = 0.0
        while not self._stop.wait(self.times.heartbeat):
            if time.monotonic() >= next_reap:
                next_reap = time.monotonic() + self.times.reap
                try:
                    self.sweep()
                except Exception as error:  # noqa: BLE001 - retried at the next sweep
                    log.warning("reaper sweep failed: %s", error)
            if time.monotonic() >= next_own and not self._draining:
                next_own = time.monotonic() + self.times.orphan_sweep
                try:
                    self.requeue_dropped()
                except Exception as error:  # noqa: BLE001 - retried at the next sweep
                    log.warning("sweep of this worker's own instances failed: %s", error)

    def requeue_dropped(self) -> list[str]:
        """Hand back the instances this live worker holds but no longer runs. An execution can
        end without recording its end when the database goes away under it (PostgreSQL
        restarted): its row stays PENDING under our id, and no sweep of a dead worker ever
        picks it up. Only ids seen so twice, a sweep apart: a claim becomes a running execution
        a moment after the row names us."""
        from xflow_runtime.engine.dbos_adapter import requeue_if_still_mine, running_here

        held = set(_pending_instances(self.app_version, self.executor_id))
        dropped = held - running_here()
        again = sorted(dropped & self._dropped)
        self._dropped = dropped - set(again)
        if again:
            log.warning("instances %s were held but not running on %s: handed back", again, self.executor_id)
            requeue_if_still_mine(again, self.executor_id)
            self.recovered += again
        return again

    def _watch(self) -> None:
        """Fence on a stale lease even when the heartbeat thread hangs: a partition that drops
        packets leaves its statement waiting for TCP to give up, far longer than ``dead_after``."""
        while not self._stop.wait(self.times.heartbeat / 2):
            if _boottime() - self._last_ok > self.times.dead_after:
                self._fence("this worker could not renew its lease (no answer from the database)")

    def _heartbeat(self) -> None:
        started = _boottime()
        try:
            with self.engine.begin() as connection:
                state = connection.execute(text(
                    "UPDATE xflow_workers SET heartbeat_at = now() WHERE executor_id = :id AND state IN "
                    "('running', 'draining') RETURNING state"), {"id": self.executor_id}).scalar()
                fail_point("fleet.heartbeat.locked")  # our row is locked until the commit
        except Exception as error:  # noqa: BLE001 - the lease runs out if this goes on
            log.warning("heartbeat failed: %s", error)
            state = "unknown"
        if state is None:  # declared dead (or recovered): another worker owns our instances now
            self._fence("this worker was declared dead by the fleet")
        if state in ("running", "draining"):
            self._last_ok = started
            if self._first_ok is None:
                self._first_ok = started
        elif _boottime() - self._last_ok > self.times.dead_after:
            # no effect started since the lease ran out (L); by now the fleet may have declared us dead
            self._fence("this worker could not renew its lease")
        if state == "unknown":
            self._first_ok = None  # warm-up again once the database answers

    def _fence(self, why: str) -> None:
        log.error("%s (%s): exiting without starting another step", why, self.executor_id)
        os._exit(FENCED_EXIT)

    # --- the reaper ------------------------------------------------------------------------------
    def sweep(self) -> list[str]:
        """One sweep (a no-op unless this worker holds the fleet's reaper lock): declare silent
        workers dead, hand back the instances of dead and exited workers. Only a warmed-up worker
        (its own heartbeats succeeded for T) declares deaths: after a database outage every worker
        looks silent. Exited workers said so themselves, so they are handed back at once."""
        warmed = self._first_ok is not None and _boottime() - self._first_ok >= self.times.dead_after
        # The orphan sweep reads DBOS's status table *before* the rows of the live workers: a
        # worker's row exists before it claims anything, so an id holding an instance in the
        # first read is in the second if it is live (read the other way round, a worker joining
        # in between would look like an orphan). And before the sweep lock: that read waits for
        # DBOS's pool, which a busy worker's instances may hold for seconds.
        holders: list[str] | None = None
        if warmed and time.monotonic() - self._last_orphan_sweep >= self.times.orphan_sweep:
            self._last_orphan_sweep = time.monotonic()  # used only if this sweep gets the lock
            holders = [e for e in _pending_executors(self.app_version) if e.startswith(EXECUTOR_PREFIX)]
        with self.engine.begin() as connection:
            if not connection.execute(text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": _REAPER_LOCK}).scalar():
                return []
            fail_point("fleet.sweep.locked")  # the fleet's sweep lock is ours until the commit
            if warmed and connection.execute(text(
                    "UPDATE xflow_workers SET state = 'dead' WHERE state IN ('running', 'draining') "
                    "AND heartbeat_at < now() - make_interval(secs => :t)"), {"t": self.times.dead_after}).rowcount:
                fail_point("fleet.sweep.declared_dead")  # not committed yet
            gone = list(connection.execute(text(
                "SELECT executor_id FROM xflow_workers WHERE state IN ('dead', 'exited') AND app_version = :v"),
                {"v": self.app_version}).scalars())
            orphans: list[str] = []
            if holders:
                live = set(connection.execute(text(
                    "SELECT executor_id FROM xflow_workers WHERE state IN ('running', 'draining')")).scalars())
                # only fleet ids: other processes on the same database (``xflow run``, a single
                # service) have no row
                orphans = [e for e in holders if e not in live and e not in gone]
        targets = gone + orphans
        if not targets:
            return []
        from xflow_runtime.engine.dbos_adapter import recover_executors

        fail_point("fleet.sweep.handing_back")  # deaths committed, nothing handed back yet
        recover_executors(targets)
        left = set(_pending_executors(self.app_version, targets))
        done = [e for e in gone if e not in left]
        if done:
            with self.engine.begin() as connection:
                connection.execute(text("UPDATE xflow_workers SET state = 'recovered' WHERE executor_id = ANY(:ids) "
                                        "AND state IN ('dead', 'exited')"), {"ids": done})
        self.recovered += [e for e in targets if e not in left]
        return targets


def open_fleet_database(url: str, times: FleetTimes) -> Engine:
    """The fleet's own engine (heartbeats, sweeps, rate windows), migrated. Its sessions cannot
    hold a lock for long: a worker frozen (or cut off) inside one of its transactions — its row
    locked by a heartbeat, the fleet's sweep lock held by a sweep — would otherwise stop every
    takeover for as long as the freeze, the server waiting for the client's next word. So the
    server ends a session idle in a transaction for ``L = T/2`` (the locks go with it: a worker
    is still declared dead ``T`` after its last heartbeat), a lock wait fails after ``L`` and a
    statement after ``T`` (the heartbeat and the sweep retry; a worker that cannot renew its lease
    for ``T`` fences itself anyway)."""
    from xflow_runtime.storage.database import create_database_engine, open_database

    open_database(url).dispose()  # migrations wait on an advisory lock: not under these timeouts
    lease_ms, dead_ms = int(times.lease * 1000), int(times.dead_after * 1000)
    return create_database_engine(url, session_settings={
        "idle_in_transaction_session_timeout": str(lease_ms), "lock_timeout": str(lease_ms),
        "statement_timeout": str(dead_ms)})


def _handed_back() -> list[str]:
    """The workflows a dead worker's sweep hands back: instances, schedule ticks and index-scopes
    ticks (taken over, a tick cut short by a kill builds at once, not at the next tick)."""
    from xflow_runtime.engine.durable.names import WORKFLOW_NAME
    from xflow_runtime.engine.index_schedule import TICK_NAME as INDEX_TICK
    from xflow_runtime.engine.schedules import TICK_NAME

    return [WORKFLOW_NAME, TICK_NAME, INDEX_TICK]


def _pending_executors(app_version: str, among: list[str] | None = None) -> list[str]:
    """Executor ids holding PENDING instances of our application version."""
    from dbos import DBOS

    rows = DBOS.list_workflows(status="PENDING", name=_handed_back(), app_version=app_version,
                               executor_id=among, load_input=False, load_output=False)
    return sorted({row.executor_id for row in rows if row.executor_id})


def _pending_instances(app_version: str, executor_id: str) -> list[str]:
    """Ids of the PENDING instances (and schedule ticks) ``executor_id`` holds."""
    from dbos import DBOS

    rows = DBOS.list_workflows(status="PENDING", name=_handed_back(), app_version=app_version,
                               executor_id=[executor_id], load_input=False, load_output=False)
    return [row.workflow_id for row in rows]


def register_instance_queue(options: FleetOptions) -> None:
    """Declare the instance queue with the fleet's limits (after DBOS's launch: queues are rows). A
    worker's settings win; a front end only creates the queue if no worker did."""
    from dbos import DBOS
    from dbos._queue import QueueRateLimit  # the TypedDict of register_queue's limiter (typing only)

    limiter: QueueRateLimit | None = None
    if options.starts_per_period is not None:
        limit, period = options.starts_per_period
        limiter = {"limit": int(limit), "period": float(period)}
    DBOS.register_queue(INSTANCE_QUEUE, worker_concurrency=options.worker_concurrency,
                        global_concurrency=options.global_concurrency, limiter=limiter,
                        polling_interval_sec=options.polling_seconds,
                        on_conflict="always_update" if options.run_instances else "never_update")
