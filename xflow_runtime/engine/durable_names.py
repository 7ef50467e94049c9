"""Names and constants of the durable engine, importable without importing DBOS.

Changing any of these changes what is recorded in existing system databases: treat them as a
storage format (see ``specs/durability.md``).
"""

from __future__ import annotations

from xflow_runtime.settings import DEFAULT_DURABLE_URL

#: DBOS application version, pinned. DBOS recovers only the PENDING workflows recorded under the
#: running application version, and by default derives that version from a hash of the workflow
#: functions' source, so any upgrade of xflow-runtime would orphan running instances. We pin it
#: to the version of the *replay contract* (which engine calls an instance makes, in which
#: order). Bump it only when an upgrade changes that sequence incompatibly; instances recorded
#: under the old value must then be finished with the old release.
APPLICATION_VERSION = "xflow-durable-2"

#: The name under which the one xflow workflow function is registered with DBOS.
WORKFLOW_NAME = "xflow.instance"

#: DBOS stream holding an instance's history records (keyed by instance id + offset).
HISTORY_STREAM = "xflow.history"

#: Messages sent to an instance are wrapped as ``{EVENT_ENVELOPE_KEY: payload}``.
EVENT_ENVELOPE_KEY = "payload"

#: Stand-in for "wait for ever" (DBOS receives always take a timeout): about 100 years.
FOREVER_SECONDS = 100 * 365 * 24 * 3600.0

#: The store when nothing is set: the one rule lives in :mod:`xflow_runtime.settings`.
DEFAULT_DATABASE_URL = DEFAULT_DURABLE_URL
