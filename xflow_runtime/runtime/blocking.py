"""``run_sync``: the blocking one-shot over :class:`~xflow_runtime.runtime.core.Runtime`, for
scripts and tests that have no event loop of their own."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Mapping

from xflow_runtime.runtime.core import EngineName, Runtime


def run_sync(workflow: str | Path, input: Any = None, *, engine: EngineName = "inprocess",
             events: list[Mapping[str, Any]] | None = None, instance_id: str | None = None,
             tenant: str | None = None, user: str | None = None, **runtime_options: Any) -> Any:
    """Load ``workflow``, run one instance to completion and return its output (blocking).
    ``events`` are delivered in order right after the start; ``tenant``/``user`` as for
    :meth:`Runtime.start`. Not for use inside a running event loop: there, use :class:`Runtime`."""

    async def run() -> Any:
        async with Runtime(engine, **runtime_options) as runtime:
            handle = await runtime.start(runtime.load(workflow), input, instance_id=instance_id,
                                         tenant=tenant, user=user)
            for event in events or ():
                await handle.send_event(event)
            return await handle.result()

    return asyncio.run(run())
