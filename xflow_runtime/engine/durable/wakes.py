"""A write to one of our own tables followed by wake-ups of instances, as **one** DBOS workflow
(completing a user task, answering an ``aiagentproxy`` request; specs/states-human.md §2, §7).

The row and the message to the instance live in two stores (our tables, DBOS's notifications),
so "write, then send" done inline can lose the wake-up (a crash between the two: the row says
completed, the instance waits until its due date) or, retried blindly, send it twice. Here the
write is step 1 of a DBOS workflow and each wake-up a DBOS ``send`` step after it: a process that
dies between them leaves the workflow PENDING, and the next process of the same executor (a
restarted service) recovers it and sends what was not sent, exactly once.

The write itself is a *writer* the host registers by kind before DBOS launches (recovery runs at
launch): an async function of JSON-like arguments returning ``{"result": …, "wake": [{"instance",
"event"}]}``. A refusal is a result too (``{"error": …}``, nothing woken): a workflow that raised
would record a pickled exception.
"""

from __future__ import annotations

import uuid
from typing import Any, Callable, Coroutine

from dbos import DBOS, SetWorkflowID
from dbos._error import DBOSNonExistentWorkflowError

from xflow_runtime.engine.durable.local_wake import wake_receiver
from xflow_runtime.engine.durable.names import (EVENT_ENVELOPE_KEY, OPERATION_PREFIX, WAKE_WORKFLOW_NAME,
                                                operation_prefix)
from xflow_runtime.failpoints import crash_point

#: Topic of the wake-up: the instance's CloudEvent topic (``interpreter.events.EVENT_TOPIC``).
EVENT_TOPIC = "cloudevents"

Writer = Callable[[dict[str, Any]], Coroutine[Any, Any, dict[str, Any]]]
_writers: dict[str, Writer] = {}


def register_writer(kind: str, writer: Writer) -> None:
    """The host's writer of ``kind`` (the one durable runtime of the process owns them)."""
    _writers[kind] = writer


@DBOS.workflow(name=WAKE_WORKFLOW_NAME)
async def _write_then_wake(kind: str, arguments: dict[str, Any]) -> dict[str, Any]:
    writer = _writers[kind]
    outcome = await DBOS.run_step_async({"name": f"write:{kind}"}, writer, arguments)
    for wake in outcome.get("wake") or ():
        crash_point(f"{kind}-between-write-and-wake")
        try:
            # keyed by the event's id: a wake-up asked for again (a retried write) is stored once
            await DBOS.send_async(wake["instance"], {EVENT_ENVELOPE_KEY: wake["event"]}, EVENT_TOPIC,
                                  idempotency_key=wake["event"]["id"])
        except DBOSNonExistentWorkflowError:
            continue  # the instance is gone: the row still tells what happened
        wake_receiver(wake["instance"], EVENT_TOPIC)  # committed: wake it now if it waits here
    return outcome


async def write_then_wake(kind: str, arguments: dict[str, Any], *, instance_id: str | None = None) -> dict[str, Any]:
    """Run the writer of ``kind`` and send the wake-ups it asks for; returns the writer's outcome.
    ``instance_id``: the instance the operation is about (it names the operation)."""
    operation_id = (operation_prefix(instance_id) if instance_id else OPERATION_PREFIX) + str(uuid.uuid4())
    with SetWorkflowID(operation_id):
        handle = await DBOS.start_workflow_async(_write_then_wake, kind, arguments)
    outcome = await handle.get_result(polling_interval_sec=0.02)
    # Done: its records (the arguments hold e.g. a task's form data) are not kept. One recovered
    # after a crash finishes in the background and stays, until DBOS's own garbage collection or
    # the erasure of the instance's user (which finds it by its id: operation_prefix).
    await DBOS.delete_workflow_async(operation_id)
    return outcome
