"""Where a runtime's instances run: in this process (nothing persisted) or on the durable engine.
One internal seam, so :class:`~xflow_runtime.runtime.Runtime` never branches on which: it picks
its backend when it opens and hands every instance operation to it.

Durable-only operations (``resume``, listing, status rows) stay on the runtime, which asks for the
durable engine by name (``Runtime._require_durable``).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

from xflow_runtime.errors import XFlowError
from xflow_runtime.runtime import execution
from xflow_runtime.runtime.handles import UnknownInstance

if TYPE_CHECKING:
    from xflow_runtime.engine.durable import DurableEngine
    from xflow_runtime.engine.durable.instance_keys import InstanceCounts
    from xflow_runtime.interpreter.services import Identity
    from xflow_runtime.plan.states import WorkflowPlan
    from xflow_runtime.runtime.handles import WorkflowRef

_log = logging.getLogger("xflow_runtime.privacy")


class Backend(Protocol):
    async def start(self, plan: "WorkflowPlan", data: Any, instance_id: str, identity: "Identity", *,
                    ref: "WorkflowRef | None", subflows: Sequence["WorkflowPlan"],
                    subflow_refs: Sequence["WorkflowRef"], labels: Mapping[str, str]) -> None: ...

    async def send(self, instance_id: str, topic: str, payload: Any, idempotency_key: str | None) -> None: ...

    async def running(self) -> list[str]:
        """The instances an event without an addressee goes to."""
        ...

    async def result(self, instance_id: str) -> Any: ...

    async def cancel(self, instance_id: str) -> None: ...

    async def history(self, instance_id: str) -> list[dict[str, Any]]: ...

    async def counts(self, ids: list[str]) -> "InstanceCounts":
        """Every instance counted by engine status, and the engine status of each of ``ids``."""
        ...

    async def describe(self, instance_id: str) -> dict[str, Any]: ...

    async def forget(self, instance_id: str) -> None:
        """Stop the instance and keep nothing of it (its start raced an erasure of its user)."""
        ...

    async def close(self) -> None: ...


class InProcessBackend:
    """Instances as tasks of this process; they end with it."""

    def __init__(self, services: execution.Services) -> None:
        self._services = services
        self._local: dict[str, execution.LocalInstance] = {}

    async def start(self, plan: "WorkflowPlan", data: Any, instance_id: str, identity: "Identity", *,
                    ref: "WorkflowRef | None", subflows: Sequence["WorkflowPlan"],
                    subflow_refs: Sequence["WorkflowRef"], labels: Mapping[str, str]) -> None:
        if instance_id not in self._local:  # the same id again attaches, as on the durable engine
            self._local[instance_id] = execution.LocalInstance.start(
                self._services, plan, data, instance_id, identity=identity, workflows=list(subflows))

    def _instance(self, instance_id: str) -> execution.LocalInstance:
        instance = self._local.get(instance_id)
        if instance is None:
            raise UnknownInstance(f"no instance {instance_id!r} in this runtime")
        return instance

    async def send(self, instance_id: str, topic: str, payload: Any, idempotency_key: str | None) -> None:
        self._instance(instance_id).deliver(topic, payload)

    async def running(self) -> list[str]:
        return [instance_id for instance_id, instance in self._local.items() if not instance.done]

    async def result(self, instance_id: str) -> Any:
        return await self._instance(instance_id).result()

    async def cancel(self, instance_id: str) -> None:
        self._instance(instance_id).cancel()

    async def history(self, instance_id: str) -> list[dict[str, Any]]:
        if instance_id not in self._local:
            raise XFlowError("cannot read a history: the in-process engine keeps no records")
        return list(self._local[instance_id].history.records)

    async def counts(self, ids: list[str]) -> "InstanceCounts":
        from xflow_runtime.engine.durable.instance_keys import InstanceCounts

        statuses = {instance_id: instance.status for instance_id, instance in self._local.items()}
        by_status: dict[str | None, int] = dict(Counter(statuses.values()))
        return InstanceCounts(by_status, {i: statuses[i] for i in ids if i in statuses})

    async def describe(self, instance_id: str) -> dict[str, Any]:
        if instance_id not in self._local:
            raise XFlowError("cannot show an instance: the in-process engine keeps no records")
        return self._local[instance_id].describe()

    async def forget(self, instance_id: str) -> None:
        instance = self._local.pop(instance_id, None)
        if instance is not None:
            instance.cancel()

    async def close(self) -> None:
        for instance in list(self._local.values()):
            instance.cancel()
        self._local.clear()


class DurableBackend:
    """Instances on the durable engine (DBOS): recorded, recovered, resumable."""

    def __init__(self, engine: "DurableEngine") -> None:
        self.engine = engine

    async def start(self, plan: "WorkflowPlan", data: Any, instance_id: str, identity: "Identity", *,
                    ref: "WorkflowRef | None", subflows: Sequence["WorkflowPlan"],
                    subflow_refs: Sequence["WorkflowRef"], labels: Mapping[str, str]) -> None:
        if ref is None:
            raise XFlowError("a durable runtime runs plans returned by its own load()")
        request = {"format": 1, "workflow": {**ref.to_dict(), "id": plan.workflow_id}, "input": data,
                   "identity": identity.to_dict(), "subflows": [r.to_dict() for r in subflow_refs],
                   "labels": dict(labels)}
        await self.engine.start(instance_id, request)

    async def _known(self, instance_id: str) -> Any:
        status = await self.engine.status(instance_id)
        if status is None:
            raise UnknownInstance(f"no instance {instance_id!r} in {self.engine.display_url}")
        return status

    async def send(self, instance_id: str, topic: str, payload: Any, idempotency_key: str | None) -> None:
        await self._known(instance_id)
        await self.engine.send(instance_id, topic, payload, idempotency_key=idempotency_key)

    async def running(self) -> list[str]:
        return [status.workflow_id for status in await self.engine.list(status="PENDING")]

    async def result(self, instance_id: str) -> Any:
        from xflow_runtime.engine.durable.completions import UnknownWorkflow

        try:  # the engine's first poll says whether it exists (one query for many callers)
            return await self.engine.result(instance_id)
        except UnknownWorkflow:
            raise UnknownInstance(f"no instance {instance_id!r} in {self.engine.display_url}") from None

    async def cancel(self, instance_id: str) -> None:
        await self._known(instance_id)
        await self.engine.cancel(instance_id)

    async def history(self, instance_id: str) -> list[dict[str, Any]]:
        return await self.engine.history(instance_id)

    async def counts(self, ids: list[str]) -> "InstanceCounts":
        return await self.engine.counts(ids)

    async def describe(self, instance_id: str) -> dict[str, Any]:
        status = await self._known(instance_id)
        return execution.describe_durable(status, await self.engine.history(instance_id))

    async def forget(self, instance_id: str) -> None:
        """Cancel the instance and delete every row of it, as an erasure does (imports DBOS's
        client: only a start that raced an erasure gets here)."""
        import asyncio

        from xflow_runtime.engine.durable.subjects import DurableSubjects

        store = DurableSubjects(self.engine.database_url)
        try:
            await asyncio.to_thread(store.erase_instance, instance_id)
            if not await asyncio.to_thread(store.checkpoint):  # no receipt here: say it to the operator
                _log.warning("an instance stored after its user's erasure was deleted; old copies remain "
                             "in %s until its readers finish: run the user's erasure again", store.wal_file)
        finally:
            store.close()

    async def close(self) -> None:
        """Nothing here: the runtime stops the instances and shuts DBOS down (it owns the engine's
        lifecycle, which needs its own thread)."""
