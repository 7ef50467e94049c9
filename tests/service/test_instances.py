"""Workflows and instances over HTTP: list and hot reload, start (idempotent, bounded wait,
input schema), get, list with filters and cursors, history, cancel, resume."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from tests.service.support import assert_problem, bearer

pytestmark = pytest.mark.slow


def test_workflows_are_listed_with_version_and_input_schema(client, keys) -> None:
    body = client.get("/v1/workflows", headers=bearer(keys["a"])).json()
    by_id = {w["id"]: w for w in body["items"]}
    assert set(by_id) >= {"chat", "approval", "signup", "greet"}
    assert by_id["greet"]["input_schema"]["required"] == ["name"]
    assert by_id["signup"]["start_events"] == [{"type": "user.signup", "source": "/accounts"}]
    assert_problem(client.get("/v1/workflows/nope", headers=bearer(keys["a"])), 404)


def test_a_changed_file_is_a_new_revision_and_running_instances_keep_theirs(client, keys, workflows_dir: Path) -> None:
    source = (workflows_dir / "approval.yaml").read_text()
    started = client.post("/v1/workflows/approval/instances", json={"order": "rev-1"}, headers=bearer(keys["a"]),
                          params={"correlation.orderid": "rev-1"})
    assert started.status_code == 201
    before = client.get("/v1/workflows/approval", headers=bearer(keys["a"])).json()
    (workflows_dir / "approval.yaml").write_text(source.replace("end: true", "stateDataFilter: {output: '${ {changed: true} }'}\n    end: true"))
    time.sleep(0.6)
    after = client.get("/v1/workflows/approval", headers=bearer(keys["a"])).json()
    assert after["revision"] == before["revision"] + 1 and after["sha256"] != before["sha256"]
    (workflows_dir / "broken.yaml").write_text("id: broken\nstates: [")
    time.sleep(0.6)
    listing = client.get("/v1/workflows", headers=bearer(keys["a"])).json()
    assert [e["file"] for e in listing["errors"]] == ["broken.yaml"]
    # the instance started before the change ends with the definition it started with
    event = {"specversion": "1.0", "id": "rev-1-ok", "source": "/approvals", "type": "order.approval",
             "orderid": "rev-1", "data": {"ok": True}}
    client.post("/v1/events", content=__import__("json").dumps(event),
                headers={**bearer(keys["a"]), "content-type": "application/cloudevents+json"})
    instance = _wait_status(client, keys["a"], started.json()["id"], "completed")
    assert instance["output"] == {"order": "rev-1", "decision": {"ok": True}}  # not {changed: true}
    (workflows_dir / "broken.yaml").unlink()
    (workflows_dir / "approval.yaml").write_text(source)
    time.sleep(0.6)  # files are looked at again at most every 0.5 s: later tests start the original
    assert client.get("/v1/workflows/approval", headers=bearer(keys["a"])).json()["revision"] == after["revision"] + 1


def test_start_get_and_bounded_wait(client, keys) -> None:
    response = client.post("/v1/workflows/greet/instances", json={"name": "Ann"},
                           headers={**bearer(keys["a"]), "Prefer": "wait=10"})
    assert response.status_code == 201, response.text
    body = response.json()
    assert response.headers["location"] == f"/v1/instances/{body['id']}"
    assert response.headers["preference-applied"] == "wait=10"
    assert body["status"] == "completed" and body["output"] == {"name": "Ann", "greeting": "hello"}
    again = client.get(f"/v1/instances/{body['id']}", headers=bearer(keys["a"])).json()
    assert again["output"] == body["output"] and again["workflow"] == "greet"


def test_the_input_schema_is_checked_before_anything_starts(client, keys) -> None:
    problem = assert_problem(client.post("/v1/workflows/greet/instances", json={"name": 5},
                                         headers=bearer(keys["a"])), 422)
    assert problem["errors"][0]["pointer"] == "#/name"


def test_an_idempotency_key_returns_the_same_instance(client, keys) -> None:
    headers = {**bearer(keys["a/ann"]), "Idempotency-Key": '"order-77"'}
    first = client.post("/v1/workflows/approval/instances", json={"order": "77"}, headers=headers)
    second = client.post("/v1/workflows/approval/instances", json={"order": "77"},
                         headers={**headers, "Idempotency-Key": "order-77"})  # bare token: same key
    assert first.status_code == 201 and second.status_code == 200
    assert second.headers["idempotent-replayed"] == "true" and first.json()["id"] == second.json()["id"]
    assert_problem(client.post("/v1/workflows/approval/instances", json={"order": "78"}, headers=headers), 422)
    # the same key from another user is another request
    other = client.post("/v1/workflows/approval/instances", json={"order": "77"},
                        headers={**bearer(keys["a/al"]), "Idempotency-Key": "order-77"})
    assert other.status_code == 201 and other.json()["id"] != first.json()["id"]
    assert_problem(client.post("/v1/workflows/approval/instances", json={},
                               headers={**bearer(keys["a"]), "Idempotency-Key": ""}), 400)


def test_list_filters_and_cursor_pages(client, keys) -> None:
    ids = [client.post("/v1/workflows/greet/instances", json={"name": str(i)}, headers=bearer(keys["b/bea"])).json()["id"]
           for i in range(5)]
    seen: list[str] = []
    cursor = None
    while True:
        params = {"workflow": "greet", "limit": 2, **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/instances", params=params, headers=bearer(keys["b/bea"])).json()
        seen += [item["id"] for item in page["items"]]
        assert all(item["workflow"] == "greet" and item["user"] == "bea" for item in page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids) and len(seen) == len(set(seen))  # no gap, no duplicate
    assert_problem(client.get("/v1/instances", params={"cursor": "garbage"}, headers=bearer(keys["b/bea"])), 400)
    # a cursor of one list is not valid for another filter (or caller)
    first = client.get("/v1/instances", params={"workflow": "greet", "limit": 1}, headers=bearer(keys["b/bea"])).json()
    assert_problem(client.get("/v1/instances", params={"cursor": first["next_cursor"]},
                              headers=bearer(keys["b/bea"])), 400)
    assert_problem(client.get("/v1/instances", params={"status": "weird"}, headers=bearer(keys["b/bea"])), 422)


def test_list_filters_by_user_and_start_time(client, keys) -> None:
    from datetime import datetime, timedelta, timezone

    before = datetime.now(timezone.utc) - timedelta(seconds=1)
    anns = {client.post("/v1/workflows/greet/instances", json={"name": "x"}, headers=bearer(keys["a/ann"])).json()["id"]
            for _ in range(2)}
    als = {client.post("/v1/workflows/greet/instances", json={"name": "y"}, headers=bearer(keys["a/al"])).json()["id"]}
    after = datetime.now(timezone.utc) + timedelta(seconds=1)

    def listed(params: dict, key: str = "a") -> set[str]:
        page = client.get("/v1/instances", params={"limit": 200, **params}, headers=bearer(keys[key]))
        assert page.status_code == 200, page.text
        return {item["id"] for item in page.json()["items"]}

    window = {"started_after": before.isoformat(), "started_before": after.isoformat()}
    # other tests of the module may start instances meanwhile: ours are in, nothing outside is
    assert anns | als <= listed(window)  # the service credential sees its tenant's instances of that window
    annes = listed({**window, "user": "ann"})
    assert anns <= annes and not als & annes
    assert listed({"started_after": after.isoformat()}) == set()
    # a user credential's own filter wins over the one it asks for
    assert als <= listed({**window, "user": "ann"}, key="a/al") and not anns & listed(window, key="a/al")
    assert_problem(client.get("/v1/instances", params={"started_after": "2026-11-26T09:00:00"},
                              headers=bearer(keys["a"])), 400)  # no zone: ambiguous
    assert_problem(client.get("/v1/instances", params={"started_after": "yesterday"}, headers=bearer(keys["a"])), 422)


def test_history_cancel_and_resume(client, keys) -> None:
    started = client.post("/v1/workflows/approval/instances", json={"order": "c-1"}, headers=bearer(keys["a"]),
                          params={"correlation.orderid": "c-1"}).json()
    instance_id = started["id"]
    history = client.get(f"/v1/instances/{instance_id}/history", headers=bearer(keys["a"])).json()
    assert history["items"][0]["event"] == "workflow_started"
    assert client.post(f"/v1/instances/{instance_id}/resume", headers=bearer(keys["a"])).status_code == 409
    assert client.post(f"/v1/instances/{instance_id}/cancel", headers=bearer(keys["a"])).status_code == 202
    _wait_status(client, keys["a"], instance_id, "cancelled")
    assert client.post(f"/v1/instances/{instance_id}/cancel", headers=bearer(keys["a"])).status_code == 200
    assert client.post(f"/v1/instances/{instance_id}/resume", headers=bearer(keys["a"])).status_code == 202
    _wait_status(client, keys["a"], instance_id, "running")
    event = {"specversion": "1.0", "id": "c-1-ok", "source": "/approvals", "type": "order.approval",
             "orderid": "c-1", "data": {"ok": True}}
    client.post("/v1/events", content=__import__("json").dumps(event),
                headers={**bearer(keys["a"]), "content-type": "application/cloudevents+json"})
    done = _wait_status(client, keys["a"], instance_id, "completed")
    assert done["output"] == {"order": "c-1", "decision": {"ok": True}}
    assert_problem(client.post(f"/v1/instances/{instance_id}/cancel", headers=bearer(keys["a"])), 409)


def _wait_status(client: httpx.Client, key: str, instance_id: str, status: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        body = client.get(f"/v1/instances/{instance_id}", headers=bearer(key)).json()
        if body["status"] == status or time.monotonic() > deadline:
            assert body["status"] == status, body
            return body
        time.sleep(0.1)
