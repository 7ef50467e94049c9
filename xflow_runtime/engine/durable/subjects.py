"""A user's instances in the durable store: find, export, cancel and erase them.

Instances are found by the subject label ``DurableEngine.start`` attaches to every instance of a
user (a DBOS workflow attribute holding :func:`~xflow_runtime.privacy.subject.subject_key`), read
with SQL on ``workflow_status.attributes`` (DBOS's attribute filter exists only on PostgreSQL):
nothing recorded is decoded to find them. Running or waiting instances are cancelled through DBOS
(``cancel_workflows``: DBOS then refuses every later write of those executions, including a step in
flight); then every row of the instances is deleted with SQL on DBOS's system tables
(:data:`INSTANCE_TABLES`) in one transaction, so the receipt counts what that transaction deleted.
DBOS's ``delete_workflows`` deletes the same rows but returns no counts and, on SQLite, leaves the
text in freed pages; we delete with ``secure_delete`` on. The table and column names are DBOS's
storage format, pinned by ``tests/privacy/test_durable_tables.py``: check them when upgrading DBOS.

Importing this module imports DBOS: only erasure and export import it.
"""

from __future__ import annotations

from typing import Any

from dbos import DBOSClient
from sqlalchemy import Engine, bindparam, inspect, text

from xflow_runtime.engine.durable.engine import DurableEngineError, _redact, describe_error
from xflow_runtime.engine.durable.names import HISTORY_STREAM, WAKE_WORKFLOW_NAME, WORKFLOW_NAME, operation_prefix
from xflow_runtime.engine.serializer import SERIALIZER, refuse_pickle
from xflow_runtime.privacy.subject import SUBJECT_ATTRIBUTE, subject_key
from xflow_runtime.settings import sqlite_path
from xflow_runtime.storage.database import CHECKPOINT_WAIT_S, checkpoint_wal, create_database_engine, write_transaction

#: (table, column naming the instance): every DBOS system table that holds an instance's data,
#: children before ``workflow_status`` (the others reference it or are swept by its absence).
INSTANCE_TABLES: tuple[tuple[str, str], ...] = (
    ("notifications", "destination_uuid"),   # messages and events sent to the instance
    ("workflow_events", "workflow_uuid"),
    ("workflow_events_history", "workflow_uuid"),
    ("streams", "workflow_uuid"),            # the xflow.history stream
    ("operation_outputs", "workflow_uuid"),  # step results (LLM replies, function results)
    ("workflow_input", "workflow_uuid"),
    ("workflow_output", "workflow_uuid"),
    ("workflow_status", "workflow_uuid"),    # also holds the inputs/output/error columns
)
#: DBOS's schema on PostgreSQL (SQLite has none).
POSTGRES_SCHEMA = "dbos"
_FINAL = frozenset({"SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"})


class DurableErasureFailed(DurableEngineError):
    """Rows of an erased user's instances are still in the durable store (retry the erasure)."""


class DurableSubjects:
    """The durable store at ``url`` (already resolved by :mod:`xflow_runtime.settings`), as seen by
    erasure and export. Use :meth:`present` first: a missing store is reported, never created."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.display_url = _redact(url)
        self._engine: Engine | None = None
        self._client: DBOSClient | None = None

    def present(self) -> bool:
        """Whether the store exists and holds DBOS's tables (a SQLite file is not created)."""
        path = sqlite_path(self.url)
        if path is not None and not path.exists():
            return False
        try:
            return inspect(self._sql()).has_table("workflow_status", schema=self._schema())
        except Exception as error:  # unreachable server, bad credentials
            raise DurableEngineError(f"cannot read the durable store {self.display_url}: "
                                     f"{describe_error(error)}") from error

    def close(self) -> None:
        if self._client is not None:
            self._client.destroy()
            self._client = None
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def instances(self, tenant: str, user: str) -> list[tuple[str, str]]:
        """``(instance id, status)`` of the user's instances, oldest first; nothing is decoded.
        SQL on ``workflow_status.attributes`` (JSON; DBOS's own attribute filter is PostgreSQL-only)."""
        engine = self._sql()
        label = (f"json_extract(attributes, '$.\"{SUBJECT_ATTRIBUTE}\"')" if engine.dialect.name == "sqlite"
                 else f"attributes ->> '{SUBJECT_ATTRIBUTE}'")
        with engine.connect() as connection:
            rows = connection.execute(text(
                f"SELECT workflow_uuid, status FROM {self._table('workflow_status')} "
                f"WHERE name = :name AND {label} = :key ORDER BY created_at, workflow_uuid"),
                {"name": WORKFLOW_NAME, "key": subject_key(tenant, user)}).all()
        return [(row.workflow_uuid, row.status) for row in rows]

    def operations_about(self, instance_ids: list[str]) -> list[tuple[str, str]]:
        """``(id, status)`` of the write-then-wake operations about these instances (a task's
        completion, an agent's answer: their inputs are the instance's data), found by their ids
        (:func:`~xflow_runtime.engine.durable.wakes.operation_prefix`); nothing is decoded."""
        if not instance_ids:
            return []
        found: list[tuple[str, str]] = []
        with self._sql().connect() as connection:
            for instance_id in instance_ids:
                pattern = _like_escaped(operation_prefix(instance_id)) + "%"
                rows = connection.execute(text(
                    f"SELECT workflow_uuid, status FROM {self._table('workflow_status')} "
                    "WHERE name = :name AND workflow_uuid LIKE :pattern ESCAPE '\\'"),
                    {"name": WAKE_WORKFLOW_NAME, "pattern": pattern}).all()
                found += [(row.workflow_uuid, row.status) for row in rows]
        return found

    def export(self, tenant: str, user: str) -> list[dict[str, Any]]:
        """The user's instances with input, output, error and history, read through DBOS's
        client (which decodes DBOS's own records)."""
        ids = [instance_id for instance_id, _ in self.instances(tenant, user)]
        if not ids:
            return []
        client = self._dbos()
        exported = []
        for status in client.list_workflows(workflow_ids=ids):
            request = _request(status.input)
            exported.append({
                "instance_id": status.workflow_id, "status": status.status,
                "workflow": (request.get("workflow") or {}).get("id"),
                "created_at": status.created_at, "updated_at": status.updated_at,
                "input": request.get("input"), "output": status.output,
                "error": None if status.error is None else str(status.error),
                "history": _history(client, status.workflow_id),
            })
        return exported

    def erase(self, tenant: str, user: str) -> tuple[dict[str, int], list[str]]:
        """Cancel the user's unfinished instances, delete every row of all of them; return the
        rows deleted per table and the ids cancelled. Raises :class:`DurableErasureFailed` when
        a row is left (a second call retries). On SQLite the deleted text stays in the WAL until
        :meth:`checkpoint` completes: the caller runs it and reads its answer."""
        return self._erase_found(self.instances(tenant, user))

    def erase_instance(self, instance_id: str) -> tuple[dict[str, int], list[str]]:
        """:meth:`erase` for one instance, by id (one whose start raced an erasure of its user)."""
        with self._sql().connect() as connection:
            rows = connection.execute(text(
                f"SELECT workflow_uuid, status FROM {self._table('workflow_status')} WHERE workflow_uuid = :id"),
                {"id": instance_id}).all()
        return self._erase_found([(row.workflow_uuid, row.status) for row in rows])

    def _erase_found(self, found: list[tuple[str, str]]) -> tuple[dict[str, int], list[str]]:
        found += self.operations_about([instance_id for instance_id, _ in found])
        ids = [instance_id for instance_id, _ in found]
        cancelled = [instance_id for instance_id, status in found if status not in _FINAL]
        if cancelled:
            self._dbos().cancel_workflows(cancelled)
        counts = {table: 0 for table, _ in INSTANCE_TABLES}
        if ids:
            counts = self._delete(ids)
        left = self.count(ids)
        if any(left.values()):
            raise DurableErasureFailed(f"rows of the user's instances are still in {self.display_url}: "
                                       f"{ {t: n for t, n in left.items() if n} }; retry the erasure")
        return counts, cancelled

    def count(self, ids: list[str]) -> dict[str, int]:
        counts = {table: 0 for table, _ in INSTANCE_TABLES}
        if ids:
            with self._sql().connect() as connection:
                for table, column in INSTANCE_TABLES:
                    counts[table] = connection.execute(
                        text(f"SELECT count(*) FROM {self._table(table)} WHERE {column} IN :ids")
                        .bindparams(_ids()), {"ids": ids}).scalar_one()
        return counts

    def _delete(self, ids: list[str]) -> dict[str, int]:
        engine = self._sql()
        counts: dict[str, int] = {}
        with write_transaction(engine) as connection:
            if engine.dialect.name == "sqlite":
                connection.exec_driver_sql("PRAGMA secure_delete = ON")  # zero the freed pages
            else:  # lock the instances' rows: a DBOS write in flight for them waits, then fails
                connection.execute(text(f"SELECT workflow_uuid FROM {self._table('workflow_status')} "
                                        "WHERE workflow_uuid IN :ids FOR UPDATE").bindparams(_ids()), {"ids": ids})
            for table, column in INSTANCE_TABLES:
                counts[table] = connection.execute(
                    text(f"DELETE FROM {self._table(table)} WHERE {column} IN :ids").bindparams(_ids()),
                    {"ids": ids}).rowcount or 0
        return counts

    def checkpoint(self, wait_s: float = CHECKPOINT_WAIT_S) -> bool:
        """Move a SQLite store's WAL into its file and empty it, waiting up to ``wait_s`` for
        readers: the deleted rows' old page images live there until then. Whether it completed
        (:func:`~xflow_runtime.storage.database.checkpoint_wal`; always, even when this erasure
        found nothing: a rerun after an incomplete one must finish the job)."""
        return checkpoint_wal(self._sql(), wait_s=wait_s)

    @property
    def wal_file(self) -> str:
        """Where the old page images of a SQLite store wait for a checkpoint (for messages)."""
        path = sqlite_path(self.url)
        return f"{path}-wal" if path is not None else self.display_url

    def _sql(self) -> Engine:
        if self._engine is None:
            self._engine = create_database_engine(self.url, wal=False)  # DBOS owns its file's journal mode
        return self._engine

    def _schema(self) -> str | None:
        return None if self._sql().dialect.name == "sqlite" else POSTGRES_SCHEMA

    def _table(self, name: str) -> str:
        schema = self._schema()
        return f'"{schema}"."{name}"' if schema else f'"{name}"'

    def _dbos(self) -> DBOSClient:
        if self._client is None:
            try:
                refuse_pickle()
                self._client = DBOSClient(system_database_url=self.url, application_name="xflow",
                                          serializer=SERIALIZER)
            except Exception as error:
                raise DurableEngineError(f"cannot open the durable store {self.display_url}: "
                                         f"{describe_error(error)}") from error
        return self._client


def _like_escaped(text_: str) -> str:
    return text_.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _ids() -> Any:
    return bindparam("ids", expanding=True)


def _request(inputs: Any) -> dict[str, Any]:
    args = inputs.get("args") if isinstance(inputs, dict) else getattr(inputs, "args", None)
    return args[0] if args and isinstance(args[0], dict) else {}


def _history(client: DBOSClient, instance_id: str) -> list[Any]:
    from dbos._error import DBOSStreamTimeoutError

    records: list[Any] = []
    try:
        for batch in client.read_stream(instance_id, HISTORY_STREAM, timeout_seconds=0.05):
            records.extend(batch)
    except DBOSStreamTimeoutError:
        pass  # a running instance: nothing more written yet
    return records

