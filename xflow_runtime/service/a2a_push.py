"""Push notifications of the tasks ``xflow serve --a2a`` serves (specs/a2a.md §5).

- Configs (``{id, url, token?, authentication?}`` per task) live in the chat-memory database
  (table ``xflow_a2a_push_configs``), so they outlive a restart like the tasks do.
- Webhook URLs are screened against server-side request forgery with the SDK's
  ``validate_push_notification_url`` (loopback, private, link-local, unresolvable hosts refused)
  when a config is set and again before each delivery; ``--a2a-allow-private-webhooks`` turns the
  screening off (tests, closed networks).
- When a task with configs settles (it ended, or waits for input) the dispatcher POSTs
  ``{"task": <Task>}`` to each URL with ``X-A2A-Notification-Token`` and ``Authorization:
  <scheme> <credentials>`` as configured; up to 3 attempts (1 s, 2 s apart); nothing is logged but
  the task id and the outcome. Deliveries are at most once per settling *in this process*: a task
  that settles while the service is down is not announced after the restart (clients GetTask).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any, Awaitable, Callable, Mapping

from xflow_runtime.storage.lazy_store import LazyStore

_log = logging.getLogger("xflow_runtime.service.a2a")
ATTEMPTS = 3
_SETTLING = ("agent_reply", "workflow_completed", "workflow_failed")


class PushConfigs(LazyStore):
    """The configs table (blocking SQLAlchemy; the async callers use ``asyncio.to_thread``)."""

    def put(self, tenant: str, task_id: str, config: Mapping[str, Any]) -> dict[str, Any]:
        """Set a config (replacing one with the same id); an absent id becomes a fresh one."""
        from sqlalchemy.orm import Session

        from xflow_runtime.storage.a2a_models import A2APushConfig

        authentication = config.get("authentication") or {}
        values = {"task_id": task_id, "id": config.get("id") or str(uuid.uuid4()), "tenant_id": tenant,
                  "url": config["url"], "token": config.get("token") or None,
                  "auth_scheme": authentication.get("scheme") or None,
                  "auth_credentials": authentication.get("credentials") or None}
        with Session(self.engine) as session, session.begin():
            row = session.get(A2APushConfig, (task_id, values["id"]))
            if row is None:
                session.add(A2APushConfig(**values))
            else:
                for key, value in values.items():
                    setattr(row, key, value)
        return _config(values)

    def list(self, tenant: str | None, task_id: str) -> list[dict[str, Any]]:
        from sqlalchemy import select
        from sqlalchemy.orm import Session

        from xflow_runtime.storage.a2a_models import A2APushConfig

        query = select(A2APushConfig).where(A2APushConfig.task_id == task_id).order_by(A2APushConfig.created_at)
        if tenant is not None:
            query = query.where(A2APushConfig.tenant_id == tenant)
        with Session(self.engine) as session:
            return [_config({column: getattr(row, column) for column in
                             ("task_id", "id", "url", "token", "auth_scheme", "auth_credentials")})
                    for row in session.scalars(query)]

    def delete(self, tenant: str, task_id: str, config_id: str) -> bool:
        from sqlalchemy import delete
        from sqlalchemy.orm import Session

        from xflow_runtime.storage.a2a_models import A2APushConfig

        with Session(self.engine) as session, session.begin():
            result = session.execute(delete(A2APushConfig).where(
                A2APushConfig.tenant_id == tenant, A2APushConfig.task_id == task_id, A2APushConfig.id == config_id))
        return bool(getattr(result, "rowcount", 0))  # a DELETE's result is a CursorResult

    def task_ids(self) -> set[str]:
        from sqlalchemy import select
        from sqlalchemy.orm import Session

        from xflow_runtime.storage.a2a_models import A2APushConfig

        with Session(self.engine) as session:
            return set(session.scalars(select(A2APushConfig.task_id).distinct()))


def _config(values: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON form of a ``TaskPushNotificationConfig``."""
    config: dict[str, Any] = {"taskId": values["task_id"], "id": values["id"], "url": values["url"]}
    if values.get("token"):
        config["token"] = values["token"]
    if values.get("auth_scheme"):
        config["authentication"] = {"scheme": values["auth_scheme"],
                                    "credentials": values.get("auth_credentials") or ""}
    return config


async def url_allowed(url: str, allow_private: bool) -> bool:
    if allow_private:
        return url.startswith(("http://", "https://"))
    from a2a.utils.push_url_validator import validate_push_notification_url

    return await validate_push_notification_url(url)


class PushDispatcher:
    """Watches the hub's records; when a task with configs settles, delivers it to each webhook."""

    def __init__(self, configs: PushConfigs, view: Callable[[str], Awaitable[dict[str, Any]]], *,
                 allow_private: bool) -> None:
        self.configs = configs
        self.view = view
        self.allow_private = allow_private
        self.tasks: set[str] | None = None  # task ids with configs (loaded on first use)
        self._running: set[asyncio.Task[Any]] = set()

    async def watch(self, task_id: str) -> None:
        await self._load()
        assert self.tasks is not None
        self.tasks.add(task_id)

    async def _load(self) -> None:
        if self.tasks is None:
            self.tasks = await asyncio.to_thread(self.configs.task_ids)

    def on_record(self, instance_id: str, record: Mapping[str, Any]) -> None:
        """Called on the loop for every new record (cheap unless the task has configs)."""
        if record.get("event") not in _SETTLING:
            return
        task = asyncio.ensure_future(self._maybe_deliver(instance_id))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _maybe_deliver(self, task_id: str) -> None:
        await self._load()
        assert self.tasks is not None
        if task_id not in self.tasks:
            return
        await asyncio.sleep(0.05)  # the engine marks an instance ended just after its last record
        view = await self.view(task_id)
        for config in await asyncio.to_thread(self.configs.list, None, task_id):
            await self.deliver(config, {"task": view})

    async def deliver(self, config: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
        import httpx

        if not await url_allowed(config["url"], self.allow_private):
            _log.warning("a2a push for task %s refused: the webhook URL is not allowed", config.get("taskId"))
            return False
        headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
        if config.get("token"):
            headers["X-A2A-Notification-Token"] = config["token"]
        authentication = config.get("authentication") or {}
        if authentication.get("scheme") and authentication.get("credentials"):
            headers["Authorization"] = f"{authentication['scheme']} {authentication['credentials']}"
        async with httpx.AsyncClient(timeout=15, follow_redirects=False) as client:
            for attempt in range(ATTEMPTS):
                try:
                    response = await client.post(config["url"], json=body, headers=headers)
                    if response.status_code < 300:
                        return True
                    if response.status_code < 500 and response.status_code != 429:
                        break
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(2 ** attempt)
        _log.warning("a2a push for task %s not delivered", config.get("taskId"))
        return False
