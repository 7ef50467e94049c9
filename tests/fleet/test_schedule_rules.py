"""The schedule rules of ``engine/schedules.py`` (specs/deployment.md, "Schedules"), without a fleet."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, strategies as st

from xflow_runtime.engine.schedules import MIN_GRACE_SECONDS, ScheduleError, instance_id, should_run, to_cron

UTC = dt.timezone.utc


@pytest.mark.parametrize("schedule, cron", [
    ("R/PT2S", "*/2 * * * * *"), ("PT15M", "0 */15 * * * *"), ({"interval": "R/PT6H"}, "0 0 */6 * * *"),
    ("R/P1D", "0 0 0 * * *"), ({"cron": "*/5 * * * *"}, "*/5 * * * *"),
    ({"cron": {"expression": "0 0 * * * ?", "validUntil": "2030-01-01T00:00:00Z"}}, "0 0 * * * ?"),
])
def test_schedules_become_cron(schedule, cron) -> None:
    assert to_cron(schedule)[0] == cron


@pytest.mark.parametrize("interval", ["R/PT7S", "PT45M", "R/PT5H", "P2D", "R/soon"])
def test_an_interval_that_divides_no_minute_hour_or_day_is_refused(interval) -> None:
    with pytest.raises(ScheduleError):
        to_cron(interval)


@given(st.integers(min_value=0, max_value=3600))
def test_a_tick_runs_within_its_grace_and_never_after(late: int) -> None:
    context = {"cron": "*/2 * * * * *"}  # period 2 s: the grace is the 10 s minimum
    tick = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert should_run(context, tick, tick + dt.timedelta(seconds=late)) == (late <= MIN_GRACE_SECONDS)


def test_the_grace_of_a_long_period_is_the_period() -> None:
    context = {"cron": "0 0 * * * *"}  # hourly
    tick = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert should_run(context, tick, tick + dt.timedelta(minutes=59))
    assert not should_run(context, tick, tick + dt.timedelta(minutes=61))


def test_ticks_after_valid_until_are_skipped() -> None:
    context = {"cron": "*/2 * * * * *", "valid_until": "2026-01-01T12:00:00Z"}
    tick = dt.datetime(2026, 1, 1, 12, 0, 2, tzinfo=UTC)
    assert not should_run(context, tick, tick)
    assert should_run(context, tick - dt.timedelta(seconds=2), tick)


def test_one_tick_one_instance_id() -> None:
    tick = dt.datetime(2026, 1, 1, 13, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert instance_id("xflow:w", tick) == "xflow:w@2026-01-01T12:00:00+00:00"
