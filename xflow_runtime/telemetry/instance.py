"""The ``invoke_workflow`` span of one execution of an instance, and how a resumed durable
instance joins its trace (``specs/observability.md``, "One trace per instance").

- In-process: one span, child of whatever span is current where the instance was started.
- Durable, first execution: the same; its ``traceparent`` is stored with the instance as the
  DBOS workflow attribute ``xflow.trace`` (``{"root": …, "last": …}``), a JSON object.
- Durable, any later execution (crash recovery, ``resume``, a runtime that restarted while the
  instance waited): a new ``invoke_workflow`` span whose parent is the stored root (same trace,
  same sampling decision) with a link to the span of the execution it continues (``last``), and
  ``xflow.resumed=true``; then ``last`` names it. What it replays from history emits no span
  (deferred spans, :mod:`.spans`).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, AsyncIterator

from xflow_runtime.telemetry.spans import Telemetry, context_of, link_to, traceparent_of

_log = logging.getLogger("xflow.telemetry")


@contextlib.asynccontextmanager
async def traced_execution(telemetry: Telemetry, plan: Any, instance_id: str, port: Any) -> AsyncIterator[Any]:
    version = getattr(plan, "version", None)
    if not hasattr(port, "load_recording"):  # the in-process engine: nothing outlives the process
        with telemetry.workflow(plan.workflow_id, version, instance_id) as handle:
            yield handle
        return
    from xflow_runtime.engine.durable.trace import read_trace, write_trace

    try:
        stored = await read_trace(instance_id)
    except Exception as error:  # noqa: BLE001 - tracing never fails an instance
        _log.warning("instance %s: cannot read its stored trace context: %s", instance_id, error)
        stored = None
    resumed = await port.load_recording()
    root = (stored or {}).get("root")
    parent = context_of(root)
    links = link_to(stored.get("last"), "resumed") if stored else []
    with telemetry.workflow(plan.workflow_id, version, instance_id, resumed=resumed,
                            parent_context=parent, links=links) as handle:
        mine = traceparent_of(handle)
        if mine is not None:
            try:
                await write_trace(instance_id, {"root": (root if parent is not None else None) or mine, "last": mine})
            except Exception as error:  # noqa: BLE001 - a later resume then starts a trace of its own
                _log.warning("instance %s: cannot store its trace context: %s", instance_id, error)
        yield handle
