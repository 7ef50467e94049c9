"""Run Alembic migrations programmatically (no alembic.ini at run time).

``upgrade_to_head(engine)`` is called by ``open_database`` on every open: when the version
table already names the head revision it costs one small query. Concurrent first opens are
serialised (a PostgreSQL advisory lock; SQLite's write lock via ``BEGIN IMMEDIATE``), and the
revision is re-read under the lock, so two processes never run the same migration twice.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, text

from xflow_runtime.storage.database import write_transaction

VERSION_TABLE = "xflow_alembic_version"
MIGRATIONS_DIR = Path(__file__).with_name("migrations")
_PG_LOCK_KEY = 0x78666C6F77  # "xflow": one advisory lock for our schema changes


def _config():  # -> alembic.config.Config
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    heads = ScriptDirectory.from_config(_config()).get_heads()
    if len(heads) != 1:  # a second migration must revise the previous head, not branch
        raise RuntimeError(f"migrations must form one chain, found heads {heads}")
    return heads[0]


def current_revision(connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
    return context.get_current_revision()


def upgrade_to_head(engine: Engine) -> None:
    head = head_revision()
    with engine.connect() as connection:
        up_to_date = current_revision(connection) == head
        connection.rollback()
    if up_to_date:
        return
    from alembic import command

    with write_transaction(engine) as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
        if current_revision(connection) == head:
            return
        config = _config()
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
