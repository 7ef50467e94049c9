"""Engines for our database: SQLite (default, a file under ``./.xflow/``) or PostgreSQL.

SQLite runs in WAL mode with a busy timeout, foreign keys on (so deletes cascade) and Python's
implicit transactions disabled, so that :func:`write_transaction` can open ``BEGIN IMMEDIATE``:
the write lock is taken at the start of the transaction and concurrent writers queue instead
of failing on a lock upgrade. PostgreSQL needs nothing special here; writers serialise on a row
lock (``SELECT … FOR UPDATE``) taken by the repository.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from xflow_runtime.errors import XFlowError

SQLITE_BUSY_TIMEOUT_S = 60.0
#: How long :func:`checkpoint_wal` waits by default for readers of the WAL to finish.
CHECKPOINT_WAIT_S = 10.0
#: How long opening a SQLite file waits to switch it to WAL (see ``_configure_sqlite``).
WAL_SWITCH_WAIT_S = 2.0
_IMMEDIATE = "xflow_immediate"


class DatabaseError(XFlowError):
    """The database URL is invalid or the database cannot be opened or migrated."""


def default_database_url() -> str:
    """Memory's database when no URL is given: the rule of :func:`xflow_runtime.settings.locate`."""
    from xflow_runtime.settings import locate

    return locate(None).memory_url


def _normalise_url(url: str) -> Any:
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise DatabaseError(f"invalid database URL {url!r}: {exc}") from None
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")  # psycopg 3, not psycopg2
    return parsed


def _configure_sqlite(engine: Engine, *, wal: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        if wal:
            # a short wait: concurrent first opens of a new file take turns switching it, while a
            # file another process holds in its own mode is left as it is without a minute's wait
            cursor.execute(f"PRAGMA busy_timeout={int(WAL_SWITCH_WAIT_S * 1000)}")
            try:
                cursor.execute("PRAGMA journal_mode=WAL")
            except dbapi_connection.OperationalError:
                # switching the journal mode needs the file alone: a file another process keeps open
                # in its own mode keeps that mode (WAL, once set, is the file's: later opens see it)
                pass
            cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        mode = "IMMEDIATE" if connection.get_execution_options().get(_IMMEDIATE) else "DEFERRED"
        connection.exec_driver_sql(f"BEGIN {mode}")


def create_database_engine(url: str, *, wal: bool = True, session_settings: dict[str, str] | None = None) -> Engine:
    """An engine for ``url`` (not migrated; see :func:`open_database`). ``wal=False`` leaves a
    SQLite file's journal mode alone: DBOS's store is not ours to convert, and switching it to WAL
    needs a lock a running DBOS in the same process may hold ("database is locked").
    ``session_settings``: PostgreSQL settings every connection starts with (``lock_timeout``…)."""
    parsed = _normalise_url(url)
    kwargs: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if not database or database == ":memory:" or "mode=memory" in str(parsed):
            # every pooled connection would open its own empty database, so writes made in one
            # worker thread would be invisible to the next
            raise DatabaseError("in-memory SQLite is not supported: use a file "
                                "(sqlite:///path/to/file.db)")
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_S}
    elif parsed.get_backend_name() == "postgresql":
        kwargs.update(pool_size=10, max_overflow=20, pool_pre_ping=True)
        if session_settings:
            kwargs["connect_args"] = {"options": " ".join(f"-c {k}={v}" for k, v in session_settings.items())}
    try:
        engine = create_engine(parsed, **kwargs)
    except (ArgumentError, NoSuchModuleError, ImportError) as exc:
        raise DatabaseError(f"cannot open database {parsed.render_as_string()}: {exc}") from None
    if engine.dialect.name == "sqlite":
        _configure_sqlite(engine, wal=wal)
    return engine


def open_database(url: str | None = None) -> Engine:
    """An engine for ``url`` (default :func:`default_database_url`) with the schema migrated to
    the latest revision."""
    from xflow_runtime.storage.migrate import upgrade_to_head

    engine = create_database_engine(url or default_database_url())
    try:
        upgrade_to_head(engine)
    except XFlowError:
        engine.dispose()
        raise
    except Exception as exc:  # connection refused, permission denied, corrupt file…
        engine.dispose()
        raise DatabaseError(f"cannot open database {engine.url.render_as_string()}: "
                            f"{type(exc).__name__}: {exc}") from exc
    return engine


def database_exists(url: str) -> bool:
    """Whether ``url`` holds our tables. Creates nothing: a SQLite file that does not exist stays
    absent, and a database without our tables gets none."""
    from sqlalchemy import inspect

    from xflow_runtime.settings import sqlite_path
    from xflow_runtime.storage.migrate import VERSION_TABLE

    path = sqlite_path(url)
    if path is not None and not path.exists():
        return False
    engine = create_database_engine(url)
    try:
        return inspect(engine).has_table(VERSION_TABLE)
    except Exception as exc:
        raise DatabaseError(f"cannot open database {engine.url.render_as_string()}: "
                            f"{type(exc).__name__}: {exc}") from exc
    finally:
        engine.dispose()


def open_existing_database(url: str) -> Engine | None:
    """An engine for the memory store at ``url`` if it holds our tables (migrated to the latest
    revision), else ``None`` (see :func:`database_exists`). For commands that manage stored data."""
    return open_database(url) if database_exists(url) else None


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A transaction that serialises with other writers from its first statement
    (``BEGIN IMMEDIATE`` on SQLite; on PostgreSQL the caller locks the rows it updates)."""
    with engine.connect() as connection:
        connection = connection.execution_options(**{_IMMEDIATE: True})
        with connection.begin():
            yield connection


def checkpoint_wal(engine: Engine, *, wait_s: float = CHECKPOINT_WAIT_S) -> bool:
    """Checkpoint a SQLite engine's WAL into the database file and truncate it to zero bytes;
    whether that completed. Old page images (deleted rows' text) stay in the ``-wal`` file until
    then. ``PRAGMA wal_checkpoint(TRUNCATE)`` waits (the busy handler, here ``wait_s``) for readers
    still using the WAL, then answers ``(busy, log, checkpointed)`` without raising: ``busy`` 1
    means a reader or writer held it past the wait and the WAL still holds what it held. Completed:
    ``busy`` 0 and the log emptied (``log`` 0), or the file is not in WAL mode (``log`` -1, no WAL).
    Other databases have no such file: ``True``."""
    if engine.dialect.name != "sqlite":
        return True
    # the DB-API connection, outside any transaction (a transaction of our own would be a reader)
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout={max(0, int(wait_s * 1000))}")
            try:
                busy, log, _checkpointed = cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            finally:  # the pooled connection goes back with the engine's own timeout
                cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
        finally:
            cursor.close()
    finally:
        raw.close()
    return bool(busy == 0 and log in (0, -1))


def error_without_data(error: BaseException) -> str:
    """A database error as its class, SQLSTATE and the server's primary message only: never the
    statement or the server's DETAIL, which may hold user ids or values (safe to log)."""
    original = getattr(error, "orig", None) or error
    diag = getattr(original, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    if primary:
        return f"{type(original).__name__} [{getattr(original, 'sqlstate', None) or '?'}]: {primary}"
    return type(original).__name__
