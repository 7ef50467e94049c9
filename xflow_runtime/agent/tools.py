"""Executing the tool calls of one model reply: validate, call, validate, answer.

Every call the model makes gets exactly one ``tool`` message back (OpenAI requires it), in the
order of the calls. Problems are reported to the model as the tool result, so it can correct
itself, instead of failing the state (``specs/agent.md``, "Tools"):

- unknown tool, arguments that are not a JSON object, or arguments that break the tool's
  ``parameters`` schema → ``{"error": …}``, the function is not called;
- the function fails → ``{"error": {"code", "message"}}``;
- its result breaks the tool's ``output`` schema → ``{"error": …}``.

The calls of one reply run concurrently (each in its own scope); each function call is its own
recorded step named ``<scope>/tool:<n>:<tool name>``.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Mapping

from xflow_runtime.engine.scopes import start_tasks
from xflow_runtime.interpreter import records
from xflow_runtime.interpreter.failures import Failure
from xflow_runtime.interpreter.state_run import StateRun
from xflow_runtime.agent.plan import AgentTool, AIAgentState
from xflow_runtime.plan.model import Action, FunctionRef


@dataclass
class ToolRun:
    """One executed (or refused) tool call: what ``$agentOutcome.toolCalls`` lists."""

    id: str
    name: str
    arguments: Any
    result: Any = None
    error: Any = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def message(self) -> dict[str, Any]:
        content = self.result if self.ok else {"error": self.error}
        return {"role": "tool", "tool_call_id": self.id, "content": json.dumps(content, ensure_ascii=False)}

    def to_dict(self) -> dict[str, Any]:
        entry = {"id": self.id, "name": self.name, "arguments": self.arguments}
        entry.update({"result": self.result} if self.ok else {"error": self.error})
        return entry


#: A tool call's arguments and result are recorded in the instance's history (the console's timeline)
#: up to this many characters of JSON each; the model sees them whole.
RECORDED_VALUE_CHARS = 2000


def _recorded(value: Any) -> Any:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return value if len(text) <= RECORDED_VALUE_CHARS else {"truncated": text[:RECORDED_VALUE_CHARS]}


def record_tool_call(run: StateRun, state: AIAgentState, step: str, entry: "ToolRun") -> None:
    outcome = {"result": _recorded(entry.result)} if entry.ok else {"error": _recorded(entry.error)}
    run.record(records.TOOL_CALL, state=state.name, step=step, tool=entry.name, call_id=entry.id,
               arguments=_recorded(entry.arguments), **outcome)


async def execute_tool_calls(run: StateRun, state: AIAgentState, calls: list[dict[str, Any]], *, scope: str,
                             first_number: int, memory: Any = None,
                             extra_tools: Mapping[str, AgentTool] | None = None) -> list[ToolRun]:
    """Run ``calls`` concurrently; ``first_number`` numbers their steps within the state visit.
    ``memory`` (a :class:`~xflow_runtime.agent.longterm_hook.LongTermHook`) runs the memory tools;
    ``extra_tools`` are the visit's MCP tools (:mod:`xflow_runtime.mcp.agent_tools`)."""
    steps = [f"{scope}/tool:{first_number + index}:{call['function']['name']}" for index, call in enumerate(calls)]
    _, tasks = start_tasks([_execute(run, state, call, step, memory, extra_tools or {})
                            for call, step in zip(calls, steps)])
    entries = list(await asyncio.gather(*tasks))
    for step, entry in zip(steps, entries):
        record_tool_call(run, state, step, entry)
    return entries


def refused(call: dict[str, Any], reason: str) -> ToolRun:
    """A call answered without running it (e.g. the tool budget is spent)."""
    return ToolRun(id=call["id"], name=call["function"]["name"], arguments=_arguments_or_text(call), error=reason)


async def _execute(run: StateRun, state: AIAgentState, call: dict[str, Any], step: str, memory: Any = None,
                   extra_tools: Mapping[str, AgentTool] = {}) -> ToolRun:  # noqa: B006 - never mutated
    telemetry = run.telemetry
    if telemetry is None:
        return await _execute_call(run, state, call, step, memory, extra_tools)
    name = call["function"]["name"]
    tool = state.tool(name) or extra_tools.get(name)
    memory_tool = memory is not None and memory.is_memory_tool(name)
    # Replayed from history: deferred, so a call answered from the recording leaves no span.
    with telemetry.tool(name, str(call.get("id")), _arguments_or_text(call),
                        description=tool.description if tool is not None else None,
                        tool_type="datastore" if memory_tool else "function",
                        replaying=getattr(run.port, "replaying", False)) as span:
        entry = await _execute_call(run, state, call, step, memory, extra_tools)
        telemetry.tool_result(span, entry.result, entry.error)
    return entry


async def _execute_call(run: StateRun, state: AIAgentState, call: dict[str, Any], step: str,
                        memory: Any = None, extra_tools: Mapping[str, AgentTool] = {}) -> ToolRun:  # noqa: B006
    name = call["function"]["name"]
    entry = ToolRun(id=call["id"], name=name, arguments=_arguments_or_text(call))
    if memory is not None and memory.is_memory_tool(name):
        result = await memory.call_tool(run.port, step, name, call["function"].get("arguments") or "{}")
        if isinstance(result, dict) and set(result) == {"error"}:
            entry.error = result["error"]
        else:
            entry.result = result
        return entry
    tool = state.tool(name) or extra_tools.get(name)
    if tool is None:
        available = [t.name for t in state.tools] + list(extra_tools)
        entry.error = f"unknown tool {name!r}; available: {', '.join(available) or 'none'}"
        return entry
    if isinstance(entry.arguments, str):
        entry.error = "arguments are not valid JSON"
        return entry
    if not isinstance(entry.arguments, dict):
        entry.error = "arguments must be a JSON object"
        return entry
    problems = tool.parameters.errors(entry.arguments)
    if problems:
        entry.error = "invalid arguments: " + "; ".join(problems)
        return entry
    try:
        if (isinstance(tool.execution, FunctionRef) and tool.execution.function.type == "mcp"
                and tool.execution.arguments is None):
            from xflow_runtime.mcp.elicitation import call_agent_tool  # may wait for the user (input_required)

            result = await call_agent_tool(run, state, tool.execution.function, entry.arguments, step)
        else:
            result = await run.invoke(Action(label=name, ref=tool.execution), entry.arguments, step)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # reported to the model, which may recover
        failure = Failure.from_exception(exc)
        entry.error = {"code": failure.code, "message": failure.message}
        return entry
    if tool.output is not None:
        problems = tool.output.errors(result)
        if problems:
            entry.error = "the tool's result does not match its output schema: " + "; ".join(problems)
            return entry
    entry.result = result
    return entry


def _arguments_or_text(call: dict[str, Any]) -> Any:
    text = call["function"].get("arguments") or "{}"
    try:
        return json.loads(text)
    except ValueError:
        return text  # kept as text: reported as "arguments are not valid JSON"
