"""The A2A request handler of one exposed workflow (specs/a2a.md §5): ``a2a-sdk``'s
``RequestHandler`` over our runtime. Imported only by ``xflow serve --a2a``.

- ``SendMessage`` without ``taskId`` starts an instance (id derived from tenant, user, workflow and
  ``messageId``: the same message sent again is the same task); with the ``taskId`` of an instance
  waiting for a user message it delivers the text as that message (the chat path). Then, unless
  ``returnImmediately``, it waits (≤ the service's wait cap) until the instance settles: it ended,
  or an agent answered and waits (``INPUT_REQUIRED``).
- ``GetTask``/``CancelTask`` read/cancel the instance; who may see it is the ``/v1`` rule (404 =
  ``TaskNotFoundError`` for anyone else).
- ``SendStreamingMessage``/``SubscribeToTask``: the Task, then status (and, on completion, the
  output artifact) events until the task settles.
- Push notification configs: in ``SendMessage``'s configuration (saved before the task starts, so
  no change is missed) or by the config methods; delivered by :mod:`a2a_push`. ``ListTasks`` is
  not offered (``GET /v1/instances`` is)."""

from __future__ import annotations

import asyncio
from contextlib import ExitStack
from typing import Any, AsyncGenerator

from xflow_runtime.service import a2a_tasks
from xflow_runtime.service.a2a_push import PushDispatcher
from xflow_runtime.service.live import TERMINAL_RECORDS
from xflow_runtime.service.problems import Problem
from xflow_runtime.service.state import ServiceState
from xflow_runtime.service.views import TERMINAL, status_of
from xflow_runtime.service.waiting import settled

_SETTLED_RECORDS = ("agent_reply", *TERMINAL_RECORDS)
#: How long one stream waits for the next record before it reads the instance again.
_STREAM_POLL = 15.0


async def task_view(state: ServiceState, task_id: str, row: dict[str, Any] | None = None) -> tuple[dict[str, Any], str]:
    """(the Task JSON of an instance, its ``views`` status)."""
    row = row or await state.runtime.status_row(task_id)
    assert row is not None
    status = status_of(row, await state.last_event(task_id))
    described = await state.describe(task_id) if status in ("completed", "failed") else {}
    reply = await _last_reply(state, task_id) if status == "waiting" else None
    return a2a_tasks.task_json(row, status, described, reply), status


def workflow_agent(state: ServiceState, workflow_id: str, push: PushDispatcher) -> Any:
    from a2a.server.request_handlers.request_handler import RequestHandler
    from a2a.types import (ListTaskPushNotificationConfigsResponse, Task, TaskArtifactUpdateEvent,
                           TaskPushNotificationConfig, TaskStatusUpdateEvent)
    from a2a.utils import errors
    from google.protobuf.json_format import MessageToDict, ParseDict

    def task(view: dict[str, Any]) -> Any:
        return ParseDict(view, Task(), ignore_unknown_fields=True)

    class WorkflowAgent(RequestHandler):
        async def _view(self, principal: Any, task_id: str) -> tuple[dict[str, Any], str]:
            try:
                row = await state.owned(principal, task_id)
            except Problem:
                raise errors.TaskNotFoundError(message=f"no task {task_id}") from None
            if row.get("workflow") != workflow_id:
                raise errors.TaskNotFoundError(message=f"no task {task_id}")
            return await task_view(state, task_id, row)

        async def _push_config(self, principal: Any, task_id: str, config: Any) -> dict[str, Any]:
            from xflow_runtime.service.a2a_push import url_allowed

            wanted = MessageToDict(config)
            if not wanted.get("url") or not await url_allowed(wanted["url"], push.allow_private):
                raise errors.InvalidParamsError(message="the push notification URL is not allowed "
                                                        "(http(s), and no loopback, private or link-local host)")
            saved = await asyncio.to_thread(push.configs.put, principal.tenant, task_id, wanted)
            await push.watch(task_id)
            return saved

        async def _accept(self, params: Any, context: Any, stack: ExitStack) -> tuple[str, Any, int | None]:
            """Start or continue the task: (task id, its hub subscription opened before acting, and
            for a continuation the last record's seq before the message, else ``None``)."""
            principal = context.state["principal"]
            message = MessageToDict(params.message)
            push_config = None
            if params.HasField("configuration") and params.configuration.HasField("task_push_notification_config"):
                push_config = params.configuration.task_push_notification_config
            parts = message.get("parts") or []
            if state.draining:
                raise errors.UnsupportedOperationError(message="the service is shutting down")
            if message.get("taskId"):
                task_id = message["taskId"]
                view, status = await self._view(principal, task_id)
                if status != "waiting":
                    raise errors.UnsupportedOperationError(
                        message=f"task {task_id} is {a2a_tasks.STATES.get(status, status)}, not waiting for input")
                text = a2a_tasks.message_text(parts)
                if not text:
                    raise errors.InvalidParamsError(message="a message continuing a task needs a text part")
                if not state.hub.claim_turn(task_id):
                    raise errors.UnsupportedOperationError(message=f"task {task_id} is answering another message")
                try:
                    if push_config is not None:
                        await self._push_config(principal, task_id, push_config)
                    after = state.hub.max_seq(task_id)
                    if after is None:
                        records = await state.runtime.history(task_id)
                        after = records[-1]["seq"] if records else -1
                    subscription = stack.enter_context(state.hub.subscribe(task_id))
                    await state.runtime.send_message(task_id, {"text": text})
                except BaseException:
                    state.hub.release_turn(task_id)
                    raise
                return task_id, subscription, after
            definition = state.catalog.get(workflow_id)
            if definition is None:
                raise errors.TaskNotFoundError(message=f"no agent {workflow_id}")
            data = a2a_tasks.input_of(parts)
            _check_input(definition.plan, data, errors)
            task_id = a2a_tasks.task_id_for(principal.tenant, principal.user, workflow_id,
                                            message.get("messageId") or "")
            subscription = stack.enter_context(state.hub.subscribe(task_id))
            if push_config is not None:
                await self._push_config(principal, task_id, push_config)
            if await state.runtime.status_row(task_id) is None:
                labels = {a2a_tasks.CONTEXT_LABEL: message.get("contextId") or task_id}
                await state.runtime.start(definition.plan, data, instance_id=task_id, tenant=principal.tenant,
                                          user=principal.user, labels=labels)
                state.workflow_of[task_id] = workflow_id
                state.metrics.instances_started.labels(workflow_id).inc()
            return task_id, subscription, None

        async def on_message_send(self, params: Any, context: Any) -> Any:
            principal = context.state["principal"]
            record = None
            with ExitStack() as stack:
                task_id, subscription, after = await self._accept(params, context, stack)
                if not (params.HasField("configuration") and params.configuration.return_immediately):
                    if after is not None:
                        record = await settled(subscription, state.options.max_wait_seconds, after_seq=after,
                                               until=_SETTLED_RECORDS)
                    elif (await self._view(principal, task_id))[1] not in a2a_tasks.SETTLED:
                        await settled(subscription, state.options.max_wait_seconds, until=_SETTLED_RECORDS)
            view, status = await self._view(principal, task_id)
            if after is not None and record is None and status == "waiting":
                view = _working(view)  # that waiting status is the previous turn's
            return task(view)

        async def on_message_send_stream(self, params: Any, context: Any) -> AsyncGenerator[Any, None]:
            with ExitStack() as stack:
                task_id, subscription, after = await self._accept(params, context, stack)
                async for event in self._follow(context.state["principal"], task_id, subscription, after):
                    yield event

        async def on_subscribe_to_task(self, params: Any, context: Any) -> AsyncGenerator[Any, None]:
            principal = context.state["principal"]
            await self._view(principal, params.id)
            with state.hub.subscribe(params.id) as subscription:
                async for event in self._follow(principal, params.id, subscription, None):
                    yield event

        async def _follow(self, principal: Any, task_id: str, subscription: Any,
                          after: int | None) -> AsyncGenerator[Any, None]:
            """The Task, then a status event (after the output artifact, on completion) at every
            change until the task settles. ``after``: a continuation's seq (its waiting is stale)."""
            view, status = await self._view(principal, task_id)
            if after is not None:
                view, status = _working(view), "running"
            yield task(view)
            last = view["status"]["state"]
            while status not in a2a_tasks.SETTLED:
                record = await settled(subscription, _STREAM_POLL, until=_SETTLED_RECORDS,
                                       after_seq=-1 if after is None else after)
                view, status = await self._view(principal, task_id)
                if after is not None and record is None and status == "waiting":
                    status = "running"
                    continue
                if view["status"]["state"] == last and status not in a2a_tasks.SETTLED:
                    continue
                last = view["status"]["state"]
                ids = {"taskId": task_id, "contextId": view["contextId"]}
                for artifact in view.get("artifacts") or ():
                    yield ParseDict({**ids, "artifact": artifact, "lastChunk": True}, TaskArtifactUpdateEvent(),
                                    ignore_unknown_fields=True)
                yield ParseDict({**ids, "status": view["status"]}, TaskStatusUpdateEvent(),
                                ignore_unknown_fields=True)

        async def on_get_task(self, params: Any, context: Any) -> Any:
            view, _ = await self._view(context.state["principal"], params.id)
            return task(view)

        async def on_cancel_task(self, params: Any, context: Any) -> Any:
            principal = context.state["principal"]
            _, status = await self._view(principal, params.id)
            if status in TERMINAL:
                raise errors.TaskNotCancelableError(message=f"task {params.id} has ended")
            await state.runtime.cancel(params.id)
            view, _ = await self._view(principal, params.id)
            return task(view)

        async def on_list_tasks(self, params: Any, context: Any) -> Any:
            raise errors.UnsupportedOperationError(message="ListTasks is not offered; use GET /v1/instances")

        async def on_create_task_push_notification_config(self, params: Any, context: Any) -> Any:
            principal = context.state["principal"]
            await self._view(principal, params.task_id)
            saved = await self._push_config(principal, params.task_id, params)
            return ParseDict(saved, TaskPushNotificationConfig())

        async def _configs(self, principal: Any, task_id: str) -> list[dict[str, Any]]:
            await self._view(principal, task_id)
            return await asyncio.to_thread(push.configs.list, principal.tenant, task_id)

        async def on_get_task_push_notification_config(self, params: Any, context: Any) -> Any:
            for config in await self._configs(context.state["principal"], params.task_id):
                if config["id"] == params.id:
                    return ParseDict(config, TaskPushNotificationConfig())
            raise errors.TaskNotFoundError(message=f"no push notification config {params.id} for task {params.task_id}")

        async def on_list_task_push_notification_configs(self, params: Any, context: Any) -> Any:
            configs = await self._configs(context.state["principal"], params.task_id)
            return ListTaskPushNotificationConfigsResponse(
                configs=[ParseDict(config, TaskPushNotificationConfig()) for config in configs])

        async def on_delete_task_push_notification_config(self, params: Any, context: Any) -> None:
            principal = context.state["principal"]
            await self._view(principal, params.task_id)
            await asyncio.to_thread(push.configs.delete, principal.tenant, params.task_id, params.id)

        async def on_get_extended_agent_card(self, params: Any, context: Any) -> Any:
            raise errors.ExtendedAgentCardNotConfiguredError()

    return WorkflowAgent()


def _check_input(plan: Any, data: Any, errors: Any) -> None:
    schema = plan.data_input_schema
    if schema is None or schema.validator is None or not schema.fail_on_validation_errors:
        return
    problems = [f"#/{'/'.join(str(p) for p in e.absolute_path)}: {e.message[:200]}"
                for e in schema.validator.iter_errors(data)]
    if problems:
        raise errors.InvalidParamsError(message="the input does not match the workflow's input schema: "
                                                + "; ".join(problems[:5]))


def _working(view: dict[str, Any]) -> dict[str, Any]:
    return {**view, "status": {"state": "TASK_STATE_WORKING", "timestamp": view["status"].get("timestamp")}}


async def _last_reply(state: ServiceState, instance_id: str) -> str | None:
    records = state.hub.recent(instance_id) or await state.runtime.history(instance_id)
    replies = [r for r in records if r.get("event") == "agent_reply"]
    if not replies:
        replies = [r for r in await state.runtime.history(instance_id) if r.get("event") == "agent_reply"]
    if not replies:
        return None
    reply = replies[-1].get("reply")
    return reply if isinstance(reply, str) else None
