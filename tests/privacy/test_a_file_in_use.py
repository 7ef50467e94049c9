"""Opening and checkpointing SQLite files other connections hold. Erasure and export open the durable
store while the process that owns it runs: a SQLite file DBOS keeps in its rollback-journal mode,
with a connection holding a transaction open. Opening it must not try to switch it to WAL (which
needs the file alone and fails with 'database is locked' at once, whatever the busy timeout)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import text

from xflow_runtime.storage.database import SQLITE_BUSY_TIMEOUT_S, checkpoint_wal, create_database_engine


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


def test_checkpoint_wal_says_whether_the_wal_was_emptied(tmp_path: Path) -> None:
    """``PRAGMA wal_checkpoint(TRUNCATE)`` answers busy without raising while a reader holds the
    WAL: :func:`checkpoint_wal` reads the answer (False, the deleted text still in the ``-wal``
    file), waits only ``wait_s``, and answers True once the reader is gone and the WAL is empty.
    A file in rollback-journal mode has no WAL: True."""
    path = tmp_path / "memory.sqlite"
    engine = create_database_engine(f"sqlite:///{path}")
    reader = sqlite3.connect(path, isolation_level=None)
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE notes (body TEXT)"))
            connection.execute(text("INSERT INTO notes VALUES ('platypusvermilion')"))
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM notes").fetchall()
        with engine.begin() as connection:
            connection.execute(text("DELETE FROM notes"))
        assert checkpoint_wal(engine, wait_s=0.2) is False
        assert b"platypusvermilion" in path.with_name(path.name + "-wal").read_bytes()
        reader.execute("COMMIT")
        assert checkpoint_wal(engine, wait_s=0.2) is True
        assert path.with_name(path.name + "-wal").stat().st_size == 0
        with engine.connect() as connection:  # the engine's own busy timeout is back on the connection
            assert connection.execute(text("PRAGMA busy_timeout")).scalar_one() == SQLITE_BUSY_TIMEOUT_S * 1000
    finally:
        reader.close()
        engine.dispose()
    rollback = tmp_path / "durable.sqlite"
    sqlite3.connect(rollback).execute("CREATE TABLE t (x)").connection.close()
    plain = create_database_engine(f"sqlite:///{rollback}", wal=False)
    try:
        assert checkpoint_wal(plain, wait_s=0.2) is True
    finally:
        plain.dispose()
