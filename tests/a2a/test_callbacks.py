"""Push callbacks (specs/a2a.md §3): forged, replayed and late callbacks change nothing; the token
derivation and the body checks of :mod:`xflow_runtime.a2a.callbacks`."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given, settings, strategies as st

from tests.a2a.support import SECRET, ServiceProcess, eventually, history, service_token, view
from tests.service.support import assert_problem
from xflow_runtime.a2a.callbacks import CallbackRefused, call_token, secret_bytes, verify

KEY = secret_bytes(SECRET)


def _post(service: ServiceProcess, instance_id: str, call_id: str, body: Any, token: str | None) -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["X-A2A-Notification-Token"] = token
    return httpx.post(f"{service.url}/a2a/callbacks/{instance_id}/{call_id}", content=json.dumps(body),
                      headers=headers, timeout=30)


def _completed_claim(task_id: str) -> dict[str, Any]:
    return {"task": {"id": task_id, "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"},
                     "artifacts": [{"artifactId": "x", "parts": [{"data": {"answer": "FORGED", "n": 0}}]}]}}


def test_forged_replayed_and_late_callbacks_change_nothing(service: ServiceProcess) -> None:
    started = httpx.post(f"{service.url}/v1/workflows/ledger-push-slow-fallback/instances",
                         json={"request": "slow 3 genuine"}, headers=service_token())
    assert started.status_code == 201, started.text
    instance_id = started.json()["id"]
    task = eventually(lambda: next((r for r in history(service, instance_id) if r["event"] == "a2a_task"), None))
    call_id, task_id = task["call"], task["task_id"]

    # forged: no token, a wrong token, the token of another call or of another instance → 401
    for token in (None, "not-the-token", call_token(KEY, instance_id, "another-call"),
                  call_token(KEY, "another-instance", call_id), call_token(secret_bytes("x" * 40), instance_id, call_id)):
        assert_problem(_post(service, instance_id, call_id, _completed_claim(task_id), token), 401)
    # a body that is not one StreamResponse → 400, even with the right token
    good = call_token(KEY, instance_id, call_id)
    assert_problem(_post(service, instance_id, call_id, {"task": {}, "message": {}}, good), 400)
    # the right token with a lie about the outcome: it only wakes the wait, which asks the agent
    # (still working) and goes on waiting; sent twice (a replay), still nothing changes
    for _ in range(2):
        assert _post(service, instance_id, call_id, _completed_claim(task_id), good).status_code == 202
    # the right token naming another task: recorded as ignored
    assert _post(service, instance_id, call_id, _completed_claim("another-task"), good).status_code == 202
    eventually(lambda: any(r["event"] == "a2a_callback_ignored" for r in history(service, instance_id)))

    done = eventually(lambda: (v := view(service, instance_id))["status"] == "completed" and v)
    assert done["output"]["answer"] == {"answer": "genuine", "n": 42, "response": "echo: genuine"}
    records = history(service, instance_id)
    reads = [r for r in records if r["event"] == "a2a_task_read"]
    assert [r["status"] for r in reads][-1] == "completed"
    assert all(r["status"] in ("working", "completed") for r in reads)

    # late: the wait is over → 410, and the history does not grow
    assert_problem(_post(service, instance_id, call_id, _completed_claim(task_id), good), 410)
    assert len(history(service, instance_id)) == len(records)


def test_an_unknown_instance_is_404_and_nothing_is_delivered(service: ServiceProcess) -> None:
    body = _completed_claim("t")
    assert_problem(_post(service, "no-such-instance", "c", body, call_token(KEY, "no-such-instance", "c")), 404)


@settings(max_examples=200, deadline=None)
@given(instance=st.text(min_size=1, max_size=40), call=st.text(min_size=1, max_size=40),
       other=st.text(min_size=1, max_size=40))
def test_a_token_authenticates_exactly_one_call(instance: str, call: str, other: str) -> None:
    body = json.dumps({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_WORKING"}}}).encode()
    token = call_token(KEY, instance, call)
    assert verify(KEY, instance, call, {"x-a2a-notification-token": token}, body).task_id == "t"
    assert verify(KEY, instance, call, {"authorization": f"Bearer {token}"}, body).task_id == "t"
    if other != call:
        with pytest.raises(CallbackRefused) as refused:
            verify(KEY, instance, other, {"x-a2a-notification-token": token}, body)
        assert refused.value.status == 401


def test_the_same_delivery_has_the_same_idempotency_key_and_another_body_another() -> None:
    token = call_token(KEY, "i", "c")
    first = json.dumps({"task": {"id": "t", "status": {"state": "TASK_STATE_WORKING"}}}).encode()
    second = json.dumps({"task": {"id": "t", "status": {"state": "TASK_STATE_COMPLETED"}}}).encode()
    headers = {"x-a2a-notification-token": token}
    assert verify(KEY, "i", "c", headers, first).idempotency_key == verify(KEY, "i", "c", headers, first).idempotency_key
    assert verify(KEY, "i", "c", headers, first).idempotency_key != verify(KEY, "i", "c", headers, second).idempotency_key


def test_a_short_secret_is_refused() -> None:
    with pytest.raises(ValueError):
        secret_bytes("short")
