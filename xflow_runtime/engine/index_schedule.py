"""``xflow memory index-scopes`` on a schedule: the processes that run work build the own indexes
of large memory scopes themselves (specs/deployment.md, "Scope indexes on a schedule").

A DBOS schedule named :data:`SCHEDULE` (outside the ``xflow:`` prefix of ``start.schedule``, which
:func:`~xflow_runtime.engine.schedules.apply` prunes) fires in every process; its tick's workflow id
comes from its time, so each tick runs once fleet-wide. The tick runs on a queue of its own
(:data:`QUEUE`, one tick at a time per process), never on the instance queue, so it takes no slot
of ``--concurrency``; the build itself runs on a daemon thread (``functions.daemon_workers``: minutes at 100,000
rows), not on DBOS's executor nor the loop. :func:`~xflow_runtime.memory.longterm.scope_index.maintain`
takes a session advisory lock on the memory database, so two ticks that overlap (a build longer
than the period) do not both build: the second returns ``busy``.

- A tick that starts more than its grace after its time is skipped (DBOS replays every missed tick
  of a stalled process; :func:`~xflow_runtime.engine.schedules.should_run`).
- A failure is logged once per tick (the driver's SQLSTATE and primary message: names of scope
  indexes are hashes, and no statement text, which carries user ids, is logged) and the next tick
  tries again; it is never an instance failure.
- A process stopped mid-build leaves at most an invalid index (``CREATE INDEX CONCURRENTLY`` cut
  short), which the next run drops and builds again; its session's advisory lock goes with it.
- The schedule is a fleet-wide row: the last process started with the option decides the period,
  and ``0`` deletes it (like ``--concurrency``, the last worker started sets it).
- Only when the memory store is PostgreSQL (SQLite searches every scope exactly).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from dataclasses import dataclass
from typing import Any

from dbos import DBOS

from xflow_runtime.engine.schedules import ScheduleError, interval_cron, parse_time, should_run
from xflow_runtime.functions.daemon_workers import WORKERS
from xflow_runtime.storage.database import error_without_data

log = logging.getLogger("xflow.index_scopes")

SCHEDULE = "xflow.index-scopes"
QUEUE = "xflow.maintenance"
TICK_NAME = "xflow.index_scopes.tick"
#: the default period (seconds): an idle tick costs a few small queries
DEFAULT_EVERY = 600
_EVERY = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_every(text: str) -> int:
    """Seconds of ``--index-scopes-every`` (``10m``, ``30s``, ``1h``, ``600``; ``0``: off). The
    period must divide a minute, an hour or a day (DBOS schedules are cron)."""
    match = _EVERY.match(str(text))
    if not match:
        raise ScheduleError(f"--index-scopes-every {text!r}: expected a period such as 10m, 30s, 1h or 0 (off)")
    seconds = int(match.group(1)) * _UNITS[match.group(2)]
    if seconds:
        try:
            interval_cron(f"PT{seconds}S")  # refused here, not at the first tick
        except ScheduleError:
            raise ScheduleError(f"--index-scopes-every {text!r}: the period must divide a minute, an hour or "
                                "a day (e.g. 30s, 5m, 10m, 1h)") from None
    return seconds


@dataclass(frozen=True)
class IndexSchedule:
    """What the processes that run work do: ``every`` seconds (0: the schedule is deleted), with
    these thresholds (``LongTermOptions`` defaults unless given)."""

    every: int = DEFAULT_EVERY
    threshold: int | None = None
    keyword_threshold: int | None = None


_memory_url: str | None = None  # this process's memory store, set by apply (never stored in a row)


def apply(settings: IndexSchedule, memory_url: str | None) -> str | None:
    """Create, update or (``every == 0``) delete the fleet's schedule; register its queue. Returns
    the cron expression, or None when nothing is scheduled (off, or memory not on PostgreSQL).
    After DBOS's launch."""
    global _memory_url
    if not memory_url or not memory_url.startswith(("postgresql", "postgres:")):
        return None
    if not settings.every:
        if DBOS.get_schedule(SCHEDULE) is not None:
            DBOS.delete_schedule(SCHEDULE)
        return None
    from xflow_runtime.memory.longterm.config import LongTermOptions

    defaults = LongTermOptions()
    threshold = settings.threshold or defaults.scope_index_threshold
    keyword_threshold = settings.keyword_threshold or defaults.keyword_index_threshold
    _memory_url = memory_url
    cron = interval_cron(f"PT{settings.every}S")
    # one tick at a time per process; not fleet-wide (global_concurrency would count a killed
    # worker's PENDING tick until a sweep hands it back): maintain's advisory lock serialises builds
    DBOS.register_queue(QUEUE, worker_concurrency=1, polling_interval_sec=1.0, on_conflict="always_update")
    entry: dict[str, Any] = {
        "schedule_name": SCHEDULE, "workflow_fn": _tick, "schedule": cron, "automatic_backfill": False,
        "queue_name": QUEUE,
        "context": {"cron": cron, "threshold": threshold, "keyword_threshold": keyword_threshold}}
    DBOS.apply_schedules([entry])  # type: ignore[list-item]
    return cron


async def _clock() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat()


@DBOS.workflow(name=TICK_NAME)
async def _tick(scheduled_at: Any, context: dict[str, Any]) -> dict[str, Any] | None:
    """One tick: maintain the scope indexes, or skip a stale tick. Never raises: a failure is
    logged and the next tick tries again."""
    at = parse_time(scheduled_at)
    now = parse_time(await DBOS.run_step_async({"name": "xflow.index_scopes.now"}, _clock))
    if not should_run({"cron": context["cron"]}, at, now):
        return None
    result: dict[str, Any] = await DBOS.run_step_async({"name": "xflow.index_scopes.maintain"}, _maintain, context)
    return result


async def _maintain(context: dict[str, Any]) -> dict[str, Any]:
    url = _memory_url
    if url is None:  # a process that dequeued the tick without running work (xflow run --db …)
        return {"skipped": "no memory store configured in this process"}
    try:
        done: dict[str, Any] = await WORKERS.submit(
            lambda: run_once(url, int(context["threshold"]), int(context["keyword_threshold"])), "index-scopes").outcome
    except Exception as error:  # noqa: BLE001 - logged once; the next tick runs it again
        log.warning("scope index maintenance failed (retried at the next tick): %s", error_without_data(error))
        return {"error": error_without_data(error)}
    if done.get("built") or done.get("dropped"):
        log.info("scope indexes: built %d, dropped %d", len(done["built"]), len(done["dropped"]))
    return done


_engines: dict[str, Any] = {}


def run_once(url: str, threshold: int, keyword_threshold: int) -> dict[str, Any]:
    """One maintenance run on the memory store at ``url`` (blocking)."""
    from sqlalchemy import text

    from xflow_runtime.memory.longterm import scope_index

    engine = _engines.get(url)
    if engine is None:
        from xflow_runtime.storage.database import create_database_engine

        # a build may take minutes: no statement timeout. The build of a process stopped mid-way
        # runs to its end on the server (holding the lock: ticks meanwhile return busy), or, if the
        # server cuts it short, leaves an invalid index the next run builds again
        engine = _engines[url] = create_database_engine(url, session_settings={"statement_timeout": "0"})
    with engine.connect() as connection:
        exists = connection.execute(text("SELECT to_regclass('xflow_memories') IS NOT NULL")).scalar()
        connection.rollback()
    if not exists:
        return {"built": [], "dropped": [], "kept": [], "planned": [], "failed": [], "busy": False}
    return scope_index.maintain(engine, threshold, keyword_threshold=keyword_threshold).as_dict()
