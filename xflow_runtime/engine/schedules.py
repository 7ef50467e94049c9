"""``start.schedule``: instances started on a schedule by a worker fleet, once per tick.

A definition's schedule becomes a DBOS schedule named ``xflow:<workflow id>`` (upserted by every
worker that loads the definition, :func:`apply`). Each DBOS process fires it, but a tick's workflow
id is derived from its time (``sched-<name>-<time>``), so each tick runs once fleet-wide; the tick
workflow :func:`_tick` runs on the instance queue and starts the instance under the id
``<schedule name>@<tick time>`` (a recorded child start: a tick taken over after a kill starts it
once). The rules (specs/deployment.md, "Schedules"):

- ``interval`` (ISO 8601, ``R/PT15M``) is turned into cron when it divides a minute, an hour or a
  day; any other interval is refused with a clear error (DBOS schedules are cron);
- a tick that starts more than its *grace* after its time — ``max(period, 10 s)`` — is skipped
  (DBOS replays every missed tick of a stalled process, issue #803);
- ticks missed while *every* worker was down are coalesced: a worker that starts and finds the
  schedule's last firing older than the latest tick enqueues that one tick (:func:`catch_up`;
  its own schedule threads, started at launch, fire the later ones); older missed ticks are dropped;
- ``cron.validUntil``: ticks after it are skipped.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from dbos import DBOS, SetWorkflowAttributes, SetWorkflowID

from xflow_runtime.errors import XFlowError

PREFIX = "xflow:"
TICK_NAME = "xflow.tick"
MIN_GRACE_SECONDS = 10.0
_DURATION = re.compile(r"^P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+)S)?)?$")


class ScheduleError(XFlowError):
    """A ``start.schedule`` the fleet cannot run."""


def to_cron(schedule: Any) -> tuple[str, str | None, str | None]:
    """``(cron, validUntil, timezone)`` of a compiled ``start.schedule``."""
    if isinstance(schedule, str):
        schedule = {"interval": schedule}
    if not isinstance(schedule, dict):
        raise ScheduleError(f"unsupported schedule {schedule!r}")
    timezone = schedule.get("timezone")
    cron = schedule.get("cron")
    if cron is not None:
        if isinstance(cron, dict):
            return str(cron["expression"]), cron.get("validUntil"), timezone
        return str(cron), None, timezone
    return interval_cron(str(schedule["interval"])), None, timezone


def interval_cron(interval: str) -> str:
    duration = interval.split("/")[-1]  # R/PT2H, R5/2024-01-01T00:00:00Z/PT2H, PT2H
    match = _DURATION.match(duration)
    if not match or not any(match.groupdict().values()):
        raise ScheduleError(f"schedule interval {interval!r}: expected an ISO 8601 duration such as R/PT15M")
    parts = {key: int(value or 0) for key, value in match.groupdict().items()}
    seconds = parts["d"] * 86400 + parts["h"] * 3600 + parts["m"] * 60 + parts["s"]
    if seconds < 60 and 60 % seconds == 0:
        return f"*/{seconds} * * * * *"
    if seconds % 60 == 0 and seconds < 3600 and 3600 % seconds == 0:
        return f"0 */{seconds // 60} * * * *"
    if seconds % 3600 == 0 and seconds < 86400 and 86400 % seconds == 0:
        return f"0 0 */{seconds // 3600} * * *"
    if seconds == 86400:
        return "0 0 0 * * *"
    raise ScheduleError(f"schedule interval {interval!r} does not divide a minute, an hour or a day: "
                        "use a cron expression")


def _ticks(cron: str, around: dt.datetime, timezone: str | None) -> tuple[dt.datetime, dt.datetime]:
    """The latest tick not after ``around`` and the one after it."""
    from croniter import croniter

    if timezone:
        import zoneinfo

        around = around.astimezone(zoneinfo.ZoneInfo(timezone))
    it = croniter(cron, around + dt.timedelta(microseconds=1), second_at_beginning=True)
    previous = it.get_prev(dt.datetime)
    return previous, croniter(cron, previous, second_at_beginning=True).get_next(dt.datetime)


def should_run(context: dict[str, Any], scheduled_at: dt.datetime, now: dt.datetime) -> bool:
    """The catch-up rule: a tick runs within its grace, ``max(period, 10 s)``, and before validUntil."""
    valid_until = context.get("valid_until")
    if valid_until and scheduled_at > parse_time(valid_until):
        return False
    tick, following = _ticks(context["cron"], scheduled_at, context.get("timezone"))
    grace = max((following - tick).total_seconds(), MIN_GRACE_SECONDS)
    return (now - scheduled_at).total_seconds() <= grace


def parse_time(value: Any) -> dt.datetime:
    if isinstance(value, dt.datetime):
        moment = value
    else:
        moment = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def instance_id(schedule_name: str, scheduled_at: dt.datetime) -> str:
    return f"{schedule_name}@{scheduled_at.astimezone(dt.timezone.utc).isoformat()}"


async def _clock() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat()


@DBOS.workflow(name=TICK_NAME)
async def _tick(scheduled_at: Any, context: dict[str, Any]) -> str | None:
    """One tick: start the instance (once), or skip a stale tick. Runs on the instance queue."""
    from xflow_runtime.engine.durable.engine import _instance_workflow
    from xflow_runtime.engine.durable.instance_keys import instance_attributes
    from xflow_runtime.engine.fleet import INSTANCE_QUEUE

    at = parse_time(scheduled_at)
    now = parse_time(await DBOS.run_step_async({"name": "xflow.tick.now"}, _clock))
    if not should_run(context, at, now):
        return None
    started = instance_id(context["schedule"], at)
    request = {"format": 1, "workflow": context["workflow"], "input": context.get("input") or {},
               "identity": {"tenant": "default", "user": None}, "subflows": [],
               "labels": {"schedule": context["schedule"], "tick": at.isoformat()}}
    with SetWorkflowID(started), SetWorkflowAttributes(instance_attributes(request)):  # listed like any instance
        await DBOS.enqueue_workflow_async(INSTANCE_QUEUE, _instance_workflow, request)
    return started


def entry(plan: Any, ref: dict[str, Any]) -> dict[str, Any]:
    """The DBOS schedule of a plan that has ``start.schedule``."""
    from xflow_runtime.engine.fleet import INSTANCE_QUEUE

    cron, valid_until, timezone = to_cron(plan.schedule)
    name = f"{PREFIX}{plan.workflow_id}"
    context = {"schedule": name, "cron": cron, "valid_until": valid_until, "timezone": timezone,
               "workflow": {**ref, "id": plan.workflow_id}}
    return {"schedule_name": name, "workflow_fn": _tick, "schedule": cron, "context": context,
            "automatic_backfill": False, "cron_timezone": timezone, "queue_name": INSTANCE_QUEUE}


def apply_for(runtime: Any, plans: list[Any], prune: bool) -> list[str]:
    """The schedules of ``plans`` (a fleet runtime's), applied; a warning per one that cannot run."""
    if runtime.fleet is None:
        raise ScheduleError("schedules run on a worker fleet (xflow worker)")
    entries, warnings = [], []
    for plan in plans:
        if plan.schedule is None:
            continue
        try:
            entries.append(entry(plan, runtime.source_of(plan).to_dict()))
        except ScheduleError as error:
            warnings.append(f"{plan.workflow_id}: {error}")
    apply(entries, prune=prune)
    return warnings


def apply(entries: list[dict[str, Any]], *, prune: bool) -> None:
    """Upsert the schedules; with ``prune``, delete ``xflow:`` schedules no definition has any more."""
    if entries:
        DBOS.apply_schedules(entries)  # type: ignore[arg-type]
    if prune:
        wanted = {e["schedule_name"] for e in entries}
        for schedule in DBOS.list_schedules(schedule_name_prefix=PREFIX):
            if schedule["schedule_name"] not in wanted:
                DBOS.delete_schedule(schedule["schedule_name"])
    for item in entries:
        catch_up(item["schedule_name"], item["schedule"], item.get("cron_timezone"))


def catch_up(name: str, cron: str, timezone: str | None) -> None:
    """If the schedule last fired before its latest tick, every worker was down at that tick:
    enqueue that one tick (its deterministic id makes this idempotent across workers)."""
    schedule = DBOS.get_schedule(name)
    if schedule is None:
        return
    # DBOS started this process's schedule threads at launch (before this call): they fire the ticks
    # from then on; a tick both fired and caught up has one id, so it runs once
    latest, _ = _ticks(cron, dt.datetime.now(dt.timezone.utc), timezone)
    last = schedule.get("last_fired_at")
    if last is not None and parse_time(last) >= latest:
        return
    if last is None:  # a new schedule: nothing was missed
        return
    second = dt.timedelta(seconds=1)
    DBOS.backfill_schedule(name, latest - second, latest + second)
