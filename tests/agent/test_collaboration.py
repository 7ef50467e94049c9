"""Agent collaboration: a supervisor ``aiagent`` delegates to two collaborator agents (sub-workflows
offered as tools ``{request}``, ``collaborators``), each call recorded like any tool, each
collaborator in its own memory scope (specs/states-human.md §8)."""

from __future__ import annotations

import json
from pathlib import Path

from xflow_runtime import Runtime
from xflow_runtime.llm.client import LLMSettings
from xflow_runtime.testing import ScriptedModelServer

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = {"replies": [
    {"tool_calls": [{"name": "researcher", "arguments": {"request": "facts about otters"}}]},
    {"text": "Otters hold hands while sleeping."},
    {"tool_calls": [{"name": "writer", "arguments": {"request": "one line: Otters hold hands while sleeping."}}]},
    {"text": "Sleepy otters, holding hands."},
    {"text": "Here it is: Sleepy otters, holding hands."},
]}


async def test_a_supervisor_delegates_to_two_collaborators(tmp_path) -> None:
    records: list[dict] = []
    with ScriptedModelServer(SCRIPT) as server:
        async with Runtime("inprocess", llm=LLMSettings(api_base=server.api_base, api_key="test"),
                           database_url=f"sqlite:///{tmp_path / 'memory.sqlite'}",
                           workflows=[ROOT / "workflows" / "collaborators" / "researcher.yaml",
                                      ROOT / "workflows" / "collaborators" / "writer.yaml"],
                           on_history=records.append) as runtime:
            plan = runtime.load(ROOT / "workflows" / "supervisor.yaml")
            output = await (await runtime.start(plan, {"topic": "otters"})).result()
        requests = [r.body for r in server.chat_requests]
    assert output["response"] == "Here it is: Sleepy otters, holding hands."
    offered = {t["function"]["name"] for t in requests[0]["tools"]}
    assert offered == {"researcher", "writer"}
    # each collaborator got the supervisor's request as its user message, and only its own history
    assert requests[1]["messages"][-1]["content"] == "facts about otters"
    assert [m["role"] for m in requests[1]["messages"]] == ["system", "user"]
    assert requests[3]["messages"][-1]["content"] == "one line: Otters hold hands while sleeping."
    assert [m["role"] for m in requests[3]["messages"]] == ["system", "user"]
    # the supervisor saw each collaborator's answer as the tool result
    tool_results = [m for m in requests[4]["messages"] if m["role"] == "tool"]
    assert [json.loads(m["content"])["response"] for m in tool_results] == [
        "Otters hold hands while sleeping.", "Sleepy otters, holding hands."]
    steps = [r.get("step", "") for r in records if r.get("event") == "llm_call"]
    # each delegation is a recorded tool step, with the collaborator's own LLM call inside it
    assert steps == ["1:plan/llm:1", "1:plan/tool:0:researcher/1:work/llm:1", "1:plan/llm:2",
                     "1:plan/tool:1:writer/1:work/llm:1", "1:plan/llm:3"]
