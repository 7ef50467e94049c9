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

On SQLite, deleted rows' old page images stay in the ``-wal`` file until a checkpoint moves the
WAL into the database file and truncates it; a reader with a transaction open holds that back.
After both stores' rows are deleted, each store's WAL is checkpointed
(:func:`~xflow_runtime.storage.database.checkpoint_wal`, waiting up to ``checkpoint_wait``
seconds for readers) — on every run, also one that finds no rows left. If one does not complete,
:class:`ErasureIncomplete` is raised: the rows are deleted, old copies remain in the named WAL
files, and running the erasure again finishes the job.

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
from xflow_runtime.privacy.subject import ErasureIncomplete
from xflow_runtime.settings import StoreLocations, locate, redact, sqlite_path
from xflow_runtime.storage.database import CHECKPOINT_WAIT_S

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


async def erase_user(user: str, *, tenant: str = "default", database_url: str | None = None,
                     checkpoint_wait: float = CHECKPOINT_WAIT_S) -> UserErasureReceipt:
    """Erase everything stored about ``user`` in ``tenant``, in the stores ``database_url`` (or
    ``$XFLOW_DATABASE_URL``, or the default) names. Raises on any failure; retry to complete.
    ``checkpoint_wait``: seconds to wait for readers of a SQLite store's WAL, which holds old
    copies of the deleted rows until it is checkpointed (past it: :class:`ErasureIncomplete`)."""
    check_subject(tenant, user)
    return await asyncio.to_thread(_erase, locate(database_url), tenant, user, checkpoint_wait)


def _erase(where: StoreLocations, tenant: str, user: str, wait_s: float) -> UserErasureReceipt:
    # the user's instances, read before anything is deleted: memory holds their human tasks
    memory, epoch, memory_wal = _erase_memory(where.memory_url, tenant, user,
                                              _instance_ids(where.durable_url, tenant, user), wait_s)
    durable, cancelled, durable_wal = _erase_durable(where.durable_url, tenant, user, wait_s)
    receipt = UserErasureReceipt(tenant, user, (memory, durable), tuple(cancelled), epoch)
    remains = tuple(dict.fromkeys(wal for wal in (memory_wal, durable_wal) if wal))  # one file on PostgreSQL
    if remains:
        _log.warning("erasure of a user in tenant %r incomplete: old copies remain in %s", tenant, remains)
        raise ErasureIncomplete(receipt, remains)
    _log.info("erased a user in tenant %r: %s", tenant, {s.store: dict(s.deleted) for s in receipt.stores})
    return receipt


def _wal_file(url: str) -> str:
    path = sqlite_path(url)
    return f"{path}-wal" if path is not None else redact(url)


def _instance_ids(url: str, tenant: str, user: str) -> list[str]:
    from xflow_runtime.engine.durable.subjects import DurableSubjects

    store = DurableSubjects(url)
    try:
        return [instance_id for instance_id, _ in store.instances(tenant, user)] if store.present() else []
    finally:
        store.close()


def _erase_memory(url: str, tenant: str, user: str, instance_ids: list[str],
                  wait_s: float) -> tuple[StoreErasure, int | None, str | None]:
    """The memory store's part, and the WAL file still holding old copies (``None``: none)."""
    from xflow_runtime.memory.longterm import privacy, scope_index
    from xflow_runtime.storage.database import checkpoint_wal, open_existing_database, write_transaction

    engine = open_existing_database(url)
    location = redact(url)
    if engine is None:
        return StoreErasure("memory", location, False), None, None
    try:
        with write_transaction(engine) as connection:
            counts, epoch = privacy.erase(connection, tenant, user, instance_ids)
        scope_index.drop_for_user(engine, tenant, user)  # PostgreSQL: the user's own HNSW indexes
        checkpointed = checkpoint_wal(engine, wait_s=wait_s)  # old page images leave the WAL
    finally:
        engine.dispose()
    return StoreErasure("memory", location, True, counts), epoch, None if checkpointed else _wal_file(url)


def _erase_durable(url: str, tenant: str, user: str,
                   wait_s: float) -> tuple[StoreErasure, list[str], str | None]:
    from xflow_runtime.engine.durable.subjects import DurableSubjects

    store = DurableSubjects(url)
    try:
        if not store.present():
            return StoreErasure("durable", store.display_url, False), [], None
        counts, cancelled = store.erase(tenant, user)
        checkpointed = store.checkpoint(wait_s)  # also when nothing was left: a rerun finishes the job
    finally:
        store.close()
    return (StoreErasure("durable", store.display_url, True, counts), cancelled,
            None if checkpointed else store.wal_file)
