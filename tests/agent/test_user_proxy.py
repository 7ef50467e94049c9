"""``userproxyagent`` in process (Runtime + the scripted model server): a relay passes text and
media and takes the user's answer; a facilitator collects a three-field form over several
messages, asking again for an invalid value (specs/states-human.md §6)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from xflow_runtime import Runtime
from xflow_runtime.llm.client import LLMSettings
from xflow_runtime.testing import ScriptedModelServer

ROOT = Path(__file__).resolve().parents[2]


async def converse(workflow: str, input: Any, messages: list[str], server: ScriptedModelServer | None = None):
    replies: list[dict[str, Any]] = []
    llm = LLMSettings(api_base=server.api_base, api_key="test") if server else None
    async with Runtime("inprocess", llm=llm,
                       on_history=lambda r: replies.append(r) if r.get("event") == "agent_reply" else None) as rt:
        handle = await rt.start(rt.load(ROOT / "workflows" / workflow), input)
        for number, text in enumerate(messages, start=1):
            for _ in range(200):  # the next message only once the state has answered the previous one
                if len(replies) >= number:
                    break
                await asyncio.sleep(0.02)
            await rt.send_message(handle.instance_id, text)
        return await handle.result(), replies


async def test_a_relay_passes_text_and_media_and_takes_the_answer() -> None:
    output, replies = await converse("relay-question.yaml", {"order": "A-17"}, ["Today please"])
    assert replies[0]["reply"] == "Your order A-17 is ready. Deliver today or tomorrow?"
    assert replies[0]["media"] == [{"uuid": "map-1", "url": "https://example.com/map.png", "mimeType": "image/png"}]
    assert output == {"order": "A-17", "when": "today", "booked": True}
    output, _ = await converse("relay-question.yaml", {"order": "B-2"}, ["later"])
    assert output["when"] == "tomorrow"


async def test_a_facilitator_collects_a_form_and_asks_again_for_an_invalid_value() -> None:
    script = yaml.safe_load((ROOT / "workflows" / "signup-facilitator.replies.yaml").read_text())
    with ScriptedModelServer(script) as server:
        output, replies = await converse("signup-facilitator.yaml", {"name": "Ann", "message": "sign me up"},
                                         ["ann-at-example", "I am 34", "ann@example.com"], server)
        systems = [request.messages[0]["content"] for request in server.chat_requests]
        users = [request.messages[-1]["content"] for request in server.chat_requests]
    assert output["profile"] == {"name": "Ann", "email": "ann@example.com", "age": 34} and output["registered"]
    assert [r["reply"] for r in replies] == ["Hi Ann! What is your email address?", "Thanks. How old are you?",
                                             "That email does not look right; please type it again. And your age?"]
    assert '"name": "Ann"' in systems[0]                       # knownData reaches the model
    assert "/email: 'ann-at-example' does not match" in systems[2]  # the invalid value is asked for again
    assert "ann-at-example" not in systems[2].split("Already known")[1].split("\n")[0]
    assert users == ["sign me up", "ann-at-example", "I am 34", "ann@example.com"]


async def test_known_data_that_completes_the_form_asks_nothing(tmp_path) -> None:
    source = (ROOT / "workflows" / "signup-facilitator.yaml").read_text()
    complete = source.replace("knownData: '${ {name: .name} }'", "knownData: '${ .known }'")
    (tmp_path / "complete.yaml").write_text(complete)
    known = {"name": "Bo", "email": "bo@example.com", "age": 40}
    with ScriptedModelServer({"replies": []}) as server:
        async with Runtime("inprocess", llm=LLMSettings(api_base=server.api_base, api_key="test")) as rt:
            output = await (await rt.start(rt.load(tmp_path / "complete.yaml"), {"known": known, "message": "hi"})).result()
        assert server.chat_requests == []
    assert output["profile"] == known
