"""An MCP tool of an ``aiagent`` that needs the user's input (2026-07-28 ``input_required``).

The call is one recorded step; when the server answers ``input_required``, each elicitation is
shown to the user as an ``agent_reply`` record (its ``message``; the record also carries
``mcpInput``: server, tool, key, requested schema) and the instance waits durably for the next
user message (topic ``user-message``: the chat endpoints, ``xflow chat``,
``Runtime.send_message``), bounded by the state's ``eventTimeout``. The answers go back with the
``requestState`` as a new recorded step ``<call step>/input:<round>``. After a restart the wait
is resumed from history like any other wait; the server must still accept its ``requestState``
(the SDK's default key is per server process: a restarted stdio server refuses it).

A user message answers an elicitation as ``{action: accept|decline|cancel, content?}``, a JSON
object (the content, accepted), ``decline`` / ``cancel``, or, when the requested schema has a
single property, a bare value for it. Content that breaks the requested schema is asked again.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Mapping

from xflow_runtime.agent import AGENT_REPLY, USER_MESSAGE_TOPIC
from xflow_runtime.errors import WorkflowError
from xflow_runtime.interpreter.state_run import StateRun
from xflow_runtime.error_codes import TIMEOUT
from xflow_runtime.mcp import INPUT_REQUIRED
from xflow_runtime.mcp.calls import InputRequired, call_tool
from xflow_runtime.mcp.config import split_operation

#: A server that keeps asking is stopped after this many rounds.
MAX_ROUNDS = 10
ELICITATION = "elicitation/create"


async def call_agent_tool(run: StateRun, state: Any, function: Any, arguments: dict[str, Any], step: str) -> Any:
    server_name, tool = split_operation(function.operation, function.name)
    server = run.plan.mcp_servers[server_name]

    async def attempt(answers: dict[str, Any] | None, request_state: str | None) -> dict[str, Any]:
        outcome = await call_tool(run, server, tool, arguments, input_responses=answers, request_state=request_state)
        if isinstance(outcome, InputRequired):
            return {"inputRequired": {"requests": outcome.input_requests, "requestState": outcome.request_state}}
        return {"result": outcome}

    outcome = await run.port.run_step(step, lambda: attempt(None, None))
    for round_number in range(1, MAX_ROUNDS + 1):
        if "inputRequired" not in outcome:
            return outcome["result"]
        pending = outcome["inputRequired"]
        answers = {}
        for key, request in sorted(pending["requests"].items()):
            answers[key] = await _ask(run, state, server_name, tool, key, request)
        outcome = await run.port.run_step(f"{step}/input:{round_number}",
                                          functools.partial(attempt, answers, pending["requestState"]))
    raise WorkflowError(f"MCP tool {tool!r} of server {server_name!r} still needs input after {MAX_ROUNDS} rounds",
                        code=INPUT_REQUIRED, details={"server": server_name, "tool": tool})


async def _ask(run: StateRun, state: Any, server: str, tool: str, key: str, request: Mapping[str, Any]) -> dict[str, Any]:
    if request.get("method") != ELICITATION:
        raise WorkflowError(f"MCP tool {tool!r} of server {server!r} asks for {request.get('method')!r}, which this "
                            "runtime does not answer (only elicitation)", code=INPUT_REQUIRED,
                            details={"server": server, "tool": tool, "request": dict(request)})
    params = request.get("params") or {}
    schema = params.get("requestedSchema") or {"type": "object", "properties": {}}
    question = str(params.get("message") or f"The tool {tool} needs your input.")
    where = {"server": server, "tool": tool, "key": key, "requestedSchema": schema}
    run.record(AGENT_REPLY, state=state.name, turn=0, reply=question, outcome=None, mcpInput=where)
    while True:
        message = await run.port.wait_event(USER_MESSAGE_TOPIC, state.timeouts.event)
        if message is None:
            raise WorkflowError(f"agent '{state.agent_name}': no answer to the MCP tool {tool!r} within "
                                f"{state.timeouts.event:g} s", name="timeout", code=TIMEOUT)
        answer, problem = answer_of(message, schema)
        if problem is None:
            return answer
        run.record(AGENT_REPLY, state=state.name, turn=0, reply=f"{problem}\n{question}", outcome=None,
                   mcpInput=where)


def answer_of(message: Any, schema: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """``(ElicitResult as JSON, None)`` or ``({}, what is wrong)``."""
    if isinstance(message, Mapping) and message.get("action") in ("accept", "decline", "cancel"):
        answer = {"action": message["action"]}
        if message["action"] == "accept":
            answer["content"] = message.get("content") or {}
        return _checked(answer, schema)
    text = message if isinstance(message, str) else None
    if isinstance(message, Mapping):
        text = next((message[k] for k in ("text", "content", "message") if isinstance(message.get(k), str)), None)
    if text is None:
        return {}, "Please answer with text or {action, content}."
    word = text.strip().lower().lstrip("/")
    if word in ("decline", "cancel"):
        return {"action": word}, None
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    if isinstance(value, dict):
        return _checked({"action": "accept", "content": value}, schema)
    properties = schema.get("properties") or {}
    if len(properties) == 1:
        (name, _), = properties.items()
        kind = properties[name].get("type") if isinstance(properties[name], Mapping) else None
        return _checked({"action": "accept", "content": {name: text if kind == "string" else value}}, schema)
    return {}, f"Please answer with a JSON object with {', '.join(properties) or 'the requested fields'}."


def _checked(answer: dict[str, Any], schema: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    if answer["action"] != "accept":
        return answer, None
    from jsonschema import Draft202012Validator

    problems = sorted(error.message for error in Draft202012Validator(dict(schema)).iter_errors(answer["content"]))
    return (answer, None) if not problems else ({}, "That answer does not fit: " + "; ".join(problems) + ".")
