"""Waking a receiver in this process at once after a message to it is committed (SQLite).

On PostgreSQL a committed message wakes its receiver through LISTEN/NOTIFY. On SQLite DBOS has
no push: a listener thread re-reads, for *every* waiting receive, whether a message arrived, at
the polling interval. At 50 ms that was one transaction per waiting instance twenty times a
second (100 waiting conversations: ~150 ms of CPU per second doing nothing), the largest share of
a durable chat turn's CPU. Now a message sent from this process (``Runtime.send_event`` /
``send_message``, the wake-ups of write-then-wake) sets its receiver's in-memory event right after
DBOS committed it, and the listener only has to catch messages written by *other* processes
(``xflow send`` on the same SQLite file), at :data:`SQLITE_POLL_SECONDS`.

This reads two DBOS internals (``_sys_db.notifications_map`` and ``_sys_db._waiter``, the key
DBOS registers a receive under), pinned by ``tests/engine/durable/test_local_wake.py`` and by the
``dbos`` version range. If they change, the wake is skipped and the listener still delivers.
"""

from __future__ import annotations

import logging
import os

_log = logging.getLogger("xflow_runtime.engine")

#: How often DBOS's SQLite listener looks for messages written by other processes (default;
#: ``$XFLOW_SQLITE_POLL_SECONDS`` at launch): the latency of ``xflow send`` to an instance another
#: process runs on the same SQLite file. Messages sent from the running process wake at once.
SQLITE_POLL_SECONDS = 1.0
#: PostgreSQL wakes receivers by LISTEN/NOTIFY; this interval only matters if that is off.
POSTGRES_POLL_SECONDS = 0.05


def poll_seconds(database_url: str) -> float:
    """DBOS's ``notification_listener_polling_interval_sec`` for this store."""
    if not database_url.startswith("sqlite"):
        return POSTGRES_POLL_SECONDS
    return float(os.environ.get("XFLOW_SQLITE_POLL_SECONDS") or SQLITE_POLL_SECONDS)


def wake_receiver(instance_id: str, topic: str) -> None:
    """Set the in-memory event of ``instance_id``'s receive on ``topic`` if it waits in this
    process. Call only after the message is committed: the woken receive reads it then. (On
    PostgreSQL the trigger's NOTIFY would wake it a moment later; waking it twice is harmless.)"""
    try:
        from dbos._dbos import _get_dbos_instance

        system_db = _get_dbos_instance()._sys_db
        key, _ = system_db._waiter(instance_id, topic)
        signal = system_db.notifications_map.get(key)
    except Exception as error:  # noqa: BLE001 - DBOS internals changed: the listener still delivers
        _log.debug("no local wake-up for %s: %s", instance_id, error)
        return
    if signal is not None:
        signal.set()
