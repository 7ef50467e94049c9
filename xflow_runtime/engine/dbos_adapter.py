"""The DBOS internals the worker fleet calls, in one place (specs/durability.md §7, pinned by
``tests/fleet/test_dbos_contract.py``; check them when raising the ``dbos`` pin).

DBOS 3.4 has no public call that hands a dead executor's instances back to the queue *only if*
they are still PENDING under that executor: ``DBOS.resume_workflow`` would also re-enqueue an
instance a live worker already re-claimed (two runs at once), reset its recovery attempts and
clear its deadline. ``DBOS._recover_pending_workflows(executor_ids)`` re-enqueues with the
predicate ``status = 'PENDING' AND executor_id IN (ids)`` and keeps the queue, so a late or
repeated sweep is a no-op.
"""

from __future__ import annotations

from typing import Any


def recover_executors(executor_ids: list[str]) -> list[Any]:
    """Hand the PENDING instances of ``executor_ids`` (of our application version) back to their
    queue; live workers claim them within a poll interval."""
    from dbos import DBOS

    return DBOS._recover_pending_workflows(list(executor_ids))


def running_here() -> set[str]:
    """Ids of the workflows this process is executing now (DBOS's in-process active set, which
    its queue thread reads to count a worker's load)."""
    from dbos._dbos import _get_dbos_instance

    return set(_get_dbos_instance()._active_workflows_set.activeList())


def requeue_if_still_mine(workflow_ids: list[str], executor_id: str) -> None:
    """Hand each workflow back to its queue if it is still PENDING under ``executor_id`` (the same
    conditional re-enqueue as :func:`recover_executors`, one workflow at a time)."""
    from dbos._dbos import _get_dbos_instance
    from dbos._utils import INTERNAL_QUEUE_NAME

    system_database = _get_dbos_instance()._sys_db
    for workflow_id in workflow_ids:
        system_database.reenqueue_for_recovery(workflow_id, [executor_id], INTERNAL_QUEUE_NAME)
