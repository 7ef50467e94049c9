"""The task inbox: what a person (or the service acting for one) does with tasks, as a Python
API over the task store and the runtime. ``Runtime.tasks`` returns one; the HTTP routes and, via
HTTP, ``xflow tasks`` use it.

Every change is one store transaction checked against :mod:`.rules`; then a lifecycle CloudEvent
goes to ``Runtime(on_event=…)``, and a completion or deletion is also sent to the waiting instance
(it only wakes it: the instance reads the row)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterable

from xflow_runtime.errors import XFlowError
from xflow_runtime.usertask import (CLAIMED, COMPLETED, DELETED, TASK_ID_ATTRIBUTE, TASK_KEY_ATTRIBUTE,
                                    UNCLAIMED)
from xflow_runtime.usertask.rules import ACTIVE, Actor, TaskView

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
        task = await asyncio.to_thread(self.store.act, task_id, actor, action, data)
        event = lifecycle_event(task, _EVENT_OF[action], actor)
        if action in ("complete", "delete"):
            from xflow_runtime.runtime import UnknownInstance

            try:
                await self.runtime.send_event(event, instance_id=task.instance_id)
            except UnknownInstance:
                pass  # the instance is gone (cancelled): the task's row still tells what happened
        if self.runtime.on_event is not None:
            self.runtime.on_event(event)
        return task


def lifecycle_event(task: TaskView, event_type: str, actor: Actor) -> dict[str, Any]:
    data: dict[str, Any] = {"taskKey": task.task_key, "status": task.status, "by": actor.user}
    if event_type == COMPLETED:
        data.update(data=task.completion, completedBy=task.completed_by)
    return {"specversion": "1.0", "id": str(uuid.uuid4()), "source": f"/xflow/{task.workflow_id}/tasks",
            "type": event_type, "subject": task.id, "time": datetime.now(timezone.utc).isoformat(),
            "datacontenttype": "application/json", TASK_ID_ATTRIBUTE: task.id, TASK_KEY_ATTRIBUTE: task.task_key,
            "data": data}
