"""The task inbox: what a person (or the service acting for one) does with tasks, as a Python
API over the task store and the runtime. ``Runtime.tasks`` returns one; the HTTP routes and, via
HTTP, ``xflow tasks`` use it.

Every change is one store transaction checked against :mod:`.rules`; then a lifecycle CloudEvent
goes to ``Runtime(on_event=…)``, and a completion or deletion is also sent to the waiting instance
(it only wakes it: the instance reads the row). On a durable runtime the completion (or deletion)
and the wake-up are one recoverable operation (``engine/durable/wakes.py``): a crash between the
two never loses the wake-up, and never sends it twice."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterable

from xflow_runtime.errors import XFlowError
from xflow_runtime.usertask import (CLAIMED, COMPLETED, DELETED, TASK_ID_ATTRIBUTE, TASK_KEY_ATTRIBUTE,
                                    UNCLAIMED)
from xflow_runtime.usertask.rules import ACTIVE, Actor, TaskView
from xflow_runtime.usertask.store import TaskError

if TYPE_CHECKING:
    from xflow_runtime.runtime import Runtime
    from xflow_runtime.usertask.store import TaskStore

_EVENT_OF = {"claim": CLAIMED, "unclaim": UNCLAIMED, "complete": COMPLETED, "delete": DELETED}


class TaskInbox:
    def __init__(self, runtime: "Runtime", store: "TaskStore | None") -> None:
        if store is None:
            raise XFlowError("user tasks need a database: a durable runtime, or Runtime(database_url=…)")
        self.runtime = runtime
        self.store = store

    async def list(self, actor: Actor, statuses: Iterable[str] = ACTIVE, limit: int = 200) -> list[TaskView]:
        """The tasks ``actor`` may see: assigned to them, offered to them or to one of their groups."""
        return await asyncio.to_thread(self.store.list, actor, tuple(statuses), limit)

    async def get(self, task_id: str, actor: Actor) -> TaskView:
        return await asyncio.to_thread(self.store.visible, task_id, actor)

    async def claim(self, task_id: str, actor: Actor) -> TaskView:
        return await self._act(task_id, actor, "claim")

    async def unclaim(self, task_id: str, actor: Actor) -> TaskView:
        return await self._act(task_id, actor, "unclaim")

    async def complete(self, task_id: str, actor: Actor, data: Any) -> TaskView:
        """Complete with ``data`` (checked against the task's form schema, when it has one)."""
        return await self._act(task_id, actor, "complete", data)

    async def delete(self, task_id: str, actor: Actor) -> TaskView:
        return await self._act(task_id, actor, "delete")

    async def _act(self, task_id: str, actor: Actor, action: str, data: Any = None) -> TaskView:
        arguments = {"task_id": task_id, "actor": _actor_dict(actor), "action": action, "data": data}
        await self.runtime.open()
        durable = self.runtime._durable  # noqa: SLF001 - the inbox is the runtime's own
        if action in _WAKING and durable is not None:
            # the row and the instance's wake-up as one recoverable operation (specs/states-human.md §2)
            task = await asyncio.to_thread(self.store.get, task_id)
            outcome = await durable.write_then_wake(WAKE_KIND, arguments,
                                                    instance_id=task.instance_id if task is not None else None)
        else:
            outcome = await act_and_ask_to_wake(self.store, arguments)
            for wake in outcome.get("wake") or ():  # in-process instances die with the process anyway
                await self._wake_in_process(wake)
        if "error" in outcome:
            raise TaskError(**outcome["error"])
        if self.runtime.on_event is not None:
            self.runtime.on_event(outcome["event"])
        return _task_of(outcome["result"])

    async def _wake_in_process(self, wake: dict[str, Any]) -> None:
        from xflow_runtime.runtime import UnknownInstance

        try:
            await self.runtime.send_event(wake["event"], instance_id=wake["instance"])
        except UnknownInstance:
            pass  # the instance is gone (cancelled): the task's row still tells what happened


#: The kind under which the durable runtime runs :func:`act_and_ask_to_wake` (engine/durable/wakes.py).
WAKE_KIND = "usertask"
_WAKING = ("complete", "delete")


async def act_and_ask_to_wake(store: "TaskStore", arguments: dict[str, Any]) -> dict[str, Any]:
    """The write of a task action: ``{"result": task, "event": lifecycle event, "wake": […]}``
    or ``{"error": {kind, message, errors}}``. Safe to run again (a write whose outcome was lost
    in a crash): a task already completed or deleted still asks to wake its instance, with the
    same event id (``usertask:<id>:<status>``), which the engine stores once."""
    actor = Actor(arguments["actor"]["tenant"], arguments["actor"]["user"],
                  frozenset(arguments["actor"]["groups"]), arguments["actor"]["admin"])
    action = arguments["action"]
    try:
        task = await asyncio.to_thread(store.act, arguments["task_id"], actor, action, arguments["data"])
    except TaskError as error:
        refused: dict[str, Any] = {"error": {"kind": error.kind, "message": str(error), "errors": error.errors}}
        if error.kind == "conflict":
            ended = await asyncio.to_thread(store.get, arguments["task_id"])
            if ended is not None and ended.status in _ENDED_BY:
                refused["wake"] = [{"instance": ended.instance_id,
                                    "event": lifecycle_event(ended, _ENDED_BY[ended.status], actor)}]
        return refused
    event = lifecycle_event(task, _EVENT_OF[action], actor)
    wake = [{"instance": task.instance_id, "event": event}] if action in _WAKING else []
    return {"result": dataclasses.asdict(task), "event": event, "wake": wake}


_ENDED_BY = {"completed": COMPLETED, "deleted": DELETED}


def _actor_dict(actor: Actor) -> dict[str, Any]:
    return {"tenant": actor.tenant, "user": actor.user, "groups": sorted(actor.groups), "admin": actor.admin}


def _task_of(recorded: dict[str, Any]) -> TaskView:
    return TaskView(**{**recorded, "candidate_users": tuple(recorded["candidate_users"]),
                       "candidate_groups": tuple(recorded["candidate_groups"])})


def lifecycle_event(task: TaskView, event_type: str, actor: Actor) -> dict[str, Any]:
    data: dict[str, Any] = {"taskKey": task.task_key, "status": task.status, "by": actor.user}
    if event_type == COMPLETED:
        data.update(data=task.completion, completedBy=task.completed_by)
    # the events that wake the instance have one id per task and outcome (stored once however
    # often they are sent); claims may repeat, so theirs are unique
    event_id = f"usertask:{task.id}:{task.status}" if event_type in (COMPLETED, DELETED) else str(uuid.uuid4())
    return {"specversion": "1.0", "id": event_id, "source": f"/xflow/{task.workflow_id}/tasks",
            "type": event_type, "subject": task.id, "time": datetime.now(timezone.utc).isoformat(),
            "datacontenttype": "application/json", TASK_ID_ATTRIBUTE: task.id, TASK_KEY_ATTRIBUTE: task.task_key,
            "data": data}
