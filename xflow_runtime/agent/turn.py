"""One agent turn: from a user message to a validated answer, through the tool loop.

    LLM(tools: auto) ─▶ tool calls? ─yes─▶ run them (concurrently) ─▶ LLM again …
                          │ no                  (budget spent: LLM with tool_choice "none")
                          ▼
                    final text ─▶ parse + validate against ``output`` ─invalid─▶ ask once more
                                                                          ─invalid─▶ AgentOutputInvalid

Every LLM call is a recorded step ``<scope>/llm:<n>`` (``port.run_step``), reported to the
history as an ``llm_call`` record with its model, token usage and cost.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from xflow_runtime.interpreter import records
from xflow_runtime.error_codes import AGENT_OUTPUT_INVALID as OUTPUT_INVALID
from xflow_runtime.agent.tools import ToolRun, execute_tool_calls, refused
from xflow_runtime.errors import WorkflowError
from xflow_runtime.interpreter.services import SelectiveReplyTokenSink
from xflow_runtime.interpreter.state_run import StateRun
from xflow_runtime.llm.client import ChatRequest, ChatResult, LLMClient
from xflow_runtime.llm.config import LLMGroup, LLMNode, LLMTarget
from xflow_runtime.agent.plan import AIAgentState

REPAIR_PROMPT = ("Your previous answer is not valid: {problems}\n"
                 "Answer again with only a JSON object that matches the required JSON Schema.")
BUDGET_SPENT = "not executed: the agent may run at most {limit} tool calls per turn (maxToolExecutions)"
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


@dataclass
class Counters:
    """Step numbering within one state visit (continues across the turns of a conversation)."""

    llm_calls: int = 0
    tool_calls: int = 0


@dataclass
class TurnResult:
    return_values: Any
    log: str
    tool_runs: list[ToolRun] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)  # what memory stores for this turn

    def outcome(self) -> dict[str, Any]:
        """``$agentOutcome``."""
        return {"returnValues": self.return_values, "log": self.log,
                "toolCalls": [tool_run.to_dict() for tool_run in self.tool_runs], "usage": dict(self.usage)}


class Turn:
    def __init__(self, run: StateRun, state: AIAgentState, data: Any, scope: str, counters: Counters, client: LLMClient,
                 memory: Any = None, mcp_tools: Any = None):
        self.run, self.state, self.data, self.scope = run, state, data, scope
        self.counters = counters
        self.client = client
        self.memory = memory  # LongTermHook | None (xflow_runtime.agent.longterm_hook)
        self.mcp_tools = mcp_tools or {}  # the visit's MCP tools by model-facing name (xflow_runtime.mcp)
        self.usage: dict[str, Any] = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}

    async def run_turn(self, system_text: str, history: list[dict[str, Any]], user_text: str) -> TurnResult:
        state = self.state
        turn_messages: list[dict[str, Any]] = [{"role": "user", "content": user_text}]
        prefix = [{"role": "system", "content": system_text}, *history]
        tool_runs: list[ToolRun] = []
        offered = ([tool.openai_tool() for tool in state.tools] + [t.openai_tool() for t in self.mcp_tools.values()]
                   + (self.memory.tools() if self.memory else []))
        tools = offered if offered and state.max_tool_executions > 0 else None  # memory tools share the budget
        budget = state.max_tool_executions
        while True:
            tools_open = tools is not None and len(tool_runs) < budget
            choice = None if tools is None else ("auto" if tools_open else "none")
            reply = await self.call(prefix + turn_messages, tools, choice)
            message = reply["message"]
            calls = message.get("tool_calls") or []
            if not calls or not tools_open:
                final = {"role": "assistant", "content": message.get("content")}  # stray calls dropped
                break
            turn_messages.append(message)
            allowed = calls[: budget - len(tool_runs)]
            runs = await execute_tool_calls(self.run, state, allowed, scope=self.scope,
                                            first_number=self.counters.tool_calls, memory=self.memory,
                                            extra_tools=self.mcp_tools)
            self.counters.tool_calls += len(allowed)
            runs += [refused(call, BUDGET_SPENT.format(limit=budget)) for call in calls[len(allowed):]]
            tool_runs.extend(runs)
            turn_messages.extend(tool_run.message() for tool_run in runs)
        final_text = final["content"] or ""
        return_values, final_text = await self.validated(prefix + turn_messages, final_text, tools)
        turn_messages.append({"role": "assistant", "content": final_text})
        return TurnResult(return_values=return_values, log=final_text, tool_runs=tool_runs, usage=self.usage,
                          messages=turn_messages)

    async def validated(self, messages: list[dict[str, Any]], text: str, tools: Any) -> tuple[Any, str]:
        """The answer's return values; one repair round when it breaks the ``output`` schema."""
        schema = self.state.output
        if schema is None:
            return {"response": text}, text
        value, problems = _parse(text, schema)
        if not problems:
            return value, text
        repair = [*messages, {"role": "assistant", "content": text},
                  {"role": "user", "content": REPAIR_PROMPT.format(problems="; ".join(problems))}]
        reply = await self.call(repair, tools, None if tools is None else "none")
        text = reply["message"].get("content") or ""
        value, problems = _parse(text, schema)
        if problems:
            raise WorkflowError(f"agent '{self.state.agent_name}' answered twice without matching its output "
                                f"schema: {'; '.join(problems)}", name=OUTPUT_INVALID, code=OUTPUT_INVALID,
                                details={"problems": problems, "answer": text})
        return value, text

    async def call(self, messages: list[dict[str, Any]], tools: Any, tool_choice: str | None) -> ChatResult:
        state = self.state
        if self.memory is not None:  # before every call: a write earlier in this turn shows at once
            messages = [{"role": "system", "content": await self.memory.system_prompt(messages[0]["content"])},
                        *messages[1:]]
        self.counters.llm_calls += 1
        step = f"{self.scope}/llm:{self.counters.llm_calls}"
        request = ChatRequest(messages=messages, tools=tools, tool_choice=tool_choice,
                              output_schema=None if state.output is None else state.output.schema,
                              output_name=_schema_name(state.agent_name))
        keys = {target: _api_key(target, self.data, self.run.variables) for target in targets_of(state.llm)}
        result: ChatResult = await self.run.port.run_step(step, lambda: self._complete(request, keys, step))
        usage = result["usage"]
        self.usage["calls"] += 1
        for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
            self.usage[key] += usage.get(key) or 0
        if usage.get("cost") is not None:
            self.usage["cost"] = self.usage.get("cost", 0.0) + usage["cost"]
        self.run.record(records.LLM_CALL, state=state.name, step=step, model=result["model"], usage=dict(usage),
                        attempts=result["attempts"], latency_ms=result["latency_ms"])
        return result


    async def _complete(self, request: ChatRequest, keys: dict[LLMTarget, str | None], step: str) -> ChatResult:
        """The call itself (not run again on a durable replay); streamed when the runtime listens
        for reply tokens and the sink wants this instance's (``SelectiveReplyTokenSink``)."""
        sink = self.run.services.reply_tokens
        telemetry = self.run.telemetry
        instance_id = self.run.root.instance_id
        if sink is None or (isinstance(sink, SelectiveReplyTokenSink) and not sink.wants(instance_id)):
            return await self.client.complete(self.state.llm, request, keys, telemetry=telemetry)
        try:
            return await self.client.complete(self.state.llm, request, keys, telemetry=telemetry,
                                              on_delta=lambda text: sink(instance_id, step, text, False))
        finally:
            sink(instance_id, step, "", True)


def targets_of(node: LLMNode) -> list[LLMTarget]:
    if isinstance(node, LLMGroup):
        return [target for child in node.targets for target in targets_of(child)]
    return [node]


def _api_key(target: LLMTarget, data: Any, variables: Any) -> str | None:
    if target.api_key is None:
        return None
    value = target.api_key.render(data, variables)
    return None if value is None else str(value)


def _parse(text: str, schema: Any) -> tuple[Any, list[str]]:
    fenced = _FENCE.match(text)
    try:
        value = json.loads(fenced.group(1) if fenced else text)
    except json.JSONDecodeError as error:
        return None, [f"the answer is not JSON ({error.msg} at position {error.pos})"]
    return value, schema.errors(value)


def _schema_name(agent_name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", agent_name)[:64] or "agent_output"
