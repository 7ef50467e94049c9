"""An MCP tool that asks the user (``input_required``) parks the agent as a durable wait answered
like a chat message, also after the runtime restarted."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from tests.agent.support import Conversation, client  # noqa: E402
from tests.mcp.servers import build_server  # noqa: E402
from tests.mcp.support import HttpMcpServer, workflow  # noqa: E402
from xflow_runtime.mcp.elicitation import answer_of  # noqa: E402


AGENT = """
start: ask
mcpServers:
  - {name: prefs, transport: {stdio: {command: unused}}, protocol: 'ERA'}
states:
  - name: ask
    type: aiagent
    agentName: helper
    userMessage: '${ .question }'
    tools:
      - mcp: {server: prefs, include: [favourite]}
    agentOutcomes:
      - finish: true
        dataFilter: {data: '${ .toolCalls }', toStateData: '${ .calls }'}
    end: true
"""
SCHEMA = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}


def script() -> list[dict[str, Any]]:
    return [{"tool_calls": [{"name": "prefs_favourite", "arguments": {}}]}, {"text": "noted"}]


async def test_an_elicitation_waits_for_the_user_and_a_bad_answer_is_asked_again(scripted_model) -> None:
    scripted_model.set_script(script())
    talk = Conversation(workflow(AGENT.replace("ERA", "2026-07-28")), scripted_model, {"question": "hi"},
                        services={"llm": client(scripted_model), "mcp_servers": {"prefs": build_server()}})
    asked = await talk.reply()
    assert asked["reply"] == "Which colour?"
    assert asked["mcpInput"]["tool"] == "favourite" and asked["mcpInput"]["requestedSchema"]["required"] == ["colour"]
    talk.send({"action": "accept", "content": {"colour": 7}})
    again = await talk.reply()
    assert again["reply"].startswith("That answer does not fit: 7 is not of type 'string'")
    talk.send("teal")
    result = await talk.result()
    assert result.status == "completed", result.error
    assert result.output["calls"][0]["result"] == {"colour": "teal"}
    tool_message = [m for m in scripted_model.chat_requests[1].messages if m["role"] == "tool"][0]
    assert json.loads(tool_message["content"]) == {"colour": "teal"}


async def test_a_legacy_server_cannot_wait_its_elicitation_is_declined(scripted_model) -> None:
    scripted_model.set_script(script())
    talk = Conversation(workflow(AGENT.replace("ERA", "legacy")), scripted_model, {"question": "hi"},
                        services={"llm": client(scripted_model), "mcp_servers": {"prefs": build_server()}})
    result = await talk.result()
    assert result.status == "completed", result.error
    assert result.output["calls"][0]["error"]["code"] == "MCPToolError"


def test_answers_are_read_from_text_json_or_an_explicit_action() -> None:
    assert answer_of("teal", SCHEMA) == ({"action": "accept", "content": {"colour": "teal"}}, None)
    assert answer_of('{"colour": "red"}', SCHEMA) == ({"action": "accept", "content": {"colour": "red"}}, None)
    assert answer_of({"text": "/decline"}, SCHEMA) == ({"action": "decline"}, None)
    assert answer_of({"action": "cancel"}, SCHEMA) == ({"action": "cancel"}, None)
    two = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
    assert answer_of("5", two)[1].startswith("Please answer with a JSON object with a, b")
    assert answer_of('{"a": "x"}', two)[1] == "That answer does not fit: 'x' is not of type 'integer'."


@pytest.mark.slow
async def test_the_wait_survives_a_restart_of_the_runtime(scripted_model, tmp_path: Path) -> None:
    from xflow_runtime.runtime import Runtime

    replies: list[dict[str, Any]] = []
    with HttpMcpServer() as server:  # the server outlives both runtimes: it keeps its requestState key
        plan_text = AGENT.replace("ERA", "2026-07-28").replace(
            "transport: {stdio: {command: unused}}", f"transport: {{http: {{endpoint: '{server.url}'}}}}")
        import yaml

        document = {**yaml.safe_load(plan_text), "id": "mcp-wait", "specVersion": "0.8"}
        path = tmp_path / "wait.yaml"
        path.write_text(yaml.safe_dump(document))
        scripted_model.set_script(script())
        database = f"sqlite:///{tmp_path / 'wait.sqlite'}"
        llm = client(scripted_model)
        async with Runtime("durable", database_url=database, llm=llm,
                           on_history=lambda r: replies.append(r) if r.get("event") == "agent_reply" else None) as first:
            handle = await first.start(first.load(path), {"question": "hi"})
            instance_id = handle.instance_id
            for _ in range(600):
                if replies:
                    break
                await asyncio.sleep(0.05)
            assert replies and replies[0]["reply"] == "Which colour?"
        async with Runtime("durable", database_url=database, llm=llm) as second:
            handle = await second.resume(instance_id)
            await second.send_message(instance_id, "olive")
            output = await handle.result(timeout=60)
    assert output["calls"][0]["result"] == {"colour": "olive"}
    assert len(scripted_model.chat_requests) == 2
