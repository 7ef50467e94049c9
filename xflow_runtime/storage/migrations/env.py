"""Alembic environment, used programmatically by ``xflow_runtime.storage.migrate``.

The caller passes an open connection in ``config.attributes["connection"]``; there is no
alembic.ini and no URL here.
"""

from __future__ import annotations

from alembic import context

from xflow_runtime.storage.migrate import VERSION_TABLE
from xflow_runtime.storage.models import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    version_table=VERSION_TABLE,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite ALTER TABLE goes through batch
)
with context.begin_transaction():
    context.run_migrations()
