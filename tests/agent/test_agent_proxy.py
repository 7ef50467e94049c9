"""``aiagentproxy`` against a small external agent server started by the test (a real HTTP server
on 127.0.0.1): the runtime sends the agent config, the rendered user message, the chat-memory
window and the workflow id; the agent's synchronous answer is ``$agentOutcome``; the turn is kept
in chat memory, so the next call sees it (specs/states-human.md §7)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.support.json_server import JsonServer
from xflow_runtime import HttpSettings, Runtime

ROOT = Path(__file__).resolve().parents[2]


class AgentServer(JsonServer):
    """Answers POST /api/execute with ``{returnValues: {response, escalate}, log}``; records requests."""

    def __init__(self) -> None:
        super().__init__(self._answer)

    @staticmethod
    def _answer(method: str, path: str, body: Any) -> tuple[int, Any]:
        question = body["agentContext"]["userMessage"]
        return 200, {"returnValues": {"response": f"About '{question}': paid.", "escalate": "lawyer" in question},
                     "log": "looked it up"}


@pytest.fixture
def agent() -> Iterator[AgentServer]:
    server = AgentServer()
    yield server
    server.close()


async def test_a_proxy_agent_answers_synchronously_and_its_turn_is_remembered(agent, tmp_path) -> None:
    http = HttpSettings(base_urls={"external-agent": agent.url})
    async with Runtime("inprocess", database_url=f"sqlite:///{tmp_path / 'm.sqlite'}", http=http) as runtime:
        plan = runtime.load(ROOT / "workflows" / "proxy-agent.yaml")
        first = await (await runtime.start(plan, {"question": "my invoice", "customer": "c1"})).result()
        second = await (await runtime.start(plan, {"question": "and the refund?", "customer": "c1"})).result()
        third = await (await runtime.start(plan, {"question": "I need a lawyer", "customer": "c2"})).result()
    assert first["answer"] == "About 'my invoice': paid." and first["answered"] is True
    assert third["escalated"] is True and third["escalate"] is True  # no dataFilter: returnValues merged
    sent = agent.requests[0]
    assert sent["path"] == "/api/execute"
    assert sent["body"]["workflowId"] == "proxy-agent"
    assert sent["body"]["agentConfig"] == {"agentName": "billing-expert", "systemMessage": "You answer billing questions."}
    assert sent["body"]["agentContext"]["userMessage"] == "my invoice"
    assert sent["body"]["agentContext"]["messages"] == []
    # the second conversation of customer c1 sees the first turn (memoryId billing-c1), c2 sees none
    remembered = agent.requests[1]["body"]["agentContext"]["messages"]
    assert [(m["role"], m["content"]) for m in remembered] == [("user", "my invoice"), ("assistant", "looked it up")]
    assert agent.requests[2]["body"]["agentContext"]["messages"] == []
    assert second["answer"].startswith("About 'and the refund?'")


async def test_an_unreachable_agent_is_an_error_on_errors_can_catch(tmp_path) -> None:
    source = (ROOT / "workflows" / "proxy-agent.yaml").read_text().replace(
        "    agentOutcomes:\n", "    onErrors: [{errorRef: down, transition: human}]\n    agentOutcomes:\n", 1)
    source = source.replace("start: ask\n", "start: ask\nerrors: [{name: down, code: ConnectError}]\n")
    (tmp_path / "p.yaml").write_text(source)
    http = HttpSettings(base_urls={"external-agent": "http://127.0.0.1:9"}, connect_timeout=2.0)
    async with Runtime("inprocess", http=http, chat_memory=False) as runtime:
        handle = await runtime.start(runtime.load(tmp_path / "p.yaml"), {"question": "q", "customer": "c"})
        try:
            output = await handle.result()
        except Exception as error:  # noqa: BLE001 - shown when the code differs
            pytest.fail(f"not caught: {error}")
    assert output["escalated"] is True


ASYNC_PROXY = """
id: async-proxy
specVersion: '0.8'
start: ask
functions:
  - {name: agent, type: custom, operation: agent}
states:
  - name: ask
    type: aiagentproxy
    agentName: researcher
    userMessage: '${ .question }'
    execution: {functionRef: agent}
    agentOutcomes:
      - dataFilter: {data: '${ {answer: .returnValues.response} }'}
        transition: done
  - {name: done, type: inject, data: {}, end: true}
"""


async def test_an_acknowledging_agent_answers_through_the_python_api(tmp_path) -> None:
    """In process, without the service: the callback is ``Runtime.agent_callback``."""
    from xflow_runtime.agent.proxy_callbacks import CallbackError, CallbackSettings

    asked: list[dict[str, Any]] = []

    def agent(workflowId: str, agentConfig: dict, agentContext: dict, requestId: str,  # noqa: N803
              callbackUrl: str, callbackToken: str) -> dict[str, str]:
        asked.append({"requestId": requestId, "url": callbackUrl, "token": callbackToken})
        return {"requestId": requestId}  # acknowledged: the answer comes later

    (tmp_path / "p.yaml").write_text(ASYNC_PROXY)
    settings = CallbackSettings(base_url="https://flows.example.com/", secrets=("k" * 32,))
    async with Runtime("inprocess", database_url=f"sqlite:///{tmp_path / 'x.sqlite'}", functions={"agent": agent},
                       callbacks=settings) as runtime:
        handle = await runtime.start(runtime.load(tmp_path / "p.yaml"), {"question": "why?"})
        for _ in range(500):
            if asked:
                break
            await asyncio.sleep(0.02)
        request = asked[0]
        assert request["url"] == (f"https://flows.example.com/v1/callbacks/agent-proxy/{request['requestId']}"
                                  f"?token={request['token']}")
        with pytest.raises(CallbackError) as refused:
            await runtime.agent_callback("someone-else", request["token"], {"returnValues": {}})
        assert refused.value.kind == "forbidden"
        with pytest.raises(CallbackError) as invalid:
            await runtime.agent_callback(request["requestId"], request["token"], ["not", "an", "answer"])
        assert invalid.value.kind == "invalid"
        answer = {"returnValues": {"response": "because"}}
        first = await runtime.agent_callback(request["requestId"], request["token"], answer)
        assert first == {"requestId": request["requestId"], "status": "answered", "duplicate": False}
        assert (await handle.result(timeout=60))["answer"] == "because"
        assert (await runtime.agent_callback(request["requestId"], request["token"], answer))["duplicate"] is True
