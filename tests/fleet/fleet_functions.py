"""The custom function of the fleet tests: every invocation is a row of ``fleet_invocations`` in
the fleet's PostgreSQL (``$FLEET_TEST_DB``), with the worker's pid and start and end times from the
database clock, so a test can see whether a completed step ran twice or an instance ran on two
workers at once. Without ``$FLEET_TEST_DB`` (the single-process reference run) nothing is recorded."""

from __future__ import annotations

import os
import time

TABLE = """CREATE TABLE IF NOT EXISTS fleet_invocations (
    id bigserial PRIMARY KEY, instance text NOT NULL, label text NOT NULL, pid int NOT NULL,
    started timestamptz NOT NULL DEFAULT clock_timestamp(), ended timestamptz)"""


def _execute(statement: str, parameters: tuple) -> tuple | None:  # type: ignore[type-arg]
    """One autocommit statement; retried on a fresh connection for a few seconds, so the log
    survives the database restart of ``test_database_faults`` (it is the test's record, not the
    effect under test)."""
    import psycopg

    url = os.environ["FLEET_TEST_DB"].replace("postgresql+psycopg://", "postgresql://")
    deadline = time.monotonic() + 20
    while True:
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=5) as connection:
                return connection.execute(statement, parameters).fetchone()
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def record(instance: str, label: str, n: int, pause: float = 0.02, until: str | None = None) -> dict:
    """``until``: a file the step waits for (after its row is written: the step is in flight)."""
    if os.environ.get("FLEET_TEST_DB"):
        row = _execute("INSERT INTO fleet_invocations (instance, label, pid) VALUES (%s, %s, %s) RETURNING id",
                       (instance, label, os.getpid()))
        assert row is not None
        while until and not os.path.exists(until):
            time.sleep(0.02)
        time.sleep(pause)
        _execute("UPDATE fleet_invocations SET ended = clock_timestamp() WHERE id = %s RETURNING id", (row[0],))
    else:
        time.sleep(pause)
    return {"label": label, "square": n * n}
