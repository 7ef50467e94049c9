"""Helpers for interpreter tests: compile inline YAML, run it, collect history."""

from __future__ import annotations

from typing import Any

import yaml

from xflow_runtime.engine.inprocess import run_workflow
from xflow_runtime.interpreter import ExecutionResult
from xflow_runtime.plan import WorkflowPlan, compile_plan

HEADER = "specVersion: '0.8'\n"


def plan(text: str) -> WorkflowPlan:
    document = yaml.safe_load(text)
    document.setdefault("specVersion", "0.8")
    document.setdefault("id", "test")
    return compile_plan(document)


class History(list):
    """An observer that keeps every record; helpers pick out what tests assert on."""

    def __call__(self, record: dict[str, Any]) -> None:
        self.append(record)

    def states(self) -> list[str]:
        return [r["state"] for r in self if r["event"] == "state_entered"]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self if r["event"] == kind]


async def run(text: str | WorkflowPlan, input: Any = None, **options: Any) -> ExecutionResult:
    compiled = plan(text) if isinstance(text, str) else text
    return await run_workflow(compiled, input, **options)


def event(type_: str, source: str, data: Any = None, **attributes: Any) -> dict[str, Any]:
    return {"specversion": "1.0", "id": f"{type_}-{len(attributes)}", "type": type_, "source": source,
            "data": data, **attributes}
