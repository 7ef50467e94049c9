"""Helpers for agent tests: compile inline YAML, run it against the scripted model server."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Mapping

import yaml

from xflow_runtime.engine.inprocess import InProcessEngine, run_workflow
from xflow_runtime.interpreter import ExecutionResult
from xflow_runtime.interpreter.context import ExecutionContext
from xflow_runtime.interpreter.execute import execute
from xflow_runtime.llm import LLMClient, LLMSettings
from xflow_runtime.plan import WorkflowPlan, compile_plan
from xflow_runtime.testing import ScriptedModelServer

ANSWER_SCHEMA = {"type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"]}


def plan(text: str) -> WorkflowPlan:
    document = yaml.safe_load(text)
    document.setdefault("specVersion", "0.8")
    document.setdefault("id", "agent-test")
    return compile_plan(document)


def client(server: ScriptedModelServer, **settings: Any) -> LLMClient:
    return LLMClient(LLMSettings(api_base=server.api_base, **settings))


class Records(list):
    def __call__(self, record: dict[str, Any]) -> None:
        self.append(record)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self if r["event"] == kind]


async def run(workflow: str | WorkflowPlan, server: ScriptedModelServer, input: Any = None, *,
              functions: Mapping[str, Callable[..., Any]] | None = None, records: Records | None = None,
              llm: LLMClient | None = None, **options: Any) -> ExecutionResult:
    compiled = plan(workflow) if isinstance(workflow, str) else workflow
    return await run_workflow(compiled, input or {}, functions=functions, observer=records,
                              services={"llm": llm or client(server)}, virtual_time=False, **options)


class Conversation:
    """Drives a multi-turn agent instance: waits for each reply, then sends the next message."""

    def __init__(self, workflow: str | WorkflowPlan, server: ScriptedModelServer, input: Any = None, **context: Any):
        self.plan = plan(workflow) if isinstance(workflow, str) else workflow
        self.engine = InProcessEngine()
        self.records = Records()
        self.replies: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

        def observe(record: dict[str, Any]) -> None:
            self.records(record)
            if record["event"] == "agent_reply":
                self.replies.put_nowait(record)

        services = {"llm": client(server), **context.pop("services", {})}
        self.context = ExecutionContext(observer=observe, services=services, **context)
        self.task = asyncio.ensure_future(execute(self.plan, input or {}, port=self.engine, context=self.context))

    async def reply(self) -> dict[str, Any]:
        done = asyncio.ensure_future(self.replies.get())
        finished, _ = await asyncio.wait({done, self.task}, timeout=20, return_when=asyncio.FIRST_COMPLETED)
        if done not in finished:
            done.cancel()
            raise AssertionError(f"no agent reply; instance: {self.task.result() if self.task.done() else 'running'}")
        return done.result()

    def send(self, text: Any) -> None:
        self.engine.send("user-message", text)

    async def result(self) -> ExecutionResult:
        return await asyncio.wait_for(self.task, 20)
