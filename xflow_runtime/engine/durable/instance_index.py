"""Pages of instances and the recipients of an event, read by SQL on DBOS's ``workflow_status``
through indexes of ours, never by listing every instance.

The tenant, workflow, user (subject key) and correlation key of an instance are DBOS workflow
attributes written at start (:func:`~.instance_keys.instance_attributes`); ``created_at`` and
``status`` are DBOS's own columns. :meth:`InstanceIndex.ensure` creates expression indexes on those
attributes (``CREATE INDEX IF NOT EXISTS``, at every launch: an upgrade of DBOS that rebuilt the
table gets them back) and labels the instances recorded before the attributes existed. The table
and column names are DBOS's storage format (as for erasure, ``subjects.py``), pinned by
``tests/engine/test_instance_index.py``: check them when upgrading DBOS.

Keyset order is (created_at, workflow_uuid) descending, ids compared by code point (``COLLATE "C"``
on PostgreSQL; SQLite's default), the order Python sorts them in.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Iterable

from sqlalchemy import Engine, bindparam, text

from xflow_runtime.engine.durable.engine import describe_error
from xflow_runtime.engine.durable.instance_keys import (
    CORRELATION_ATTRIBUTE, FINAL_STATUSES, LIVE_STATUSES, TENANT_ATTRIBUTE, WORKFLOW_ATTRIBUTE, InstanceCounts,
    InstanceQuery, first_millisecond, instance_attributes,
)
from xflow_runtime.engine.durable.names import WORKFLOW_NAME
from xflow_runtime.privacy.subject import SUBJECT_ATTRIBUTE, subject_key

log = logging.getLogger(__name__)
#: DBOS's schema on PostgreSQL (SQLite has none).
POSTGRES_SCHEMA = "dbos"
#: index name → its columns, with ``{tenant}``-style placeholders for the attribute expressions.
INDEXES = {
    "xflow_instances_by_tenant": "{tenant}, created_at, {uuid}",
    "xflow_instances_by_subject": "{subject}, created_at, {uuid}",
    "xflow_instances_by_workflow": "{tenant}, {workflow}, created_at, {uuid}",
    "xflow_instances_by_status": "{tenant}, status, created_at, {uuid}",
    "xflow_instances_by_correlation": "{tenant}, {correlation}, status",
}
#: The instances not labelled yet (recorded by an older runtime), so finding them costs a probe:
#: partial on our workflow name (a literal: SQLite uses a partial index only for the same text).
UNLABELLED_INDEX = "xflow_instances_unlabelled"
#: Ids bound in one query (SQLite before 3.32 allows 999 variables in a statement).
_IDS_PER_QUERY = 900
_LOCK = 0x78666C6F77  # a PostgreSQL advisory lock: workers launching at once create the indexes once


class InstanceIndex:
    """SQL on the system database ``engine`` (SQLite or PostgreSQL) of a launched DBOS."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        postgres = engine.dialect.name == "postgresql"
        self.table = f"{POSTGRES_SCHEMA}.workflow_status" if postgres else "workflow_status"
        self._postgres = postgres
        # the same text in the indexes and the queries: that is how the database matches them
        self.expr = {"tenant": self._attribute(TENANT_ATTRIBUTE), "subject": self._attribute(SUBJECT_ATTRIBUTE),
                     "workflow": self._attribute(WORKFLOW_ATTRIBUTE),
                     "correlation": self._attribute(CORRELATION_ATTRIBUTE),
                     "uuid": 'workflow_uuid COLLATE "C"' if postgres else "workflow_uuid"}

    def _attribute(self, name: str) -> str:
        return f"(attributes ->> '{name}')" if self._postgres else f"json_extract(attributes, '$.\"{name}\"')"

    # --- setup ---------------------------------------------------------------------------------
    def ensure(self) -> None:
        """Create the indexes (if missing). Runs at launch; a failure is logged, not raised: lists
        and delivery stay correct without them, only slower."""
        try:
            with self.engine.begin() as connection:
                if self._postgres:
                    connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK})
                for name, columns in INDEXES.items():
                    connection.execute(text(f"CREATE INDEX IF NOT EXISTS {name} ON {self.table} "
                                            f"({columns.format(**self.expr)})"))
                connection.execute(text(f"CREATE INDEX IF NOT EXISTS {UNLABELLED_INDEX} ON {self.table} (created_at) "
                                        f"WHERE {self._unlabelled}"))
        except Exception as error:  # noqa: BLE001 - e.g. no right to create indexes in DBOS's schema
            log.warning("cannot create the instance indexes on %s: %s", self.table, describe_error(error))

    @property
    def _unlabelled(self) -> str:
        # another expression than the other indexes' (none of them can answer it, the partial one does)
        missing = (f"(attributes -> '{TENANT_ATTRIBUTE}')" if self._postgres
                   else f"json_type(attributes, '$.\"{TENANT_ATTRIBUTE}\"')")
        return f"name = '{WORKFLOW_NAME}' AND {missing} IS NULL"

    def unlabelled(self, limit: int) -> list[str]:
        """Instances without the tenant attribute (recorded by an older runtime), up to ``limit``."""
        with self.engine.connect() as connection:
            rows = connection.execute(text(f"SELECT workflow_uuid FROM {self.table} WHERE {self._unlabelled} "
                                           "LIMIT :limit"), {"limit": limit}).all()
        return [row[0] for row in rows]

    # --- reads ---------------------------------------------------------------------------------
    def page(self, query: InstanceQuery) -> list[str]:
        """The ids of one page of ``query``, newest first."""
        where = ["name = :name", f"{self.expr['tenant']} = :tenant"]
        params: dict[str, Any] = {"name": WORKFLOW_NAME, "tenant": query.tenant, "limit": query.limit}
        expanding: list[str] = []
        if query.user is not None:
            where.append(f"{self.expr['subject']} = :subject")
            params["subject"] = query.subject
        if query.workflow is not None:
            where.append(f"{self.expr['workflow']} = :workflow")
            params["workflow"] = query.workflow
        if query.started_from is not None:
            where.append("created_at >= :from_ms")
            params["from_ms"] = first_millisecond(query.started_from)
        if query.started_before is not None:
            where.append("created_at < :before_ms")
            params["before_ms"] = first_millisecond(query.started_before)
        if query.after is not None:
            seconds, after_id = query.after
            ms = first_millisecond(seconds)
            params.update(after_ms=ms, after_id=after_id)
            if ms / 1000.0 == seconds:  # the cursor's own millisecond: ids below its id
                where.append(f"created_at <= :after_ms AND (created_at < :after_ms OR {self.expr['uuid']} < :after_id)")
            else:  # not a millisecond of any row (a cursor made by hand): rows strictly before
                where.append("created_at < :after_ms")
        if query.statuses is not None:
            either = []
            if query.statuses:
                either.append("status IN :statuses")
                params["statuses"] = list(query.statuses)
                expanding.append("statuses")
            unsettled = "(status IS NULL OR status NOT IN :final)"
            if query.unsettled or query.unsettled_ids:
                params["final"] = list(FINAL_STATUSES)
                expanding.append("final")
            if query.unsettled:
                either.append(unsettled)
            elif query.unsettled_ids:
                either.append(f"({unsettled} AND workflow_uuid IN :unsettled_ids)")
                params["unsettled_ids"] = list(query.unsettled_ids)
                expanding.append("unsettled_ids")
            where.append("(" + " OR ".join(either or ["1 = 0"]) + ")")
        if query.except_ids:
            where.append("workflow_uuid NOT IN :except_ids")
            params["except_ids"] = list(query.except_ids)
            expanding.append("except_ids")
        statement = text(f"SELECT workflow_uuid FROM {self.table} WHERE {' AND '.join(where)} "
                         f"ORDER BY created_at DESC, {self.expr['uuid']} DESC LIMIT :limit")
        return self._ids(statement, params, expanding)

    def recipients(self, tenant: str, user: str | None, keys: Iterable[str]) -> list[str]:
        """The live instances of ``tenant`` (of ``user``, if given) whose correlation key is one of
        ``keys``: the candidates an event may reach (the caller checks correlation). Unordered: an
        order by time would make the database walk every instance of the tenant instead."""
        where = ["name = :name", f"{self.expr['tenant']} = :tenant", f"{self.expr['correlation']} IN :keys",
                 "status IN :live"]
        params: dict[str, Any] = {"name": WORKFLOW_NAME, "tenant": tenant, "keys": list(keys),
                                  "live": list(LIVE_STATUSES)}
        if user is not None:
            where.append(f"{self.expr['subject']} = :subject")
            params["subject"] = subject_key(tenant, user)
        statement = text(f"SELECT workflow_uuid FROM {self.table} WHERE {' AND '.join(where)}")
        return self._ids(statement, params, ["keys", "live"])

    def count_by_status(self) -> dict[str | None, int]:
        """How many instances of every tenant the store holds, by DBOS status: one aggregate the
        database answers in one pass over ``workflow_status`` (no row reaches Python)."""
        statement = text(f"SELECT status, COUNT(*) FROM {self.table} WHERE name = :name GROUP BY status")
        with self.engine.connect() as connection:
            return {row[0]: int(row[1]) for row in connection.execute(statement, {"name": WORKFLOW_NAME}).all()}

    def statuses_of(self, ids: Iterable[str]) -> dict[str, str | None]:
        """The DBOS status of each of ``ids`` the store holds (by primary key, a batch a query)."""
        wanted = sorted(set(ids))
        statement = text(f"SELECT workflow_uuid, status FROM {self.table} WHERE name = :name "
                         "AND workflow_uuid IN :ids").bindparams(bindparam("ids", expanding=True))
        found: dict[str, str | None] = {}
        with self.engine.connect() as connection:
            for start in range(0, len(wanted), _IDS_PER_QUERY):
                batch = {"name": WORKFLOW_NAME, "ids": wanted[start:start + _IDS_PER_QUERY]}
                found.update((row[0], row[1]) for row in connection.execute(statement, batch).all())
        return found

    def _ids(self, statement: Any, params: dict[str, Any], expanding: list[str]) -> list[str]:
        statement = statement.bindparams(*(bindparam(name, expanding=True) for name in expanding))
        with self.engine.connect() as connection:
            return [row[0] for row in connection.execute(statement, params).all()]


def label_old_instances(index: "InstanceIndex", batch: int = 500) -> int:
    """Write the attributes of instances recorded without them (by a runtime before lists read an
    index: at launch, and before each list or delivery, for those an older process of a fleet in a
    rolling upgrade starts meanwhile) through DBOS's public API; one whose request cannot be read
    gets an empty tenant (listed to nobody, as before it could not be described). Returns how many
    were labelled; finding none is one probe of a partial index."""
    from dbos import DBOS

    done: set[str] = set()
    while True:
        ids = [i for i in index.unlabelled(batch) if i not in done]
        if not ids:
            return len(done)
        for instance_id in ids:
            try:
                status = DBOS.get_workflow_status(instance_id)
                request = _recorded_request(status)
                attributes = instance_attributes(request) if request is not None else {TENANT_ATTRIBUTE: ""}
            except Exception:  # noqa: BLE001 - a record we refuse to read (pickle) or cannot decode
                attributes = {TENANT_ATTRIBUTE: ""}
            DBOS.update_workflow_attributes(instance_id, attributes, merge=True)
            done.add(instance_id)


def _recorded_request(status: Any) -> dict[str, Any] | None:
    inputs = getattr(status, "input", None)
    args = inputs.get("args") if isinstance(inputs, dict) else getattr(inputs, "args", None)
    request = args[0] if args else None
    return request if isinstance(request, dict) else None


@dataclass
class IndexedInstances:
    """What the durable engine lists and delivers events by: the index on its own connection pool,
    and DBOS's statuses of the ids it finds, in the index's order."""

    index: InstanceIndex

    @classmethod
    def open(cls, database_url: str) -> "IndexedInstances":
        """Create the indexes (if missing) and label the instances recorded before they existed."""
        from xflow_runtime.storage.database import create_database_engine

        index = InstanceIndex(create_database_engine(database_url, wal=False))
        index.ensure()
        try:
            label_old_instances(index)
        except Exception as error:  # noqa: BLE001 - lists miss them until a later launch labels them
            log.warning("cannot label the instances recorded before the instance indexes: %s", describe_error(error))
        return cls(index)

    def close(self) -> None:
        self.index.engine.dispose()

    async def page(self, query: InstanceQuery) -> list[Any]:
        await self._label_new_old_instances()
        return await self._statuses(await asyncio.to_thread(self.index.page, query))

    async def recipients(self, tenant: str, user: str | None, keys: list[str]) -> list[Any]:
        await self._label_new_old_instances()
        return await self._statuses(await asyncio.to_thread(self.index.recipients, tenant, user, keys))

    async def counts(self, ids: Iterable[str]) -> InstanceCounts:
        """Every instance counted by status, and the status of ``ids``: aggregates, no row read."""
        wanted = list(ids)
        by_status = await asyncio.to_thread(self.index.count_by_status)
        of = await asyncio.to_thread(self.index.statuses_of, wanted) if wanted else {}
        return InstanceCounts(by_status, of)

    async def _label_new_old_instances(self) -> None:
        """What an older process of a rolling upgrade started since (usually nothing: one probe)."""
        await asyncio.to_thread(label_old_instances, self.index)

    @staticmethod
    async def _statuses(ids: list[str]) -> list[Any]:
        from dbos import DBOS

        if not ids:
            return []
        statuses = {s.workflow_id: s for s in await DBOS.list_workflows_async(workflow_ids=ids, load_output=False)}
        return [statuses[i] for i in ids if i in statuses]  # an instance erased meanwhile is gone

