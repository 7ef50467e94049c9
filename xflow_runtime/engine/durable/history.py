"""Reading an instance's history back from the DBOS stream the durable port appends to."""

from __future__ import annotations

from typing import Any

from dbos import DBOS
from dbos._error import DBOSStreamTimeoutError

from xflow_runtime.engine.durable.names import HISTORY_STREAM

#: How long to wait for a record that is not written yet before deciding the stream is read.
_READ_TIMEOUT_SECONDS = 0.05


async def read_history(instance_id: str) -> list[dict[str, Any]]:
    """Every record written so far, in order. For a finished instance the stream ends by
    itself; for a running one, reading stops at the first record not written yet."""
    records: list[dict[str, Any]] = []
    try:
        async for record in DBOS.read_stream_async(instance_id, HISTORY_STREAM,
                                       timeout_seconds=_READ_TIMEOUT_SECONDS):
            records.extend(record)  # each stream value is one flushed batch
    except DBOSStreamTimeoutError:
        pass  # timed out waiting for the next record of a running instance
    return records
