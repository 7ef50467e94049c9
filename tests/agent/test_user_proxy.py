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


async def _facilitate_as_ann(workflow: Path, url: str, server: ScriptedModelServer, messages: list[str],
                             between: Any = None) -> Any:
    """The signup conversation for user ann of tenant acme; ``between(runtime)`` runs after the first reply."""
    replies: list[dict[str, Any]] = []
    async with Runtime("inprocess", database_url=url, llm=LLMSettings(api_base=server.api_base, api_key="test"),
                       on_history=lambda r: replies.append(r) if r.get("event") == "agent_reply" else None) as rt:
        handle = await rt.start(rt.load(workflow), {"name": "Ann", "message": "sign me up"}, tenant="acme", user="ann")
        for number, text in enumerate(messages, start=1):
            for _ in range(500):
                if len(replies) >= number:
                    break
                await asyncio.sleep(0.02)
            if number == 1 and between is not None:
                await between(rt)
            await rt.send_message(handle.instance_id, text)
        return await handle.result(timeout=120)


def _with_memory_id(tmp_path: Path) -> Path:
    source = (ROOT / "workflows" / "signup-facilitator.yaml").read_text()
    target = tmp_path / "signup.yaml"
    target.write_text(source.replace("    agentRole: facilitator\n",
                                     "    agentRole: facilitator\n    memoryId: '${ \"signup-\" + .name }'\n", 1))
    return target


async def test_a_facilitators_turns_are_kept_in_chat_memory_like_an_agents(tmp_path) -> None:
    from xflow_runtime.memory.chat import ChatMemory
    from xflow_runtime.settings import locate

    url = f"sqlite:///{tmp_path / 'store' / 'xflow.sqlite'}"
    script = yaml.safe_load((ROOT / "workflows" / "signup-facilitator.replies.yaml").read_text())
    with ScriptedModelServer(script) as server:
        output = await _facilitate_as_ann(_with_memory_id(tmp_path), url, server,
                                          ["ann-at-example", "I am 34", "ann@example.com"])
        last_call = server.chat_requests[-1].messages
    assert output["profile"] == {"name": "Ann", "email": "ann@example.com", "age": 34}
    memory = ChatMemory.open(locate(url).memory_url)
    try:
        chats = await memory.list_chats(tenant="acme", user="ann")
        assert [(c.agent, c.memory_id) for c in chats] == [("signup-helper", "signup-Ann")]
        stored = await memory.history(chats[0].id, tenant="acme")
    finally:
        memory.close()
    assert [m["content"] for m in stored if m["role"] == "user"] == ["sign me up", "ann-at-example", "I am 34",
                                                                       "ann@example.com"]
    assistant = [m["content"] for m in stored if m["role"] == "assistant"]
    assert len(assistant) == 4 and "What is your email address?" in assistant[0]
    # each turn is loaded back from memory: the last call carries the three turns before it
    assert [m["content"] for m in last_call if m["role"] == "user"][:3] == ["sign me up", "ann-at-example", "I am 34"]


async def test_a_facilitator_writes_nothing_back_for_a_user_erased_while_it_waits(tmp_path) -> None:
    from xflow_runtime import erase_user
    from xflow_runtime.errors import WorkflowFailed
    from xflow_runtime.memory.chat import ChatMemory
    from xflow_runtime.settings import locate

    url = f"sqlite:///{tmp_path / 'store' / 'xflow.sqlite'}"
    script = yaml.safe_load((ROOT / "workflows" / "signup-facilitator.replies.yaml").read_text())

    async def erase(_runtime: Any) -> None:
        await erase_user("ann", tenant="acme", database_url=url)

    with ScriptedModelServer(script) as server:
        try:
            await _facilitate_as_ann(_with_memory_id(tmp_path), url, server, ["ann-at-example"], between=erase)
        except WorkflowFailed as failure:
            assert "erased" in str(failure)
        else:
            raise AssertionError("the write after the erasure was not refused")
    memory = ChatMemory.open(locate(url).memory_url)
    try:
        assert await memory.list_chats(tenant="acme", user="ann") == []
    finally:
        memory.close()
