"""Names and constants of the durable engine, importable without importing DBOS.

Changing any of these changes what is recorded in existing system databases: treat them as a
storage format (see ``specs/durability.md``).
"""

from __future__ import annotations

import os

from xflow_runtime.error_codes import PROCESS_CRASHED
from xflow_runtime.settings import DEFAULT_DURABLE_URL

#: DBOS application version, pinned. DBOS recovers only the PENDING workflows recorded under the
#: running application version, and by default derives that version from a hash of the workflow
#: functions' source, so any upgrade of xflow-runtime would orphan running instances. We pin it
#: to the version of the *replay contract* (which engine calls an instance makes, in which
#: order). Bump it only when an upgrade changes that sequence incompatibly; instances recorded
#: under the old value must then be finished with the old release. 3: records are JSON, not pickle.
APPLICATION_VERSION = "xflow-durable-3"

#: The name under which the one xflow workflow function is registered with DBOS.
WORKFLOW_NAME = "xflow.instance"

#: The write-then-wake operations (engine/durable/wakes.py): their DBOS name, and the start of
#: their ids (then the instance an operation is about, when it has one).
WAKE_WORKFLOW_NAME = "xflow.write-then-wake"
OPERATION_PREFIX = "xflow-wake:"


def operation_prefix(instance_id: str) -> str:
    """The id of every operation about ``instance_id`` starts with this: erasure finds an erased
    user's operations by it (their inputs, e.g. a task's form data, are the instance's data)."""
    return f"{OPERATION_PREFIX}{instance_id}:"


#: DBOS stream holding an instance's history records (keyed by instance id + offset).
HISTORY_STREAM = "xflow.history"

#: Messages sent to an instance are wrapped as ``{EVENT_ENVELOPE_KEY: payload}``.
EVENT_ENVELOPE_KEY = "payload"

#: Stand-in for "wait for ever" (DBOS receives always take a timeout): about 100 years.
FOREVER_SECONDS = 100 * 365 * 24 * 3600.0

#: How many times an instance may be recovered after its process ended while running it (a crash,
#: a kill, a step that calls ``os._exit`` or runs out of memory) before it is parked instead of
#: recovered again: DBOS's ``max_recovery_attempts`` (specs/limits.md). Read once, at import.
MAX_RECOVERY_ATTEMPTS = int(os.environ.get("XFLOW_MAX_RECOVERY_ATTEMPTS", "10"))

#: DBOS's status of a parked instance, and the error code we report for it.
PARKED_STATUS = "MAX_RECOVERY_ATTEMPTS_EXCEEDED"

#: The store when nothing is set: the one rule lives in :mod:`xflow_runtime.settings`.
DEFAULT_DATABASE_URL = DEFAULT_DURABLE_URL


def parked_error() -> dict[str, str]:
    """The error of a parked instance, as ``xflow show`` and ``result()`` report it."""
    return {"name": PROCESS_CRASHED, "code": PROCESS_CRASHED,
            "message": f"the instance was recovered {MAX_RECOVERY_ATTEMPTS} times after its process ended "
                       "(crash, kill, os._exit, out of memory) and is parked instead of being recovered "
                       "again; `xflow resume ID` tries it once more"}

#: DBOS workflow attribute holding an instance's trace context (JSON, ``specs/observability.md``):
#: ``{"root": <traceparent of the first execution's span>, "last": <the latest execution's>}``.
TRACE_ATTRIBUTE = "xflow.trace"
