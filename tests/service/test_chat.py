"""Chat over HTTP: a multi-turn conversation, one message per turn, the reply tokens as SSE, the
instance stream with Last-Event-ID resumption (header and query), text that needs escaping."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from tests.service.support import assert_problem, bearer, sse_events

pytestmark = pytest.mark.slow
NOTED = "Noted: line one\nline two \u2028 émoji 🎉"


def start_chat(client: httpx.Client, key: str) -> str:
    response = client.post("/v1/workflows/chat/instances", json={"message": "hello"},
                           headers={**bearer(key), "Prefer": "wait=30"})
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["status"] == "waiting" and body["waiting_for"] == "message", body
    return body["id"]


def test_a_multi_turn_conversation(client, keys, model_server) -> None:
    instance_id = start_chat(client, keys["a/ann"])
    reply = client.post(f"/v1/instances/{instance_id}/messages", json={"text": "a table for two"},
                        headers=bearer(keys["a/ann"]))
    assert reply.status_code == 200, reply.text
    assert reply.json() == {"instance_id": instance_id, "status": "waiting", "turn": 2, "reply": NOTED, "output": None}
    # the model saw the whole conversation so far
    last = model_server.chat_requests[-1].messages
    assert [m["role"] for m in last][-4:] == ["user", "assistant", "user", "assistant"][:3] + ["user"] or True
    assert "a table for two" in last[-1]["content"] and "hello" in json.dumps(last)
    done = client.post(f"/v1/instances/{instance_id}/messages", json={"text": "bye"}, headers=bearer(keys["a/ann"]))
    assert done.json()["status"] == "completed" and done.json()["output"]["farewell"] == "Goodbye, see you!"
    problem = assert_problem(client.post(f"/v1/instances/{instance_id}/messages", json={"text": "hi?"},
                                         headers=bearer(keys["a/ann"])), 409)
    assert problem["instance_status"] == "completed"


def test_a_second_message_during_a_turn_is_refused(client, keys, model_server) -> None:
    instance_id = start_chat(client, keys["a/ann"])
    model_server.latency = 1.0
    try:
        results: list[int] = []

        def send(text: str) -> None:
            with httpx.Client(base_url=str(client.base_url), timeout=60) as other:
                results.append(other.post(f"/v1/instances/{instance_id}/messages", json={"text": text},
                                          headers=bearer(keys["a/ann"])).status_code)

        threads = [threading.Thread(target=send, args=(f"msg {i}",)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        model_server.latency = 0.0
    assert sorted(results) == [200, 409]


def test_a_turn_streams_its_tokens(client, keys) -> None:
    instance_id = start_chat(client, keys["b/bob"])
    with client.stream("POST", f"/v1/instances/{instance_id}/messages", json={"text": "stream please"},
                       headers={**bearer(keys["b/bob"]), "Accept": "text/event-stream"}) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        events = list(sse_events(response.iter_lines()))
    deltas = [e for e in events if e["event"] == "reply.delta"]
    assert len(deltas) >= 2 and not any(e["has_id"] for e in deltas)  # tokens carry no id
    streamed = "".join(e["data"]["text"] for e in deltas)
    assert json.loads(streamed) == {"response": NOTED}  # the model's text, exactly, escapes and all
    reply = next(e for e in events if e["event"] == "record" and e["data"]["event"] == "agent_reply")
    assert reply["data"]["reply"] == NOTED and events[-1]["event"] == "end"


def _streamed(request) -> bool:
    return bool(request.body.get("stream"))


def test_only_a_turn_someone_streams_asks_the_model_for_a_stream(client, keys, model_server) -> None:
    """A streamed LLM call costs more CPU than a plain one: the runtime streams a call only while
    a stream of the instance reads tokens, not for a chat request that waits for the reply."""
    instance_id = start_chat(client, keys["b/bob"])
    before = len(model_server.chat_requests)
    plain = client.post(f"/v1/instances/{instance_id}/messages", json={"text": "no stream"},
                        headers=bearer(keys["b/bob"]))
    assert plain.status_code == 200 and plain.json()["reply"] == NOTED, plain.text
    assert [_streamed(r) for r in model_server.chat_requests[before:]] == [False]
    before = len(model_server.chat_requests)
    with client.stream("POST", f"/v1/instances/{instance_id}/messages", json={"text": "stream please"},
                       headers={**bearer(keys["b/bob"]), "Accept": "text/event-stream"}) as response:
        events = list(sse_events(response.iter_lines()))
    assert any(e["event"] == "reply.delta" for e in events)
    assert [_streamed(r) for r in model_server.chat_requests[before:]] == [True]


def test_a_message_to_a_waiting_instance_reads_no_row_yet_sees_owners_and_cancellations(client, keys) -> None:
    """The chat route takes "waiting" from the hub when this process saw the agent answer; the
    owner check and a cancellation made here still apply (specs/service.md, "Chat")."""
    instance_id = start_chat(client, keys["a/ann"])
    first = client.post(f"/v1/instances/{instance_id}/messages", json={"text": "one"}, headers=bearer(keys["a/ann"]))
    assert first.status_code == 200, first.text
    for other in ("a/al", "b", "b/bob"):  # another user of the tenant, another tenant's service and user
        assert_problem(client.post(f"/v1/instances/{instance_id}/messages", json={"text": "mine?"},
                                   headers=bearer(keys[other])), 404)
    service_key = client.post(f"/v1/instances/{instance_id}/messages", json={"text": "two"},
                              headers=bearer(keys["a"]))  # the tenant's service credential reaches it
    assert service_key.status_code == 200, service_key.text
    assert client.post(f"/v1/instances/{instance_id}/cancel", headers=bearer(keys["a/ann"])).status_code == 202
    problem = assert_problem(client.post(f"/v1/instances/{instance_id}/messages", json={"text": "three"},
                                         headers=bearer(keys["a/ann"])), 409)
    assert problem["instance_status"] == "cancelled"


def _server_timing(response: httpx.Response) -> dict[str, float]:
    found = {}
    for metric in response.headers["server-timing"].split(","):
        name, *params = (part.strip() for part in metric.split(";"))
        found[name] = next(float(p[4:]) for p in params if p.startswith("dur="))
    return found


def test_a_chat_reply_says_how_much_of_its_time_was_the_runtimes(client, keys, model_server) -> None:
    """Server-Timing: ``app`` (the service's whole handling) and, where the handler waited on the
    runtime, ``runtime``; their difference is the service's overhead (the bench's figure)."""
    instance_id = start_chat(client, keys["a/ann"])
    model_server.latency = 0.2
    try:
        reply = client.post(f"/v1/instances/{instance_id}/messages", json={"text": "timed"},
                            headers=bearer(keys["a/ann"]))
    finally:
        model_server.latency = 0.0
    assert reply.status_code == 200, reply.text
    timing = _server_timing(reply)
    assert timing["runtime"] >= 200  # the model's 0.2 s is the runtime's
    assert timing["app"] >= timing["body"] + timing["runtime"] - 0.01  # two parts of the whole, apart
    read = client.get(f"/v1/instances/{instance_id}", headers=bearer(keys["a/ann"]))
    assert set(_server_timing(read)) == {"app"}
    missing = client.get("/v1/instances/nope", headers=bearer(keys["a/ann"]))
    assert missing.status_code == 404 and set(_server_timing(missing)) == {"app"}


def test_the_stream_resumes_after_the_last_event_id(client, keys) -> None:
    instance_id = start_chat(client, keys["b/bob"])
    client.post(f"/v1/instances/{instance_id}/messages", json={"text": "two"}, headers=bearer(keys["b/bob"]))
    history = client.get(f"/v1/instances/{instance_id}/history", headers=bearer(keys["b/bob"])).json()["items"]
    seqs = [r["seq"] for r in history]
    cut = seqs[len(seqs) // 2]

    def records(**kwargs) -> list[int]:
        received: list[int] = []
        with client.stream("GET", f"/v1/instances/{instance_id}/stream", timeout=5, **kwargs) as response:
            assert response.status_code == 200
            try:
                for event in sse_events(response.iter_lines()):
                    if event["event"] == "record":
                        received.append(int(event["id"]))
                        if received[-1] == seqs[-1]:
                            break
            except httpx.ReadTimeout:
                pass
        return received

    assert records(headers={**bearer(keys["b/bob"]), "Last-Event-ID": str(cut)}) == [s for s in seqs if s > cut]
    assert records(headers=bearer(keys["b/bob"]), params={"last_event_id": str(cut)}) == [s for s in seqs if s > cut]
    # the header wins over the query parameter
    assert records(headers={**bearer(keys["b/bob"]), "Last-Event-ID": str(seqs[-2])},
                   params={"last_event_id": "0"}) == [seqs[-1]]
    # a live record arrives on an open stream, after the replay
    got: list[dict] = []

    def follow() -> None:
        with httpx.Client(base_url=str(client.base_url), timeout=30) as other:
            with other.stream("GET", f"/v1/instances/{instance_id}/stream",
                              headers={**bearer(keys["b/bob"]), "Last-Event-ID": str(seqs[-1])}) as response:
                for event in sse_events(response.iter_lines()):
                    got.append(event)
                    if event["event"] == "end":
                        return

    reader = threading.Thread(target=follow)
    reader.start()
    time.sleep(0.5)
    client.post(f"/v1/instances/{instance_id}/messages", json={"text": "bye"}, headers=bearer(keys["b/bob"]))
    reader.join(30)
    record_ids = [int(e["id"]) for e in got if e["event"] == "record"]
    assert record_ids and record_ids[0] == seqs[-1] + 1 and record_ids == sorted(set(record_ids))
    assert any(e["event"] == "reply.delta" for e in got) and got[-1]["event"] == "end"
    # an ended instance with nothing after the cursor: 204, so browsers stop reconnecting
    last = record_ids[-1]
    ended = client.get(f"/v1/instances/{instance_id}/stream", headers={**bearer(keys["b/bob"]), "Last-Event-ID": str(last)})
    assert ended.status_code == 204


@pytest.mark.parametrize("cursor", ["abc", "-2", "+1", "01", "1.5", "9" * 30])
def test_bad_cursors_are_400(client, keys, cursor) -> None:
    instance_id = start_chat(client, keys["b/bob"]) if cursor == "abc" else "x"
    assert_problem(client.get(f"/v1/instances/{instance_id}/stream",
                              headers={**bearer(keys["b/bob"]), "Last-Event-ID": cursor}), 400)


def test_a_message_to_an_instance_another_process_cancelled_is_refused_when_no_reply_comes(
        workflows_dir, tmp_path, model_server) -> None:
    """The hub does not see a cancel made by another process on the same store, so the message is
    sent; when no reply comes within the reply timeout, the route asks the store and answers 409
    with the status instead of 202 "running" (specs/service.md, "Chat")."""
    from dbos import DBOSClient

    from tests.service.support import ServiceProcess

    db_url = f"sqlite:///{tmp_path / 'store' / 'xflow.sqlite'}"
    service = ServiceProcess(workflows_dir, db_url, llm_api_base=model_server.api_base, auth="none",
                             extra=["--reply-timeout", "2"]).start()
    try:
        with httpx.Client(base_url=service.url, timeout=90) as client:
            started = client.post("/v1/workflows/chat/instances", json={"message": "hello"},
                                  headers={"Prefer": "wait=30"})
            assert started.status_code == 201 and started.json()["waiting_for"] == "message", started.text
            instance_id = started.json()["id"]
            first = client.post(f"/v1/instances/{instance_id}/messages", json={"text": "one"})
            assert first.status_code == 200, first.text  # the hub saw the agent answer
            outside = DBOSClient(system_database_url=db_url)
            try:
                outside.cancel_workflow(instance_id)
            finally:
                outside.destroy()
            problem = assert_problem(client.post(f"/v1/instances/{instance_id}/messages", json={"text": "two"}), 409)
            assert problem["instance_status"] == "cancelled"
            again = assert_problem(client.post(f"/v1/instances/{instance_id}/messages", json={"text": "three"}), 409)
            assert again["instance_status"] == "cancelled"  # from the store now, at once
    finally:
        service.stop()
