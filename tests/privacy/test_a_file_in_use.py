"""Erasure and export open the durable store while the process that owns it runs: a SQLite file
DBOS keeps in its rollback-journal mode, with a connection holding a transaction open. Opening it
must not try to switch it to WAL (which needs the file alone and fails with 'database is locked'
at once, whatever the busy timeout)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import text

from xflow_runtime.storage.database import create_database_engine


def test_a_sqlite_file_held_open_in_another_journal_mode_is_opened_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "durable.sqlite"
    owner = sqlite3.connect(path, isolation_level=None)
    owner.execute("CREATE TABLE workflow_status (workflow_uuid TEXT)")
    owner.execute("INSERT INTO workflow_status VALUES ('w-1')")
    owner.execute("BEGIN")
    owner.execute("SELECT * FROM workflow_status").fetchall()  # a read transaction stays open
    engine = create_database_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as connection:
            assert connection.execute(text("SELECT workflow_uuid FROM workflow_status")).scalars().all() == ["w-1"]
            assert connection.execute(text("PRAGMA journal_mode")).scalar_one() == "delete"
    finally:
        engine.dispose()
        owner.execute("COMMIT")
        owner.close()
