"""A real A2A 1.0 agent built with ``a2a-sdk`` for the A2A tests: run as a process on 127.0.0.1
(``python tests/a2a/agent_server.py PORT CALL_LOG``) or in a test's own loop (:func:`build_app`).

What it does is chosen by the first word of the user's text:
- ``echo …``: completes at once with an artifact: a data part ``{"answer": <rest>, "n": 42}`` and a
  text part ``echo: <rest>``;
- ``slow <seconds> …``: works for that long, then completes like ``echo``;
- ``ask …``: asks for input (``INPUT_REQUIRED``, "Which account?"); the next message on the same
  task completes it with ``{"account": <that message>}``;
- ``fail`` / ``reject`` / ``auth``: ends FAILED / REJECTED / AUTH_REQUIRED with a message;
- ``never``: works and never finishes (until cancelled).

Every execution appends JSON lines to the call log: ``{"event": "started", ...}`` when it begins
and ``{"event": "completed", ...}`` when it reaches a final state, with the message id, task id,
the text and the ``traceparent`` header seen, so a test can count completed calls across a crash
of the caller."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import httpx
from a2a.helpers.proto_helpers import new_data_part, new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import BasePushNotificationSender, InMemoryPushNotificationConfigStore, InMemoryTaskStore, \
    TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Role
from starlette.applications import Starlette


class ScriptedAgent(AgentExecutor):
    def __init__(self, call_log: Path | None) -> None:
        self.call_log = call_log

    def _log(self, event: str, context: RequestContext, text: str) -> None:
        if self.call_log is None:
            return
        headers = context.call_context.state.get("headers", {}) if context.call_context else {}
        line = {"event": event, "message_id": context.message.message_id if context.message else None,
                "task_id": context.task_id, "context_id": context.context_id, "text": text,
                "traceparent": headers.get("traceparent")}
        with self.call_log.open("a") as log:
            log.write(json.dumps(line) + "\n")

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        current = context.current_task
        if current is None:  # a new task: the SDK wants the Task enqueued before any status update
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        self._log("started", context, text)
        if current is not None and current.status.state == 6:  # TASK_STATE_INPUT_REQUIRED: the answer
            await updater.start_work()
            await updater.add_artifact([new_data_part({"account": text})], name="result")
            await updater.complete()
            self._log("completed", context, text)
            return
        word, _, rest = text.partition(" ")
        await updater.start_work()
        if word == "slow":
            seconds, _, rest = rest.partition(" ")
            await asyncio.sleep(float(seconds))
            word = "echo"
        if word == "echo":
            await updater.add_artifact([new_data_part({"answer": rest, "n": 42}), new_text_part(f"echo: {rest}")],
                                       name="result")
            await updater.complete()
        elif word == "ask":
            await updater.requires_input(message=_agent_text("Which account?", context))
            self._log("input-required", context, text)
            return
        elif word == "fail":
            await updater.failed(message=_agent_text("the ledger is down", context))
        elif word == "reject":
            await updater.reject(message=_agent_text("I do not do refunds", context))
        elif word == "auth":
            await updater.requires_auth(message=_agent_text("sign in to the ledger first", context))
            return
        elif word == "never":
            await asyncio.Event().wait()
        else:
            await updater.failed(message=_agent_text(f"unknown request {word!r}", context))
        self._log("completed", context, text)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


def _agent_text(text: str, context: RequestContext) -> Any:
    message = new_text_message(text, context_id=context.context_id, task_id=context.task_id, role=Role.ROLE_AGENT)
    return message


def agent_card(base_url: str) -> AgentCard:
    return AgentCard(
        name="ledger", description="Answers questions about the ledger (a test agent).", version="1.0.0",
        supported_interfaces=[AgentInterface(url=base_url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain", "application/json"], default_output_modes=["application/json"],
        skills=[AgentSkill(id="ledger", name="ledger", description="ledger questions", tags=["test"])])


def build_app(base_url: str, call_log: Path | None = None) -> Starlette:
    card = agent_card(base_url)
    push_store = InMemoryPushNotificationConfigStore()
    handler = DefaultRequestHandler(
        agent_executor=ScriptedAgent(call_log), task_store=InMemoryTaskStore(), agent_card=card,
        push_config_store=push_store,
        # 127.0.0.1 webhooks are what the tests use, so the SSRF screening stays off here only.
        push_sender=BasePushNotificationSender(httpx.AsyncClient(timeout=10), push_store))
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")])


def main() -> None:
    import uvicorn

    port, call_log = int(sys.argv[1]), Path(sys.argv[2])
    uvicorn.run(build_app(f"http://127.0.0.1:{port}/", call_log), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
