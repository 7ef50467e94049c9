"""Erasing a user (GDPR art. 17) from every store that holds their data.

    receipt = await erase_user("u-1", tenant="acme")             # the stores of $XFLOW_DATABASE_URL
    receipt = await erase_user("u-1", database_url="postgresql://…")

The stores are those of :func:`xflow_runtime.settings.locate` — the same rule ``xflow run``
uses. In order:

1. **memory** (when its tables exist): in one transaction, the user's tombstone (the erasure
   epoch of their subject row, keyed by a hash) is bumped and every row of the user in every agent
   is deleted (``memory.longterm.privacy.erase``). Writers of the user's data compare the epoch
   they started under with the tombstone in the transaction that writes, so an extraction job or
   an instance step in flight cannot write the user back;
2. **durable** (when DBOS's tables exist): the user's instances (found by their subject label)
   are cancelled if unfinished, then every row of them is deleted
   (:mod:`xflow_runtime.engine.durable.subjects`).

The receipt counts rows per store and table. Any failure raises (nothing reports success after
a partial erasure); every step is idempotent, so running the erasure again completes it, and a
second erasure of the same user deletes nothing (zeros).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from xflow_runtime.errors import XFlowError
from xflow_runtime.settings import StoreLocations, locate, redact

_log = logging.getLogger("xflow_runtime.privacy")
StoreName = Literal["memory", "durable"]


@dataclass(frozen=True)
class StoreErasure:
    """What one store held of the user: rows deleted per table (``present`` False: the store does
    not exist at ``location``, so it held nothing)."""

    store: StoreName
    location: str
    present: bool
    deleted: Mapping[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.deleted.values())


@dataclass(frozen=True)
class UserErasureReceipt:
    tenant: str
    user: str
    stores: tuple[StoreErasure, ...]
    cancelled_instances: tuple[str, ...] = ()
    #: the tombstone's epoch after this erasure (``None``: no memory store)
    erasure_epoch: int | None = None

    @property
    def total(self) -> int:
        return sum(store.total for store in self.stores)

    def store(self, name: StoreName) -> StoreErasure:
        return next(store for store in self.stores if store.store == name)

    def to_dict(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "user": self.user, "erasure_epoch": self.erasure_epoch,
                "cancelled_instances": list(self.cancelled_instances),
                "stores": {s.store: {"location": s.location, "present": s.present, "deleted": dict(s.deleted)}
                           for s in self.stores}}


def check_subject(tenant: str, user: str) -> None:
    if not isinstance(tenant, str) or not tenant or not isinstance(user, str) or not user:
        raise XFlowError("erasure and export need a non-empty tenant and user")


async def erase_user(user: str, *, tenant: str = "default", database_url: str | None = None) -> UserErasureReceipt:
    """Erase everything stored about ``user`` in ``tenant``, in the stores ``database_url`` (or
    ``$XFLOW_DATABASE_URL``, or the default) names. Raises on any failure; retry to complete."""
    check_subject(tenant, user)
    return await asyncio.to_thread(_erase, locate(database_url), tenant, user)


def _erase(where: StoreLocations, tenant: str, user: str) -> UserErasureReceipt:
    # the user's instances, read before anything is deleted: memory holds their human tasks
    memory, epoch = _erase_memory(where.memory_url, tenant, user, _instance_ids(where.durable_url, tenant, user))
    durable, cancelled = _erase_durable(where.durable_url, tenant, user)
    receipt = UserErasureReceipt(tenant, user, (memory, durable), tuple(cancelled), epoch)
    _log.info("erased a user in tenant %r: %s", tenant, {s.store: dict(s.deleted) for s in receipt.stores})
    return receipt


def _instance_ids(url: str, tenant: str, user: str) -> list[str]:
    from xflow_runtime.engine.durable.subjects import DurableSubjects

    store = DurableSubjects(url)
    try:
        return [instance_id for instance_id, _ in store.instances(tenant, user)] if store.present() else []
    finally:
        store.close()


def _erase_memory(url: str, tenant: str, user: str, instance_ids: list[str]) -> tuple[StoreErasure, int | None]:
    from xflow_runtime.memory.longterm import privacy, scope_index
    from xflow_runtime.storage.database import open_existing_database, write_transaction

    engine = open_existing_database(url)
    location = redact(url)
    if engine is None:
        return StoreErasure("memory", location, False), None
    try:
        with write_transaction(engine) as connection:
            counts, epoch = privacy.erase(connection, tenant, user, instance_ids)
        scope_index.drop_for_user(engine, tenant, user)  # PostgreSQL: the user's own HNSW indexes
        if engine.dialect.name == "sqlite":  # old page images in the WAL go with a checkpoint
            with engine.connect() as connection:
                connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        engine.dispose()
    return StoreErasure("memory", location, True, counts), epoch


def _erase_durable(url: str, tenant: str, user: str) -> tuple[StoreErasure, list[str]]:
    from xflow_runtime.engine.durable.subjects import DurableSubjects

    store = DurableSubjects(url)
    try:
        if not store.present():
            return StoreErasure("durable", store.display_url, False), []
        counts, cancelled = store.erase(tenant, user)
    finally:
        store.close()
    return StoreErasure("durable", store.display_url, True, counts), cancelled
