"""Reading (and messaging) the durable store from outside a running runtime, without launching
DBOS: ``xflow list`` / ``xflow show`` must not start a queue worker that could pick up someone
else's instance. Built on :class:`dbos.DBOSClient`, which talks only to the system database.
"""

from __future__ import annotations

import builtins
import asyncio
from typing import Any

from dbos import DBOSClient
from dbos._error import DBOSStreamTimeoutError

from xflow_runtime.engine.durable.engine import (
    DurableEngineError, _redact, attach_log_handler, describe_error, resolve_database_url,
)
from xflow_runtime.engine.durable.names import EVENT_ENVELOPE_KEY, HISTORY_STREAM, WORKFLOW_NAME
from xflow_runtime.engine.serializer import SERIALIZER, refuse_pickle

_READ_TIMEOUT_SECONDS = 0.05


class DurableStore:
    """A read-mostly view of the instances in one system database."""

    def __init__(self, database_url: str | None = None) -> None:
        self.database_url = resolve_database_url(database_url)
        self.display_url = _redact(self.database_url)
        self._client: DBOSClient | None = None

    async def open(self) -> "DurableStore":
        if self._client is None:
            attach_log_handler()
            refuse_pickle()
            try:
                self._client = await asyncio.to_thread(
                    DBOSClient, system_database_url=self.database_url, application_name="xflow",
                    serializer=SERIALIZER)
            except Exception as error:
                raise DurableEngineError(
                    f"cannot open the durable store {self.display_url}: {describe_error(error)}") from error
        return self

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await asyncio.to_thread(client.destroy)

    async def __aenter__(self) -> "DurableStore":
        return await self.open()

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    @property
    def client(self) -> DBOSClient:
        assert self._client is not None, "open the store first"
        return self._client

    async def list(self, *, status: str | None = None, limit: int | None = None) -> list[Any]:
        try:
            return await self.client.list_workflows_async(name=WORKFLOW_NAME, status=status,
                                                          limit=limit, sort_desc=True)
        except Exception as error:  # no tables yet: nothing was ever run against this store
            if _is_missing_schema(error):
                return []
            raise

    async def status(self, instance_id: str) -> Any | None:
        found = await self.client.list_workflows_async(workflow_ids=[instance_id])
        return found[0] if found else None

    async def history(self, instance_id: str) -> builtins.list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        try:
            async for record in self.client.read_stream_async(
                    instance_id, HISTORY_STREAM, timeout_seconds=_READ_TIMEOUT_SECONDS):
                records.extend(record)  # each stream value is one flushed batch
        except DBOSStreamTimeoutError:
            pass  # a running instance: the next record is not written yet
        return records

    async def send(self, instance_id: str, topic: str, payload: Any,
                   idempotency_key: str | None = None) -> None:
        await self.client.send_async(instance_id, {EVENT_ENVELOPE_KEY: payload}, topic,
                                     idempotency_key=idempotency_key)


def _is_missing_schema(error: Exception) -> bool:
    text = str(error).lower()
    return "no such table" in text or "does not exist" in text
