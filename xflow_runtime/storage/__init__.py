"""Our own tables (chat memory now, long-term memory later): SQLAlchemy 2.x models, Alembic
migrations run programmatically on first use, SQLite by default and PostgreSQL by URL.

* :func:`open_database` — an engine for a URL with the right per-dialect settings, migrated to
  the latest schema.
* :func:`default_database_url` — memory's database by the rule of :mod:`xflow_runtime.settings`.
* :mod:`xflow_runtime.storage.models` — the tables.

Adding tables: see ``specs/memory.md`` § "Storage — adding a migration".
"""

from __future__ import annotations

from xflow_runtime.storage.database import default_database_url, open_database, write_transaction

__all__ = ["default_database_url", "open_database", "write_transaction"]
