"""Fleet membership rules that need no running DBOS (``engine/fleet.py``, specs/deployment.md §3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from xflow_runtime.engine.fleet import Fleet, FleetError
from xflow_runtime.engine.fleet_options import FleetTimes, new_executor_id
from xflow_runtime.storage.database import create_database_engine, open_database

TIMES = FleetTimes(heartbeat=0.5, dead_after=5.0, reap=0.5, orphan_sweep=5.0)


def test_executor_ids_are_never_the_same() -> None:
    ids = {new_executor_id() for _ in range(1000)}
    assert len(ids) == 1000 and all(i.startswith("xw-") for i in ids)


def test_a_fleet_needs_postgresql(tmp_path: Path) -> None:
    engine = create_database_engine(f"sqlite:///{tmp_path / 'x.db'}")
    try:
        with pytest.raises(FleetError, match="PostgreSQL"):
            Fleet(engine, "xw-a", "v", TIMES)
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_an_executor_id_joins_once_and_a_cold_worker_declares_no_one_dead(postgres_database_url) -> None:
    engine = open_database(postgres_database_url)
    first = Fleet(engine, "xw-test-1", "v", TIMES)
    try:
        first.join()
        with pytest.raises(FleetError, match="already used"):
            Fleet(engine, "xw-test-1", "v", TIMES).join()
        # a worker silent for an hour (say, the whole fleet lost its database meanwhile)
        with engine.begin() as connection:
            connection.execute(text(
                "INSERT INTO xflow_workers VALUES ('xw-silent', 'h', 1, 'v', now() - interval '1 hour', "
                "now() - interval '1 hour', 'running')"))
        assert first.sweep() == []  # not warmed up: its own heartbeats have not succeeded for T yet
        with engine.connect() as connection:
            state = connection.execute(text("SELECT state FROM xflow_workers WHERE executor_id = 'xw-silent'")).scalar()
        assert state == "running"
    finally:
        first.leave()
        engine.dispose()
    engine = open_database(postgres_database_url)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT state FROM xflow_workers WHERE executor_id = 'xw-test-1'")).scalar() == "exited"
    engine.dispose()
