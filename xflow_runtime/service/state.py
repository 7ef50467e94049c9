"""What every route of one app shares (``app.state.xflow``), and the one way a route reaches an
instance: :meth:`ServiceState.owned` answers 404 for an instance that does not exist *and* for
one the caller may not see, so existence never leaks across tenants."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from xflow_runtime.service.catalog import WorkflowCatalog
from xflow_runtime.service.live import LiveHub
from xflow_runtime.service.metrics import ServiceMetrics
from xflow_runtime.service.principal import Principal
from xflow_runtime.service.problems import Problem
from xflow_runtime.service.views import AHEAD_OF_ENGINE, status_of, visible_counts

if TYPE_CHECKING:
    from xflow_runtime.runtime import Runtime
    from xflow_runtime.service.auth import Authenticator


@dataclass
class ServiceOptions:
    max_body_bytes: int = 1_000_000
    max_wait_seconds: float = 60.0     # Prefer: wait=N on a start is capped here
    reply_timeout_seconds: float = 120.0  # a chat message waits this long for the reply
    heartbeat_seconds: float = 15.0
    body_timeout_seconds: float = 30.0  # the whole request body must arrive within this (408)
    #: No response started within this → 504. ``None``: the longest deliberate wait above + 30 s.
    request_timeout_seconds: float | None = None
    #: ``xflow serve --a2a``: deliver push notifications to loopback/private webhooks too (tests).
    a2a_private_webhooks: bool = False
    #: ``xflow serve`` without ``--workers``: this process runs the instances, so it also builds
    #: the own indexes of large memory scopes on a schedule (an ``IndexSchedule``; None: not here)
    index_scopes: Any = None

    def __post_init__(self) -> None:
        longest_wait = max(self.max_wait_seconds, self.reply_timeout_seconds)
        if self.request_timeout_seconds is not None and self.request_timeout_seconds <= longest_wait:
            raise ValueError(f"the request timeout ({self.request_timeout_seconds:g} s) must exceed the longest "
                             f"wait a request may ask for ({longest_wait:g} s), or it would cut a bounded wait")

    @property
    def request_timeout(self) -> float:
        if self.request_timeout_seconds is not None:
            return self.request_timeout_seconds
        return max(self.max_wait_seconds, self.reply_timeout_seconds) + 30.0


@dataclass
class ServiceState:
    runtime: "Runtime"
    catalog: WorkflowCatalog
    auth: "Authenticator"
    hub: LiveHub
    metrics: ServiceMetrics
    options: ServiceOptions
    draining: bool = False
    workflow_of: dict[str, str] = field(default_factory=dict)  # instance id → workflow id (metrics labels)
    opened: bool = False
    _opening: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: context managers the service lifespan enters (``--mcp``: the MCP SDK's session manager)
    lifespans: list[Any] = field(default_factory=list)

    async def open(self) -> None:
        """Open the runtime (DBOS recovers pending instances) and load the definitions; run by the
        lifespan, or by the first request of a mounted app whose lifespan never ran."""
        if self.opened:
            return
        async with self._opening:
            if not self.opened:
                self.hub.bind(asyncio.get_running_loop())
                await self.runtime.open()
                if self.options.index_scopes is not None:
                    from xflow_runtime.engine.index_schedule import apply

                    await asyncio.to_thread(apply, self.options.index_scopes, self.runtime.chat_memory_url)
                self.catalog.refresh(force=True)
                await asyncio.to_thread(_import_llm)
                self.opened = True

    async def owned(self, principal: Principal, instance_id: str) -> dict[str, Any]:
        """The status row of an instance the caller may see, else 404."""
        row = await self.runtime.status_row(instance_id) if _plausible(instance_id) else None
        if row is None or not principal.may_see(row.get("tenant"), row.get("user")):
            raise Problem("not-found", f"no instance {instance_id}")
        self.hub.note_owner(instance_id, row.get("tenant"), row.get("user"))
        return row

    async def chat_status(self, principal: Principal, instance_id: str) -> str:
        """The status of an instance a chat message is for (404 as :meth:`owned`). From the hub
        when this process saw its agent answer and nothing since: a chat message then reads no
        store row (the status read queued behind the engine's SQL was most of the service's time
        per message). A status change made by another process (``xflow cancel`` on the same store)
        is not seen here: the message is sent, and when no reply comes within the reply timeout
        the route asks the store and answers 409 for an instance that has ended."""
        owner = self.hub.awaiting_message(instance_id)
        if owner is not None:
            if not principal.may_see(*owner):
                raise Problem("not-found", f"no instance {instance_id}")
            return "waiting"
        row = await self.owned(principal, instance_id)
        return status_of(row, await self.last_event(instance_id))

    async def instances_by_status(self) -> dict[str, int]:
        """Every tenant's instances by the status they show (:func:`~.views.status_of`), counted by
        the runtime's engine (aggregates in the database, not a read of every instance), corrected
        by the latest records this process's hub saw."""
        followed = self.hub.latest_events(AHEAD_OF_ENGINE)
        return visible_counts(await self.runtime.count_instances(followed), followed)

    async def describe(self, instance_id: str) -> dict[str, Any]:
        """The runtime's description, completed from the hub: an instance's last records reach
        the hub before the engine stores them and marks the instance ended."""
        described = await self.runtime.describe(instance_id)
        for record in self.hub.recent(instance_id):
            if record.get("event") == "workflow_completed" and described.get("output") is None:
                described["output"] = record.get("output")
            elif record.get("event") == "workflow_failed" and described.get("error") is None:
                described["error"] = record.get("error")
        return described

    async def last_event(self, instance_id: str) -> str | None:
        """The event of the instance's latest history record (from the hub when it follows the
        instance, else from the durable history)."""
        known = self.hub.last_event(instance_id)
        if known is not None:
            return known
        records = await self.runtime.history(instance_id)
        return records[-1].get("event") if records else None


def _import_llm() -> None:
    """litellm takes seconds to import; done here, off the loop, not in the first agent call
    (which would block every request meanwhile)."""
    from xflow_runtime.llm.client import preload

    preload()


def _plausible(instance_id: str) -> bool:
    return 0 < len(instance_id) <= 200 and instance_id.isprintable()
