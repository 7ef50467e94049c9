"""``--index-scopes-every`` and what a failed tick logs (specs/deployment.md, "Scope indexes on a
schedule"): periods DBOS's cron can keep, refused before the worker starts otherwise; a database
error logged without the statement or the server's DETAIL (either may hold a user id)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from xflow_runtime.engine.index_schedule import parse_every
from xflow_runtime.storage.database import error_without_data
from xflow_runtime.engine.schedules import ScheduleError

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("text", "seconds"), [("10m", 600), ("30s", 30), ("1h", 3600), ("600", 600), ("0", 0),
                                               ("1d", 86400), (" 2s ", 2)])
def test_periods_that_divide_a_minute_an_hour_or_a_day(text: str, seconds: int) -> None:
    assert parse_every(text) == seconds


@given(st.integers(min_value=1, max_value=86400))
def test_a_period_is_taken_exactly_when_the_cron_can_keep_it(seconds: int) -> None:
    keeps = (seconds < 60 and 60 % seconds == 0) or (seconds < 3600 and seconds % 60 == 0 and 3600 % seconds == 0) \
        or (seconds % 3600 == 0 and 86400 % seconds == 0)
    if keeps:
        assert parse_every(f"{seconds}s") == seconds
    else:
        with pytest.raises(ScheduleError):
            parse_every(f"{seconds}s")


@pytest.mark.parametrize("text", ["7m", "45s", "ten", "-1m", "10 minutes", ""])
def test_other_periods_are_refused(text: str) -> None:
    with pytest.raises(ScheduleError):
        parse_every(text)


def test_the_worker_refuses_a_bad_period_before_it_starts() -> None:
    result = subprocess.run([sys.executable, str(REPO / "bin" / "xflow"), "worker", "--db", "postgresql://nobody@127.0.0.1:1/x",
                             "--index-scopes-every", "7m"], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO)
    assert result.returncode == 2 and "--index-scopes-every '7m'" in result.stderr, result.stderr


@pytest.mark.postgres
def test_a_failed_statement_is_logged_without_its_text_or_detail(postgres_url: str) -> None:
    from sqlalchemy import text

    from xflow_runtime.storage.database import create_database_engine

    engine = create_database_engine(postgres_url)
    try:
        with engine.connect() as connection:
            connection.execute(text("CREATE TEMP TABLE t (user_id text PRIMARY KEY)"))
            connection.execute(text("INSERT INTO t VALUES ('ann@example.com')"))
            with pytest.raises(Exception) as raised:
                connection.execute(text("INSERT INTO t VALUES ('ann@example.com')"))
    finally:
        engine.dispose()
    assert "ann" in str(raised.value)  # what SQLAlchemy's text would have logged
    logged = error_without_data(raised.value)
    assert "ann" not in logged and "INSERT" not in logged and "23505" in logged and "UniqueViolation" in logged
    assert error_without_data(ValueError("user ann")) == "ValueError"
