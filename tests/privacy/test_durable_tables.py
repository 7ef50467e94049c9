"""The DBOS system tables erasure deletes from, and the columns it reads, pinned against the
schema DBOS creates (SQLite and PostgreSQL): a DBOS upgrade that adds a table holding instance
data, or renames a column, fails here instead of leaving a user's data behind."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, inspect

from tests.privacy.conftest import Stores
from xflow_runtime.engine.durable.subjects import INSTANCE_TABLES, POSTGRES_SCHEMA
from xflow_runtime.runtime import Runtime

#: DBOS tables that hold no instance data: queues, schedules, versions, migrations, and the
#: key-value state of DBOS's event receivers (keyed by service and function; xflow uses none)
NOT_INSTANCE_DATA = {"workflow_schedules", "application_versions", "queues", "dbos_migrations",
                     "event_dispatch_kv"}


@pytest.mark.slow
async def test_erasure_knows_every_dbos_table_that_holds_instance_data(stores: Stores) -> None:
    async with Runtime("durable", database_url=stores.url):
        pass  # opening creates DBOS's schema
    engine = create_engine(stores.durable_url)
    schema = None if engine.dialect.name == "sqlite" else POSTGRES_SCHEMA
    inspector = inspect(engine)
    columns = {table: {c["name"] for c in inspector.get_columns(table, schema=schema)}
               for table in inspector.get_table_names(schema=schema)}
    engine.dispose()
    for table, column in INSTANCE_TABLES:
        assert column in columns.get(table, set()), f"DBOS has no {table}.{column}"
    assert {"name", "status", "attributes", "created_at"} <= columns["workflow_status"]
    known = {table for table, _ in INSTANCE_TABLES} | NOT_INSTANCE_DATA
    naming_instances = {table for table, names in columns.items()
                        if names & {"workflow_uuid", "workflow_id", "destination_uuid"}}
    assert naming_instances <= known, f"tables erasure does not know: {naming_instances - known}"
    assert set(columns) <= known | {"xflow_alembic_version"}, f"unknown DBOS tables: {set(columns) - known}"
