"""Waking a receiver in this process at once after a message to it is committed (SQLite).

On PostgreSQL a committed message wakes its receiver through LISTEN/NOTIFY. On SQLite DBOS has
no push: a listener thread re-reads, for *every* waiting receive, whether a message arrived, at
the polling interval. At 50 ms that was one transaction per waiting instance twenty times a
second (100 waiting conversations: ~150 ms of CPU per second doing nothing), the largest share of
a durable chat turn's CPU. Now a message sent from this process (``Runtime.send_event`` /
``send_message``, the wake-ups of write-then-wake) sets its receiver's in-memory event right after
DBOS committed it, and the listener only has to catch messages written by *other* processes
(``xflow send`` on the same SQLite file): every :data:`SQLITE_POLL_SECONDS` while more than
:data:`FEW_WAITING` receives wait here, every 50 ms while fewer do (DBOS's close joins the listener,
which sleeps out its interval: a command closes without waiting a second).

This reads DBOS internals (``_sys_db.notifications_map`` and ``_sys_db._waiter``, the key
DBOS registers a receive under, and the listener's interval attribute), pinned by the two local-wake and
listener tests of ``tests/engine/durable/test_durable_engine.py`` and by the ``dbos`` version range. If they change, the wake is skipped and the listener still delivers.
"""

from __future__ import annotations

import logging
import os
import threading
from contextlib import contextmanager
from typing import Iterator

_log = logging.getLogger("xflow_runtime.engine")

#: How often DBOS's SQLite listener looks for messages written by other processes while many
#: receives wait in this process (a service's conversations, where every poll costs a transaction
#: per waiting receive): the latency of ``xflow send`` to one of them from another process.
SQLITE_POLL_SECONDS = 1.0
#: ... and while at most :data:`FEW_WAITING` wait (a command's one instance): DBOS's close joins
#: the listener thread, which sleeps out its interval, so a slow poll would add up to its length to
#: every ``xflow run`` against SQLite.
SQLITE_FEW_WAITING_POLL_SECONDS = 0.05
FEW_WAITING = 8
#: PostgreSQL wakes receivers by LISTEN/NOTIFY; this interval only matters if that is off.
POSTGRES_POLL_SECONDS = 0.05

_lock = threading.Lock()
_waiting = 0
#: The many-waiting interval of this process's SQLite store (None: PostgreSQL, or a fixed interval
#: set by ``$XFLOW_SQLITE_POLL_SECONDS``: nothing to tune).
_tuned_slow: float | None = None


def poll_seconds(database_url: str) -> float:
    """DBOS's ``notification_listener_polling_interval_sec`` at launch for this store (and, for
    SQLite, whether it is tuned by the number of waiting receives: see :func:`receiving`)."""
    global _tuned_slow
    if not database_url.startswith("sqlite"):
        _tuned_slow = None
        return POSTGRES_POLL_SECONDS
    fixed = os.environ.get("XFLOW_SQLITE_POLL_SECONDS")
    if fixed:
        _tuned_slow = None
        return float(fixed)
    _tuned_slow = SQLITE_POLL_SECONDS
    return SQLITE_FEW_WAITING_POLL_SECONDS


@contextmanager
def receiving() -> Iterator[None]:
    """Count a receive waiting in this process, and set the SQLite listener's interval by the count
    (DBOS reads it before each of its sleeps). A DBOS internal (the attribute); if it changes, the
    listener keeps its launch interval."""
    global _waiting
    with _lock:
        _waiting += 1
        _tune(_waiting)
    try:
        yield
    finally:
        with _lock:
            _waiting -= 1
            _tune(_waiting)


def _tune(waiting: int) -> None:
    if _tuned_slow is None:
        return
    interval = SQLITE_FEW_WAITING_POLL_SECONDS if waiting <= FEW_WAITING else _tuned_slow
    try:
        from dbos._dbos import _get_dbos_instance

        system_db = _get_dbos_instance()._sys_db
        if system_db._notification_listener_polling_interval_sec != interval:
            system_db._notification_listener_polling_interval_sec = interval
    except Exception as error:  # noqa: BLE001 - DBOS internals changed: the launch interval stays
        _log.debug("listener interval not tuned: %s", error)


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
