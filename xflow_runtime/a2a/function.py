"""Functions of ``type: a2a`` (specs/a2a.md §2): ``operation`` is the agent card's URL (or the
agent's base URL), ``authRef`` authenticates us to the agent.

Called from an action, the arguments are the message: a string (its text), or an object
``{text, data?, taskId?, contextId?}``; the call is one blocking ``SendMessage`` (one recorded step,
like any function call) and the result is the ``$agentOutcome`` shape (``returnValues``, ``log``,
``status``, ``taskId``, ``contextId``); an input-required task is a result (continue it with its
``taskId``), the failure states are errors with the documented codes.

The ``aiagentproxy`` state drives the same function with an envelope ``{"$a2a": "card" | "send" |
"get" | "cancel", …}`` so each protocol call is a recorded step of its own, made with this
function's credentials and HTTP settings."""

from __future__ import annotations

import uuid
from typing import Any, Mapping

from xflow_runtime import a2a as codes
from xflow_runtime.a2a import outcome, wire
from xflow_runtime.errors import WorkflowError
from xflow_runtime.functions.auth import auth_headers
from xflow_runtime.functions.context import FunctionContext
from xflow_runtime.plan.functions import FunctionDef

ENVELOPE = "$a2a"


async def invoke_a2a(fn: FunctionDef, arguments: Any, context: FunctionContext) -> Any:
    timeout = context.http.timeouts.get(fn.name, context.http.timeout)
    if isinstance(arguments, Mapping) and ENVELOPE in arguments:
        timeout = float(arguments.get("timeout") or timeout)
    target = wire.AgentTarget(_card_url(fn, context), await auth_headers(fn.auth, context), timeout)
    if not isinstance(arguments, Mapping) or ENVELOPE not in arguments:
        return await _one_message(fn, target, arguments)
    operation = arguments[ENVELOPE]
    if operation == "card":
        return await wire.fetch_card(target)
    card = arguments["card"]
    if operation == "send":
        return await wire.send_message(target, card, arguments["message"],
                                       return_immediately=bool(arguments.get("returnImmediately")),
                                       push=arguments.get("push"))
    if operation == "get":
        return await wire.get_task(target, card, str(arguments["taskId"]))
    if operation == "cancel":
        return await wire.cancel_task(target, card, str(arguments["taskId"]))
    raise WorkflowError(f"function '{fn.name}': unknown A2A operation {operation!r}", code=codes.PROTOCOL_ERROR)


def _card_url(fn: FunctionDef, context: FunctionContext) -> str:
    """The operation's card URL; ``HttpSettings.base_urls[<function name>]`` replaces its base (the
    scheme, host and any path before the card's), as it does for ``rest`` functions."""
    override = context.http.base_urls.get(fn.name)
    if not override:
        return str(fn.operation)
    _, path = wire.split_card_url(str(fn.operation))
    card = path[path.rfind("/.well-known/"):] if "/.well-known/" in path else "/" + path.rsplit("/", 1)[-1]
    return override.rstrip("/") + card


async def _one_message(fn: FunctionDef, target: wire.AgentTarget, arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, str):
        arguments = {"text": arguments}
    if not isinstance(arguments, Mapping) or not isinstance(arguments.get("text", ""), str):
        raise WorkflowError(f"function '{fn.name}': A2A arguments are a text or {{text, data?, taskId?, contextId?}}",
                            code=codes.PROTOCOL_ERROR)
    card = await wire.fetch_card(target)
    message = user_message(str(uuid.uuid4()), arguments.get("text"), arguments.get("data"),
                           task_id=arguments.get("taskId"), context_id=arguments.get("contextId"))
    reply = await wire.send_message(target, card, message, return_immediately=False)
    if outcome.task_state(reply) == outcome.INPUT:
        return outcome.agent_outcome(fn.name, reply)
    if not outcome.is_settled(reply):
        raise WorkflowError(f"function '{fn.name}': the agent returned before the task settled; use an "
                            "aiagentproxy state with mode poll or push for long tasks", code=codes.PROTOCOL_ERROR)
    return outcome.agent_outcome(fn.name, reply)


def user_message(message_id: str, text: str | None, data: Any = None, *, task_id: str | None = None,
                 context_id: str | None = None) -> dict[str, Any]:
    """A ``ROLE_USER`` message (JSON form): a text part, then a data part when there is data."""
    parts: list[dict[str, Any]] = []
    if text:
        parts.append({"text": text})
    if data is not None:
        parts.append({"data": data})
    message: dict[str, Any] = {"messageId": message_id, "role": "ROLE_USER", "parts": parts}
    if task_id:
        message["taskId"] = task_id
    if context_id:
        message["contextId"] = context_id
    return message
