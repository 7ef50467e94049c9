"""An instance's trace context, stored as a DBOS workflow attribute (a JSON object of
``traceparent`` strings, never a pickled object; ``specs/observability.md``).

Both calls run on a thread without the workflow's context, like the replay's step listing
(:mod:`.replay`): DBOS then does a plain read or update instead of recording an
operation, so tracing on or off never changes an instance's recorded sequence.
"""

from __future__ import annotations

import asyncio
from typing import Any

from dbos import DBOS

from xflow_runtime.engine.durable.names import TRACE_ATTRIBUTE


async def read_trace(instance_id: str) -> dict[str, str] | None:
    """The stored trace context of ``instance_id``, if an earlier execution stored one."""

    def read() -> Any:
        status = DBOS.get_workflow_status(instance_id)
        return (getattr(status, "attributes", None) or {}) if status is not None else {}

    attributes = await asyncio.get_running_loop().run_in_executor(None, read)
    stored = attributes.get(TRACE_ATTRIBUTE) if isinstance(attributes, dict) else None
    if not isinstance(stored, dict):
        return None
    return {key: value for key, value in stored.items() if isinstance(value, str)}


async def write_trace(instance_id: str, carrier: dict[str, str]) -> None:
    """Store ``carrier`` (merged: the instance's other attributes are kept)."""

    def write() -> None:
        DBOS.update_workflow_attributes(instance_id, {TRACE_ATTRIBUTE: carrier}, merge=True)

    await asyncio.get_running_loop().run_in_executor(None, write)
