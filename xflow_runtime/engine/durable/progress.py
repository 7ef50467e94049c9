"""Poison-pill counting that tells a crash loop from a healthy restart.

DBOS counts every dispatch of an instance (``workflow_status.recovery_attempts``) and parks it once
the count passes ``max_recovery_attempts`` (specs/limits.md §5). Left alone, that count also grows
while an instance legitimately waits (an event, a long timer) through restarts of a service, until
a waiting conversation is parked as if it had crashed its process ten times.

An instance that reaches a *live* wait (a wait not answered from its recording) has shown that its
process survives everything it replays: it is not a poison pill. So the count restarts there, and
when a process stops its instances cleanly. What is left counted is what a poison pill does: every
dispatch dies before the instance reaches a wait again.

DBOS has no public call for this; the reset is one ``UPDATE`` of its ``workflow_status`` table
through its own system-database handle (an internal, pinned by ``tests/limits/test_poison_pills.py``
and by the ``dbos`` version range in pyproject.toml).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Iterable

_log = logging.getLogger("xflow_runtime.engine")


def _reset(instance_ids: list[str]) -> None:
    import sqlalchemy as sa
    from dbos._dbos import _get_dbos_instance

    system_db = _get_dbos_instance()._sys_db
    status = system_db.tables.workflow_status
    with system_db.engine.begin() as connection:
        connection.execute(
            sa.update(status)
            .where(status.c.workflow_uuid.in_(instance_ids), status.c.status == "PENDING")
            .values(recovery_attempts=0))
    _log.debug("crash count restarted: %s", " ".join(instance_ids))


async def instances_made_progress(instance_ids: Iterable[str]) -> None:
    """Restart the crash count of these instances (they reached a live wait, or were stopped
    cleanly). Best effort: a failure only leaves DBOS's stricter count in place, so it is logged,
    never raised into the instance."""
    ids = list(instance_ids)
    if not ids:
        return
    # Not ``to_thread``: from workflow code that would carry the DBOS context into the thread.
    try:
        await asyncio.get_running_loop().run_in_executor(None, _reset, ids)
    except Exception as error:  # noqa: BLE001 - see the docstring
        _log.warning("could not restart the crash count of %d instance(s): %s", len(ids), error)
