"""The scripted model server, exercised over real HTTP (httpx) and through litellm."""

from __future__ import annotations

import asyncio
import json
import math

import httpx
import pytest

from xflow_runtime.testing import REDACTED, ScriptedModelServer, ScriptError, as_script, load_script


def chat(server: ScriptedModelServer, content: str = "hi", **extra) -> httpx.Response:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": content}], **extra}
    return httpx.post(server.api_base + "/chat/completions", json=body, headers={"Authorization": "Bearer sk-secret"})


def test_replies_are_consumed_in_order_then_default_then_400():
    script = {"replies": ["one", {"json": {"n": 2}}], "default": {"text": "fallback"}}
    with ScriptedModelServer(script) as server:
        assert chat(server).json()["choices"][0]["message"]["content"] == "one"
        assert json.loads(chat(server).json()["choices"][0]["message"]["content"]) == {"n": 2}
        assert chat(server).json()["choices"][0]["message"]["content"] == "fallback"
    with ScriptedModelServer(["only"]) as server:
        chat(server)
        exhausted = chat(server)
        assert exhausted.status_code == 400
        assert "exhausted" in exhausted.json()["error"]["message"]


def test_rules_match_last_user_message_tools_and_model_and_respect_times():
    script = {
        "replies": ["queued"],
        "rules": [
            {"when": {"last_user_contains": "weather", "tools": True}, "reply": "sunny", "times": 1},
            {"when": {"model": "openai/small"}, "reply": "small model"},
        ],
    }
    tools = [{"type": "function", "function": {"name": "x", "parameters": {"type": "object"}}}]
    with ScriptedModelServer(script) as server:
        assert chat(server, "weather?").json()["choices"][0]["message"]["content"] == "queued"  # no tools
        server.set_script(script)
        assert chat(server, "weather?", tools=tools).json()["choices"][0]["message"]["content"] == "sunny"
        assert chat(server, "weather?", tools=tools).json()["choices"][0]["message"]["content"] == "queued"
        small = httpx.post(server.api_base + "/chat/completions", json={"model": "small", "messages": []})
        assert small.json()["choices"][0]["message"]["content"] == "small model"


def test_parallel_tool_calls_have_ids_names_and_json_arguments():
    reply = {"tool_calls": [{"name": "A", "arguments": {"x": 1}}, {"name": "B", "arguments": "not json", "id": "c9"}]}
    with ScriptedModelServer([reply]) as server:
        choice = chat(server).json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    calls = choice["message"]["tool_calls"]
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls] == [
        ("call_1_0", "A", '{"x": 1}'),
        ("c9", "B", "not json"),
    ]


def test_failures_for_next_calls_and_for_one_model_do_not_consume_the_script():
    with ScriptedModelServer(["a", "b"]) as server:
        server.fail_next(2, status=429, message="slow down")
        assert [chat(server).status_code for _ in range(2)] == [429, 429]
        assert chat(server).json()["choices"][0]["message"]["content"] == "a"
        server.fail_model("gpt-4o", status=503)
        response = chat(server)
        assert response.status_code == 503 and response.json()["error"]["type"] == "api_error"
        assert server.replies_left == 1


def test_requests_are_recorded_with_authorization_redacted_unless_asked():
    with ScriptedModelServer(["a"]) as server:
        chat(server, "hello")
        recorded = server.requests[0]
    assert recorded.headers["authorization"] == REDACTED
    assert recorded.body["messages"] == [{"role": "user", "content": "hello"}]
    with ScriptedModelServer(["a"], record_authorization=True) as server:
        chat(server)
        assert server.requests[0].headers["authorization"] == "Bearer sk-secret"
        server.reset()
        assert server.requests == []


def test_streaming_answers_as_server_sent_events_with_usage():
    with ScriptedModelServer([{"tool_calls": [{"name": "A", "arguments": {"q": 1}}]}]) as server:
        response = chat(server, stream=True, stream_options={"include_usage": True})
    assert response.headers["content-type"] == "text/event-stream"
    events = [line[len("data: "):] for line in response.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    assert chunks[-1]["usage"]["total_tokens"] > 0
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert any(d.get("tool_calls", [{}])[0].get("function", {}).get("name") == "A" for d in deltas if d.get("tool_calls"))


def test_embeddings_are_deterministic_normalised_and_similar_for_similar_texts():
    with ScriptedModelServer(embedding_dimensions=32) as server:
        body = {"model": "emb", "input": ["the cat sat on the mat", "the cat sat", "quantum flux capacitor"]}
        data = httpx.post(server.api_base + "/embeddings", json=body).json()["data"]
        again = httpx.post(server.api_base + "/embeddings", json=body).json()["data"]
        wide = httpx.post(server.api_base + "/embeddings", json={**body, "dimensions": 8}).json()["data"]
    vectors = [item["embedding"] for item in data]
    assert vectors == [item["embedding"] for item in again]
    assert all(len(v) == 32 and math.isclose(sum(x * x for x in v), 1.0, rel_tol=1e-9) for v in vectors)
    cosine = lambda a, b: sum(x * y for x, y in zip(a, b))  # noqa: E731
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2])
    assert len(wide[0]["embedding"]) == 8


def test_latency_is_added_per_call_and_concurrent_calls_overlap():
    async def run(server: ScriptedModelServer) -> float:
        async with httpx.AsyncClient() as client:
            body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
            loop = asyncio.get_running_loop()
            start = loop.time()
            await asyncio.gather(*(client.post(server.api_base + "/chat/completions", json=body) for _ in range(20)))
            return loop.time() - start

    with ScriptedModelServer({"default": "ok", "latency": 0.5}) as server:
        elapsed = asyncio.run(run(server))
        assert server.max_in_flight >= 15  # (nearly) all waited at the same time
    assert 0.5 <= elapsed < 5.0  # 20 calls of 0.5 s overlapped, not 10 s in sequence


def test_reply_script_file_and_clear_errors(tmp_path):
    path = tmp_path / "replies.yaml"
    path.write_text("latency: 0.01\nreplies:\n  - text: hi\n  - tool_calls:\n      - {name: T, arguments: {a: 1}}\n")
    script = load_script(str(path))
    assert script.latency == 0.01 and script.replies[1].tool_calls[0].name == "T"
    with pytest.raises(ScriptError, match="exactly one of"):
        as_script([{"text": "a", "json": {}}])
    with pytest.raises(ScriptError, match="unknown reply-script keys: bogus"):
        as_script({"bogus": 1})
    bad = tmp_path / "bad.yaml"
    bad.write_text("replies: [ {")
    with pytest.raises(ScriptError, match="not valid YAML"):
        load_script(str(bad))


def test_litellm_talks_to_the_server(scripted_model):
    from xflow_runtime._env import apply_offline_defaults

    apply_offline_defaults()
    import litellm

    scripted_model.set_script(["hello from the script"])
    response = litellm.completion(model="openai/gpt-4o", api_base=scripted_model.api_base, api_key="sk-test",
                                  messages=[{"role": "user", "content": "hi"}], max_retries=0)
    assert response.choices[0].message.content == "hello from the script"
    assert scripted_model.chat_requests[0].body["model"] == "gpt-4o"
