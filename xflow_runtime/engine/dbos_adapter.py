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
